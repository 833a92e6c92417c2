package intake_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

const issuesRoute = "GET /repos/octo/app/issues"

// env is intake on a real SQLite database, talking to githubtest through
// a pass-through proxy that can fail chosen pages.
type env struct {
	t    *testing.T
	gh   *githubtest.Server
	in   *intake.Service
	svc  *delivery.Service
	now  atomic.Pointer[time.Time]
	fail atomic.Value // string: a page number whose requests get 502
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, sqlstore.SQLite)
}

func newEnvOn(t *testing.T, dialect sqlstore.Dialect) *env {
	t.Helper()
	e := &env{t: t, gh: githubtest.NewServer(t)}
	e.fail.Store("")
	now := time.Now().UTC()
	e.now.Store(&now)
	target, _ := url.Parse(strings.TrimSuffix(e.gh.URL(), "/"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := e.fail.Load().(string); p != "" && r.URL.Query().Get("page") == p {
			http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	q, err := queue.Open(t.Context(), sqlstoretest.DSN(t, dialect), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	e.svc = &delivery.Service{Queue: q, DataDir: t.TempDir(), DefaultAgent: "command:true"}
	e.in = &intake.Service{
		Deliveries: e.svc, WebhookSecret: "whsec",
		Now: func() time.Time { return *e.now.Load() },
		GitHub: func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
			return github.New(github.Options{BaseURL: front.URL + "/", Token: "test-token"})
		},
	}
	return e
}

func (e *env) advance(d time.Duration) {
	n := e.now.Load().Add(d)
	e.now.Store(&n)
}

func (e *env) addSource() *baton.Source {
	e.t.Helper()
	src, err := e.in.Add(e.t.Context(), intake.SourceInput{Repo: "octo/app"})
	if err != nil {
		e.t.Fatal(err)
	}
	return src
}

func (e *env) sync(src *baton.Source) (*baton.Source, error) {
	e.t.Helper()
	return e.in.Sync(e.t.Context(), src.ID)
}

// open returns the issue numbers of the deliveries that are not closed,
// and how many deliveries there are.
func (e *env) deliveries() (open map[string]bool, total int) {
	e.t.Helper()
	ds, err := e.svc.List(e.t.Context(), baton.DeliveryFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	open = map[string]bool{}
	for _, d := range ds {
		if d.Phase != baton.PhaseClose {
			open[d.Refs[0].Label] = true
		}
	}
	return open, len(ds)
}

func (e *env) addIssues(n int, labels ...string) {
	for range n {
		e.gh.AddIssue("octo/app", githubtest.Issue{Labels: labels})
	}
}

// Every page is read: 230 labelled issues are three pages of 100, and
// unlabelled issues and pull requests never become deliveries.
func TestSyncReadsEveryPage(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { syncReadsEveryPage(t, newEnvOn(t, dialect)) })
	}
}

func syncReadsEveryPage(t *testing.T, e *env) {
	e.addIssues(230, "baton")
	e.addIssues(5, "bug")
	e.gh.AddPullRequest("octo/app", githubtest.PullRequest{Title: "a labelled PR", Labels: []string{"baton"}})
	src := e.addSource()
	got, err := e.sync(src)
	if err != nil {
		t.Fatal(err)
	}
	r := got.Sync.Result
	if r.Open != 230 || r.Created != 230 || r.Requests != 3 || got.Sync.Error != "" || got.Sync.LastOKAt.IsZero() {
		t.Errorf("sync result %+v, error %q", r, got.Sync.Error)
	}
	if open, total := e.deliveries(); total != 230 || len(open) != 230 || !open["octo/app#1"] || !open["octo/app#230"] {
		t.Errorf("%d deliveries, %d open", total, len(open))
	}
	if n := e.gh.Count(issuesRoute); n != 3 {
		t.Errorf("%d listing requests, want 3", n)
	}
}

// A second sync sends each page's ETag; GitHub's 304s stand for the
// cached pages and nothing is created twice. A changed page is read
// again.
func TestSyncUsesETags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addIssues(150, "baton")
	src := e.addSource()
	if _, err := e.sync(src); err != nil {
		t.Fatal(err)
	}
	got, err := e.sync(src)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Sync.Result; r.Requests != 2 || r.NotModified != 2 || r.Open != 150 || r.Created != 0 || r.Closed != 0 {
		t.Errorf("unchanged sync: %+v", r)
	}
	var conditional int
	for _, r := range e.gh.Requests() {
		if r.Header.Get("If-None-Match") != "" {
			conditional++
		}
	}
	if conditional != 2 {
		t.Errorf("%d conditional requests, want 2", conditional)
	}
	e.addIssues(1, "baton") // newest first: page 1 changes, and so does page 2
	got, err = e.sync(src)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Sync.Result; r.Open != 151 || r.Created != 1 || r.NotModified != 0 {
		t.Errorf("sync after a new issue: %+v", r)
	}
	if _, total := e.deliveries(); total != 151 {
		t.Errorf("%d deliveries, want 151", total)
	}
}

// A primary rate limit holds the source (and every source on the host)
// until GitHub's reset time, without another request; after it, the
// sync goes through.
func TestSyncBacksOffOnRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addIssues(3, "baton")
	src := e.addSource()
	reset := e.now.Load().Add(30 * time.Minute).Truncate(time.Second)
	e.gh.Fail(issuesRoute, githubtest.RateLimited(reset))
	got, err := e.sync(src)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || baton.ErrorCode(err) != baton.Unavailable {
		t.Fatalf("sync under a rate limit: %v (%T)", err, err)
	}
	if !got.Sync.RateLimitReset.Equal(reset) || got.Sync.Error == "" {
		t.Errorf("sync status %+v, want the reset %s", got.Sync, reset)
	}
	e.gh.ClearFailures()
	before := e.gh.Count(issuesRoute)
	e.advance(10 * time.Minute)
	if _, err := e.sync(src); err == nil {
		t.Error("sync before the reset went through")
	}
	if n := e.gh.Count(issuesRoute); n != before {
		t.Errorf("sync before the reset sent %d requests", n-before)
	}
	if stored, _ := e.in.Get(t.Context(), src.ID); !stored.Sync.RateLimitReset.Equal(reset) {
		t.Errorf("stored reset %s, want %s", stored.Sync.RateLimitReset, reset)
	}
	e.advance(21 * time.Minute)
	got, err = e.sync(src)
	if err != nil || got.Sync.Result.Created != 3 || !got.Sync.RateLimitReset.IsZero() || got.Sync.Error != "" {
		t.Errorf("sync after the reset: %v, %+v", err, got.Sync)
	}
}

