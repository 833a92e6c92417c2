package notify_test

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
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
	dsn   string
	now   time.Time
}

func newEnv(t *testing.T, dialect sqlstore.Dialect) *env {
	t.Helper()
	e := &env{now: time.Now().UTC(), dsn: sqlstoretest.DSN(t, dialect)}
	q, err := queue.Open(t.Context(), e.dsn, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	e.svc = &delivery.Service{Queue: q, DataDir: t.TempDir(), Now: func() time.Time { return e.now }}
	e.store = q.Store()
	return e
}

// server runs n as a server process does, on a queue of its own over the
// environment's database (a failed attempt is retried after 10 ms), until
// the test ends. It returns the jobs its workers finish.
func (e *env) server(t *testing.T, n *notify.Notifier) <-chan queue.Finished {
	t.Helper()
	q, err := queue.Open(t.Context(), e.dsn, queue.Config{ServerJobs: 2, FetchPollInterval: 20 * time.Millisecond,
		RetryAfter: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	if n.Store == nil {
		n.Store = q.Store()
	}
	finished, unsubscribe := q.Subscribe()
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() {
		done <- q.Run(ctx, queue.Handlers{Notice: n.Send,
			Review:   func(context.Context, queue.ReviewArgs, queue.Job) error { return errors.New("no reviews here") },
			Feedback: func(context.Context, queue.FeedbackArgs, queue.Job) error { return errors.New("no feedback here") },
			Webhook:  func(context.Context, queue.WebhookArgs, queue.Job) error { return errors.New("no webhooks here") }})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		unsubscribe()
		q.Close()
	})
	return finished
}

// await returns how the next n notice jobs' attempts ended, in order,
// until n jobs were completed or discarded: "failed" for an attempt
// River tries again.
func await(t *testing.T, finished <-chan queue.Finished, n int) []string {
	t.Helper()
	var states []string
	for ended := 0; ended < n; {
		select {
		case f := <-finished:
			if f.Kind != (queue.NoticeArgs{}).Kind() {
				continue
			}
			switch f.State {
			case "completed", "discarded":
				ended++
				states = append(states, f.State)
			default:
				states = append(states, "failed")
			}
		case <-time.After(30 * time.Second): // a bound on a broken queue, not a wait for success
			t.Fatalf("after 30 s the notice jobs went %v, want %d ended", states, n)
		}
	}
	return states
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
	t.Parallel()
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
	d := e.newDelivery(t)
	e.runPlan(t, d.ID)
	if _, err := e.svc.Decide(ctx, d.ID, delivery.ActClose, "alice", "not needed after all"); err != nil {
		t.Fatal(err)
	}
	finished := e.server(t, &notify.Notifier{Server: baton.Notify{WebhookURL: server.srv.URL, WebhookSecret: serverSecret}, PublicURL: public})
	if got := await(t, finished, 2); len(got) != 2 {
		t.Fatalf("notice jobs went %v, want the waiting and the closed notice sent at once", got)
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
		// Two notices are sent at once, in either order.
		slices.SortFunc(got, func(a, b received) int {
			return strings.Compare(a.header.Get(notify.EventHeader), b.header.Get(notify.EventHeader))
		})
		for i, want := range []string{delivery.NoticeClosed, delivery.NoticeWaiting} {
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
	for _, g := range got {
		if err := json.Unmarshal(g.body, &msg); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(msg.Text, "waits for you") {
			break
		}
	}
	want := "baton: <" + public + "/deliveries/" + d.ID + "|#1 GitHub Issue #12: &lt;Greet&gt; people &amp; friends> in octo/app waits for you at plan (succeeded)"
	if !strings.HasPrefix(msg.Text, want) {
		t.Errorf("Slack text = %q\nwant prefix   %q", msg.Text, want)
	}
	if left, err := e.store.NotificationIDs(ctx, ""); err != nil || len(left) != 0 {
		t.Errorf("notifications left = %v, %v; want none once sent", left, err)
	}
}

func flatten(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ","))
	}
	return out
}

// A target that fails fails the job's attempt, and River tries again:
// only it, as the one that took the notice gets it once. A target that
// never answers 2xx is given up after the job's attempts, and the log
// names its answer but not its URL.
func TestNotifyRetriesTheTargetThatFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	ctx := t.Context()
	flaky, steady := newReceiver(t, 2), newReceiver(t, 0)
	src := &baton.Source{ID: "s1", Repo: "octo/app", Label: "baton", CreatedAt: e.now, UpdatedAt: e.now, Notify: baton.Notify{WebhookURL: steady.srv.URL}}
	if err := e.store.CreateSource(ctx, src); err != nil {
		t.Fatal(err)
	}
	d := e.newDelivery(t)
	e.runPlan(t, d.ID)
	finished := e.server(t, &notify.Notifier{Server: baton.Notify{WebhookURL: flaky.srv.URL}})
	if got := strings.Join(await(t, finished, 1), " "); got != "failed failed completed" {
		t.Errorf("the notice job went %s, want two failed attempts, then sent", got)
	}
	if len(flaky.received()) != 1 || len(steady.received()) != 1 {
		t.Fatalf("deliveries: flaky %d, steady %d; want one each", len(flaky.received()), len(steady.received()))
	}
	var ids []string
	for _, r := range append(flaky.received(), steady.received()...) {
		ids = append(ids, r.header.Get(notify.IDHeader))
	}
	if ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("%s = %q: want the notice's id, the same on every target and retry", notify.IDHeader, ids)
	}

	// A target that never answers 2xx is given up.
	dead := newReceiver(t, 1000)
	logs := &strings.Builder{}
	var mu sync.Mutex
	e2 := newEnv(t, sqlstore.SQLite)
	d2 := e2.newDelivery(t)
	e2.runPlan(t, d2.ID)
	finished = e2.server(t, &notify.Notifier{Server: baton.Notify{WebhookURL: dead.srv.URL}, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, nil))})
	got := await(t, finished, 1)
	if want := (queue.NoticeArgs{}).InsertOpts().MaxAttempts; len(got) != want || got[want-1] != "discarded" {
		t.Errorf("the notice job went %v, want %d attempts, the last discarded", got, want)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "gave up on delivery.waiting") || !strings.Contains(log, "answered 500") || strings.Contains(log, dead.srv.URL) {
		t.Errorf("the log does not say it gave up, and why, without the URL:\n%s", log)
	}
	if left, _ := e2.store.NotificationIDs(ctx, ""); len(left) != 0 {
		t.Errorf("a notice given up is still stored: %v", left)
	}
}

// lockedWriter serializes writes to a log the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Two servers on one database send each notice to each target once.
func TestNotifyOnceAcrossServers(t *testing.T) {
	t.Parallel()
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
	a := e.server(t, &notify.Notifier{Server: baton.Notify{WebhookURL: r.srv.URL}})
	b := e.server(t, &notify.Notifier{Server: baton.Notify{WebhookURL: r.srv.URL}})
	for sent := 0; sent < 5; {
		select {
		case f := <-a:
			sent += btoi(f.State == "completed")
		case f := <-b:
			sent += btoi(f.State == "completed")
		case <-time.After(30 * time.Second): // a bound on a broken queue, not a wait for success
			t.Fatalf("after 30 s two servers sent %d of 5 notices", sent)
		}
	}
	if got := len(r.received()); got != 5 {
		t.Errorf("the receiver got %d notices from two servers, want 5", got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
