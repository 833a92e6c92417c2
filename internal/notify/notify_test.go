package notify_test

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/notify"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// receiver is a loopback webhook endpoint that records what it gets and
// fails the first failFirst requests with 500.
type receiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	got       []received
	failFirst int
	seen      int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	t.Helper()
	r := &receiver{failFirst: failFirst}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen++
		if r.seen <= r.failFirst {
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		}
		r.got = append(r.got, received{req.Header.Clone(), b})
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

const (
	serverSecret = "server-hmac-secret-0000"
	sourceSecret = "source-hmac-secret-0000"
	public       = "https://baton.example.com"
)

type env struct {
	svc   *delivery.Service
	store *sqlstore.Store
	now   time.Time
}

func newEnv(t *testing.T, dialect sqlstore.Dialect) *env {
	t.Helper()
	q, err := queue.Open(t.Context(), sqlstoretest.DSN(t, dialect), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	e := &env{now: time.Now().UTC()}
	e.svc = &delivery.Service{Queue: q, DataDir: t.TempDir(), Now: func() time.Time { return e.now }}
	e.store = q.Store()
	return e
}

// newDelivery makes a delivery of octo/app whose plan waits for a person
// once it ran.
func (e *env) newDelivery(t *testing.T) *baton.Delivery {
	t.Helper()
	url := "https://github.com/octo/app/issues/12"
	d, _, err := e.svc.Insert(t.Context(), baton.Delivery{
		ID: baton.DeliveryID("octo/app", url), Summary: "GitHub Issue #12: <Greet> people & friends\n\nmore", Repository: "octo/app",
		Forge: baton.ForgeGitHub, Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhasePlan},
		Refs:   []baton.Ref{{Role: baton.RoleRequest, Type: "github_issue", Label: "octo/app#12", URL: url}},
		Config: baton.DeliveryConfig{Agent: "command:true", MaxRounds: 5},
	}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runPlan runs the queued plan to success: it then waits for a person.
func (e *env) runPlan(t *testing.T, id string) {
	t.Helper()
	d, err := e.svc.Act(t.Context(), id, delivery.Input{Action: delivery.ActRun, Actor: "worker:test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Act(t.Context(), id, delivery.Input{Action: delivery.ActForward, Actor: "worker:test", Attempt: d.Attempt, Note: "planned"}); err != nil {
		t.Fatal(err)
	}
}

// A delivery that waits for a person, then closes, notifies the server's
// webhook, the source's webhook and the source's Slack once each per
// event: signed JSON bodies with a link to the delivery's page, a line of
// Slack text, and no secret anywhere.
func TestNotifyWaitingAndClosed(t *testing.T) {
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { notifyWaitingAndClosed(t, dialect) })
	}
}

func notifyWaitingAndClosed(t *testing.T, dialect sqlstore.Dialect) {
	e := newEnv(t, dialect)
	server, source, slack := newReceiver(t, 0), newReceiver(t, 0), newReceiver(t, 0)
	ctx := t.Context()
	src := &baton.Source{ID: "s1", Repo: "octo/app", Label: "baton", CreatedAt: e.now, UpdatedAt: e.now,
		Notify: baton.Notify{WebhookURL: source.srv.URL + "/hook", WebhookSecret: sourceSecret, SlackURL: slack.srv.URL + "/services/T0/B0/secretpart"}}
	if err := e.store.CreateSource(ctx, src); err != nil {
		t.Fatal(err)
	}
	n := &notify.Notifier{Store: e.store, Server: baton.Notify{WebhookURL: server.srv.URL, WebhookSecret: serverSecret}, PublicURL: public}
	d := e.newDelivery(t)
	e.runPlan(t, d.ID)
	if _, err := e.svc.Decide(ctx, d.ID, delivery.ActClose, "alice", "not needed after all"); err != nil {
		t.Fatal(err)
	}
	if got, err := n.SendDue(ctx); err != nil || got != 2 {
		t.Fatalf("SendDue = %d, %v; want the waiting and the closed notice", got, err)
	}
	for name, r := range map[string]*receiver{"server": server, "source": source} {
		got := r.received()
		if len(got) != 2 {
			t.Fatalf("%s webhook got %d requests, want 2", name, len(got))
		}
		secret := serverSecret
		if name == "source" {
			secret = sourceSecret
		}
		for i, want := range []string{delivery.NoticeWaiting, delivery.NoticeClosed} {
			rq := got[i]
			if !hmac.Equal([]byte(rq.header.Get(notify.SignatureHeader)), []byte(notify.Sign(secret, rq.body))) {
				t.Errorf("%s webhook %d: signature %q does not match the body", name, i, rq.header.Get(notify.SignatureHeader))
			}
			var notice delivery.Notice
			if err := json.Unmarshal(rq.body, &notice); err != nil {
				t.Fatal(err)
			}
			if notice.Event != want || rq.header.Get(notify.EventHeader) != want || notice.Delivery.ID != d.ID ||
				notice.Delivery.URL != public+"/deliveries/"+d.ID || notice.Delivery.IssueURL != "https://github.com/octo/app/issues/12" {
				t.Errorf("%s webhook %d = %+v", name, i, notice)
			}
			all := string(rq.body) + strings.Join(flatten(rq.header), "\n")
			for _, secret := range []string{serverSecret, sourceSecret, "secretpart"} {
				if strings.Contains(all, secret) {
					t.Errorf("%s webhook %d carries a secret", name, i)
				}
			}
		}
	}
	got := slack.received()
	if len(got) != 2 {
		t.Fatalf("Slack got %d messages, want 2", len(got))
	}
	var msg struct{ Text string }
	if err := json.Unmarshal(got[0].body, &msg); err != nil {
		t.Fatal(err)
	}
	want := "baton: <" + public + "/deliveries/" + d.ID + "|#1 GitHub Issue #12: &lt;Greet&gt; people &amp; friends> in octo/app waits for you at plan (succeeded)"
	if !strings.HasPrefix(msg.Text, want) {
		t.Errorf("Slack text = %q\nwant prefix   %q", msg.Text, want)
	}
	if got, _ := n.SendDue(ctx); got != 0 {
		t.Errorf("a second SendDue handled %d, want nothing left", got)
	}
}

func flatten(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ","))
	}
	return out
}