// A listing that fails part way is no listing: no delivery is closed
// because its issue was not seen. The next full listing closes exactly
// the issue that was closed.
func TestPartialListingClosesNothing(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { partialListingClosesNothing(t, newEnvOn(t, dialect)) })
	}
}

func partialListingClosesNothing(t *testing.T, e *env) {
	e.addIssues(150, "baton")
	src := e.addSource()
	if _, err := e.sync(src); err != nil {
		t.Fatal(err)
	}
	e.gh.UpdateIssue("octo/app", 1, func(is *githubtest.Issue) { is.State = "closed" })
	e.gh.UpdateIssue("octo/app", 2, func(is *githubtest.Issue) { is.Labels = nil })
	e.fail.Store("2") // issues 50..1 are on page 2
	got, err := e.sync(src)
	if err == nil || got.Sync.Error == "" {
		t.Fatalf("sync with a failing page 2: %v, status %+v", err, got.Sync)
	}
	if open, total := e.deliveries(); total != 150 || len(open) != 150 {
		t.Fatalf("after a partial listing: %d deliveries, %d open; want all 150 open", total, len(open))
	}
	e.fail.Store("")
	got, err = e.sync(src)
	if err != nil || got.Sync.Result.Closed != 2 || got.Sync.Result.Open != 148 {
		t.Fatalf("full sync: %v, %+v", err, got.Sync.Result)
	}
	open, _ := e.deliveries()
	if len(open) != 148 || open["octo/app#1"] || open["octo/app#2"] || !open["octo/app#3"] {
		t.Errorf("open after the full listing: %d (#1 %v, #2 %v, #3 %v)", len(open), open["octo/app#1"], open["octo/app#2"], open["octo/app#3"])
	}
}

// The same issue brought in by two syncs, a webhook and a direct create
// is one delivery.
func TestSameIssueIsOneDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addIssues(1, "baton")
	src := e.addSource()
	for range 2 {
		if _, err := e.sync(src); err != nil {
			t.Fatal(err)
		}
	}
	res := e.webhook("issues", issueEvent("opened", 1, "open", "", "baton"))
	if res.Outcome != "exists" {
		t.Errorf("webhook for a synced issue: %+v", res)
	}
	d, created, err := e.svc.Create(t.Context(), delivery.Request{IssueURL: "https://github.com/octo/app/issues/1", Summary: "by hand"})
	if err != nil {
		t.Fatal(err)
	}
	if created || d.ID != res.DeliveryID {
		t.Errorf("create from the same issue: created %v, %v, id %s vs %s", created, err, d.ID, res.DeliveryID)
	}
	if _, total := e.deliveries(); total != 1 {
		t.Errorf("%d deliveries, want 1", total)
	}
}

// firstAttempt is a job's first of ten attempts.
var firstAttempt = queue.Job{ID: 1, Attempt: 1, MaxAttempts: 10}

// webhook sends a signed webhook and, as a server's jobs then do, handles
// it and the feedback it queues, returning what became of it.
func (e *env) webhook(event, body string) intake.WebhookResult {
	e.t.Helper()
	res, err := e.in.Webhook(e.t.Context(), intake.WebhookRequest{Event: event, Signature: intake.Sign("whsec", []byte(body)), Body: []byte(body)})
	if err != nil {
		e.t.Fatalf("webhook %s: %v", body, err)
	}
	if res.Outcome != "queued" {
		return res
	}
	if res, err = e.in.HandleWebhook(e.t.Context(), queue.WebhookArgs{ID: res.ID}, firstAttempt); err != nil {
		e.t.Fatalf("handle webhook %s: %v", body, err)
	}
	if res.Outcome != "queued" {
		return res
	}
	fr := e.workFeedback()
	if len(fr) != 1 {
		e.t.Fatalf("a comment webhook queued %d pieces of feedback, want 1", len(fr))
	}
	return intake.WebhookResult{Outcome: fr[0].Outcome, Reason: fr[0].Reason, SourceID: res.SourceID, DeliveryID: fr[0].DeliveryID}
}

// workFeedback works the queued feedback jobs as a server does, oldest
// first, and returns what each did.
func (e *env) workFeedback() []intake.FeedbackResult {
	e.t.Helper()
	list, err := e.svc.Store().FeedbackOf(e.t.Context(), sqlstore.FeedbackQueued)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []intake.FeedbackResult
	for _, fb := range list {
		res, err := e.in.HandleFeedback(e.t.Context(), queue.FeedbackArgs{Repo: fb.Repo, CommentKind: fb.Kind, CommentID: fb.ID}, firstAttempt)
		if err != nil {
			e.t.Fatalf("feedback %s: %v", fb.URL, err)
		}
		out = append(out, res)
	}
	return out
}

var eventSeq atomic.Int64

func issueEvent(action string, n int, state, label string, labels ...string) string {
	var ls []string
	for _, l := range labels {
		ls = append(ls, fmt.Sprintf(`{"name":%q}`, l))
	}
	lab := ""
	if label != "" {
		lab = fmt.Sprintf(`"label":{"name":%q},`, label)
	}
	// Each event GitHub sends differs, if only in updated_at; a body sent
	// twice is a replay.
	return fmt.Sprintf(`{"action":%q,%s"repository":{"full_name":"octo/app","html_url":"https://github.com/octo/app"},`+
		`"issue":{"number":%d,"title":"Issue %d","state":%q,"html_url":"https://github.com/octo/app/issues/%d","labels":[%s],"updated_at":"%d"}}`,
		action, lab, n, n, state, n, strings.Join(ls, ","), eventSeq.Add(1))
}