// A target that fails is tried again after Backoff, and only it: the one
// that took the notice gets it once. After MaxAttempts it is given up.
func TestNotifyRetriesWithBackoff(t *testing.T) {
	e := newEnv(t, sqlstore.SQLite)
	ctx := t.Context()
	flaky, steady := newReceiver(t, 2), newReceiver(t, 0)
	src := &baton.Source{ID: "s1", Repo: "octo/app", Label: "baton", CreatedAt: e.now, UpdatedAt: e.now, Notify: baton.Notify{WebhookURL: steady.srv.URL}}
	if err := e.store.CreateSource(ctx, src); err != nil {
		t.Fatal(err)
	}
	clock := e.now
	var waits []time.Duration
	n := &notify.Notifier{Store: e.store, Server: baton.Notify{WebhookURL: flaky.srv.URL}, Now: func() time.Time { return clock },
		Backoff: func(a int) time.Duration { w := notify.Backoff(a); waits = append(waits, w); return w }}
	d := e.newDelivery(t)
	e.runPlan(t, d.ID)
	for i := range 3 {
		if _, err := n.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			// Not due before its backoff ends.
			if got, _ := n.SendDue(ctx); got != 0 {
				t.Fatalf("attempt %d: sent again before the backoff", i+1)
			}
			clock = clock.Add(notify.Backoff(i + 1))
		}
	}
	if len(flaky.received()) != 1 || len(steady.received()) != 1 {
		t.Fatalf("deliveries: flaky %d, steady %d; want one each", len(flaky.received()), len(steady.received()))
	}
	if want := []time.Duration{10 * time.Second, 30 * time.Second}; len(waits) != 2 || waits[0] != want[0] || waits[1] != want[1] {
		t.Errorf("backoff waits = %v, want %v", waits, want)
	}
	list, _ := e.store.Notifications(ctx, d.ID)
	if len(list) != 1 || list[0].State != sqlstore.NotificationSent || list[0].Attempts != 3 {
		t.Errorf("notifications = %+v, want one sent after 3 attempts", list)
	}

	// A target that never answers 2xx is given up after MaxAttempts.
	dead := newReceiver(t, 1000)
	n = &notify.Notifier{Store: e.store, Server: baton.Notify{WebhookURL: dead.srv.URL}, Now: func() time.Time { return clock }, MaxAttempts: 3}
	if _, err := e.svc.Decide(ctx, d.ID, delivery.ActClose, "alice", ""); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := n.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Hour)
	}
	list, _ = e.store.Notifications(ctx, d.ID)
	if last := list[len(list)-1]; last.State != sqlstore.NotificationFailed || last.Attempts != 3 || !strings.Contains(last.LastError, "answered 500") ||
		strings.Contains(last.LastError, dead.srv.URL) {
		t.Errorf("last notification = %+v, want failed after 3 attempts, naming the answer but not the URL", last)
	}
}

// Two notifiers on one database send each notice to each target once.
func TestNotifyOnceAcrossServers(t *testing.T) {
	e := newEnv(t, sqlstore.SQLite)
	r := newReceiver(t, 0)
	for range 5 {
		d, _, err := e.svc.Insert(t.Context(), baton.Delivery{
			ID: baton.DeliveryID("/src/app", time.Now().String()), Summary: "s", Repository: "/src/app", Forge: baton.ForgeLocal,
			Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhasePlan}, Config: baton.DeliveryConfig{Agent: "command:true"},
		}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		e.runPlan(t, d.ID)
	}
	var wg sync.WaitGroup
	for range 2 {
		n := &notify.Notifier{Store: e.store, Server: baton.Notify{WebhookURL: r.srv.URL}}
		wg.Go(func() {
			if _, err := n.SendDue(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := len(r.received()); got != 5 {
		t.Errorf("the receiver got %d notices from two notifiers, want 5", got)
	}
}

func TestCheckURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://hooks.slack.com/services/T/B/x": true, "http://127.0.0.1:9/x": true,
		"ftp://x": false, "https://user:pw@x.example/": false, "hooks.slack.com/x": false, "": false,
	} {
		err := notify.CheckURL("the target", u)
		if (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", u, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("CheckURL repeats the URL: %v", err)
		}
	}
}

// Whatever a delivery's title, repository or reason say, a Slack message
// has no markup of their making: no link, mention (<!channel>) or user
// reference but the one link to the delivery's page.
func FuzzSlackText(f *testing.F) {
	f.Add("Fix <!channel> & <@U123>", "octo/app", "because <https://evil.example|click>", true)
	f.Add("plain", "o/r", "", false)
	f.Fuzz(func(t *testing.T, title, repo, reason string, link bool) {
		n := delivery.Notice{Event: delivery.NoticeWaiting, Reason: reason, Delivery: delivery.NoticeDelivery{Seq: 3, Title: title, Repository: repo, Phase: "deploy", Status: "pending"}}
		want := 0
		if link {
			n.Delivery.URL = public + "/deliveries/abc"
			want = 1
		}
		text := notify.SlackText(n)
		if got := strings.Count(text, "<"); got != want || strings.Count(text, ">") != want {
			t.Fatalf("SlackText(%q, %q, %q) = %q: %d markup openings, want %d", title, repo, reason, text, got, want)
		}
	})
}