// Webhooks: labelled brings an issue in, another label or a repeat
// changes nothing, unlabelled and closed close its delivery. Close is
// final: labelling or reopening the issue again finds the closed
// delivery and says so.
func TestWebhookIssueEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addSource()
	phase := func(id string) baton.Phase {
		d, err := e.svc.Current(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return d.Phase
	}
	steps := []struct {
		event, body, outcome string
		wantOpen             bool
		reason               string
	}{
		{"issues", issueEvent("labeled", 7, "open", "bug", "bug"), "ignored", false, ""},
		{"issues", issueEvent("labeled", 7, "open", "baton", "bug", "baton"), "created", true, ""},
		{"issues", issueEvent("labeled", 7, "open", "baton", "baton"), "exists", true, ""},
		{"issues", issueEvent("unlabeled", 7, "open", "bug", "baton"), "ignored", true, ""},
		{"issue_comment", issueEvent("created", 7, "open", "", "baton"), "ignored", true, ""},
		{"issues", issueEvent("unlabeled", 7, "open", "baton"), "closed", false, ""},
		{"issues", issueEvent("labeled", 7, "open", "baton", "baton"), "exists", false, "is closed"},
		{"issues", issueEvent("closed", 7, "closed", "", "baton"), "ignored", false, "was closed"},
		{"issues", issueEvent("reopened", 7, "open", "", "baton"), "exists", false, "is closed"},
		{"issues", issueEvent("labeled", 8, "open", "baton", "baton"), "created", true, ""},
		{"issues", issueEvent("closed", 8, "closed", "", "baton"), "closed", false, "was closed"},
	}
	id := ""
	for i, s := range steps {
		res := e.webhook(s.event, s.body)
		if res.Outcome != s.outcome || !strings.Contains(res.Reason, s.reason) {
			t.Fatalf("step %d (%s): %+v, want %s", i, s.body, res, s.outcome)
		}
		if res.DeliveryID != "" {
			if id != "" && res.DeliveryID != id && !strings.Contains(s.body, `"number":8`) {
				t.Fatalf("step %d: delivery %s, want %s", i, res.DeliveryID, id)
			}
			id = res.DeliveryID
		}
		if id == "" {
			continue
		}
		if open := phase(id) != baton.PhaseClose; open != s.wantOpen {
			t.Fatalf("step %d (%s %s): delivery open = %v, want %v", i, s.event, s.body, open, s.wantOpen)
		}
	}
}

// A secondary rate limit (429 with Retry-After) holds the source too.
func TestSyncBacksOffOnSecondaryRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addIssues(1, "baton")
	src := e.addSource()
	e.gh.Fail(issuesRoute, githubtest.TooManyRequests(2*time.Minute))
	got, err := e.sync(src)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || got.Sync.RateLimitReset.IsZero() {
		t.Fatalf("sync under a secondary rate limit: %v (%T), status %+v", err, err, got.Sync)
	}
	e.gh.ClearFailures()
	before := e.gh.Count(issuesRoute)
	if _, err := e.sync(src); err == nil || e.gh.Count(issuesRoute) != before {
		t.Errorf("sync within Retry-After: %v, %d requests", err, e.gh.Count(issuesRoute)-before)
	}
	e.advance(3 * time.Minute)
	if got, err := e.sync(src); err != nil || got.Sync.Result.Created != 1 {
		t.Errorf("sync after Retry-After: %v, %+v", err, got.Sync)
	}
}

// A secondary rate limit without retry-after holds the host a minute,
// not until the primary reset its x-ratelimit-reset names (an hour away
// here), and longer on each repeat: 1, 2, 4 minutes. A complete read
// starts over.
func TestSecondaryLimitWithoutRetryAfterWaitsAMinuteGrowing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addIssues(1, "baton")
	src := e.addSource()
	e.gh.Fail(issuesRoute, githubtest.SecondaryRateLimitNoRetryAfter())
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		now := *e.now.Load()
		got, err := e.sync(src)
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || !rl.Secondary {
			t.Fatalf("sync %d under a secondary limit: %v", i+1, err)
		}
		if wait := got.Sync.RateLimitReset.Sub(now); wait < want-time.Second || wait > want+time.Second {
			t.Fatalf("sync %d: the host is held %s, want %s", i+1, wait, want)
		}
		// What the log and the source's status say is the hold, not
		// GitHub's minute.
		for what, msg := range map[string]string{"the error": baton.ErrorMessage(err), "the sync status": got.Sync.Error} {
			if !strings.Contains(msg, "("+want.String()) {
				t.Errorf("sync %d: %s says %q, want the hold of %s", i+1, what, msg, want)
			}
		}
		e.advance(want + time.Second)
	}
	e.gh.ClearFailures()
	if got, err := e.sync(src); err != nil || got.Sync.Result.Created != 1 {
		t.Fatalf("sync after the waits: %v, %+v", err, got.Sync)
	}
	e.gh.Fail(issuesRoute, githubtest.SecondaryRateLimitNoRetryAfter())
	now := *e.now.Load()
	got, _ := e.sync(src)
	if wait := got.Sync.RateLimitReset.Sub(now); wait > time.Minute+time.Second {
		t.Errorf("after a complete read the next limit holds the host %s, want a minute again", wait)
	}
}
