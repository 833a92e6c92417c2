package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// A server's jobs survive the server: `baton serve` killed with SIGKILL
// between taking a job and recording its end leaves it running in River's
// table; the next server takes it over once its process is taken for
// gone (--rescue-after, and River's leader lease of about 15 s), and the
// job completes, once. One test per kind, each on SQLite and, when
// BATON_TEST_POSTGRES_URL is set, PostgreSQL; phases have theirs
// (TestWorkerProcessesOnPostgresSurviveAKill).

// crashEnv is a database and what a server on it needs.
type crashEnv struct {
	t     *testing.T
	env   []string
	repo  string
	dsn   string
	q     *queue.Queue // the test's own look at the database
	serve []string     // serve's arguments
}

func newCrashEnv(t *testing.T, dialect sqlstore.Dialect, extra ...string) *crashEnv {
	t.Helper()
	home, data := t.TempDir(), t.TempDir()
	e := &crashEnv{t: t, dsn: sqlstoretest.DSN(t, dialect)}
	if dialect == sqlstore.SQLite {
		e.dsn = filepath.Join(data, "baton.db")
	}
	e.env = ghEnv(home, append([]string{"BATON_DATA_DIR=" + data, "BATON_DATABASE_URL=" + e.dsn, "BATON_AGENT=command:true",
		"BATON_WEBHOOK_SECRET=whsec", "GH_TOKEN=ghp_crash_test_token_000000000000000"}, extra...)...)
	e.repo = userRepo(t, e.env)
	q, err := queue.Open(t.Context(), e.dsn, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	e.q = q
	// Jobs of a dead server are run again 4 s after they started; the
	// server's jobs are then cut off at 2 s.
	e.serve = []string{"--addr", "127.0.0.1:0", "--workers", "0", "--rescue-after", "4s", "--poll", "50ms"}
	return e
}

func (e *crashEnv) start(args ...string) (*serveProc, string) {
	e.t.Helper()
	return startServe(e.t, e.env, e.repo, append(append([]string{}, e.serve...), args...)...)
}

// kill sends SIGKILL: nothing of the server runs after it.
func (e *crashEnv) kill(s *serveProc) {
	e.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		e.t.Fatal(err)
	}
	<-s.done
}

func (e *crashEnv) run(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Dir, cmd.Env = e.repo, e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (e *crashEnv) jobs(kind string) map[string]int {
	e.t.Helper()
	got, err := e.q.JobCounts(context.Background(), kind)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// await waits until cond holds: the servers under test are other
// processes, whose jobs' ends reach the test through the database only,
// so there is nothing to wake on but the poll.
func (e *crashEnv) await(what string, within time.Duration, cond func() bool, logs func() string) {
	e.t.Helper()
	if !testenv.Until(within, nil, cond) {
		e.t.Fatalf("after %s, %s has not happened\n%s", within, what, logs())
	}
}

func forDialects(t *testing.T, fn func(t *testing.T, d sqlstore.Dialect)) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: kills and restarts baton serve, and waits out River's leader lease")
	}
	for _, d := range sqlstoretest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// A notice in flight, its target holding the request when the server is
// killed: the next server sends it, and the target takes it once.
func TestKilledServerFinishesItsNotice(t *testing.T) {
	forDialects(t, func(t *testing.T, d sqlstore.Dialect) {
		var mu sync.Mutex
		held, answered := 0, 0
		arrived := make(chan struct{})
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			first := held == 0
			if first {
				held++
				close(arrived)
			}
			mu.Unlock()
			if first {
				<-r.Context().Done() // held until the server that sent it dies
				return
			}
			mu.Lock()
			answered++
			mu.Unlock()
		}))
		t.Cleanup(recv.Close)
		e := newCrashEnv(t, d)
		e.serve = append(e.serve, "--notify-webhook", recv.URL+"/hook")
		s, _ := e.start()
		e.run("delivery", "create", "--repo", ".", "--summary", "Add a health endpoint")
		e.run("delivery", "close", "1", "--reason", "not needed")
		select {
		case <-arrived:
		case <-time.After(30 * time.Second): // a bound on a broken server, not a wait for success
			t.Fatalf("no notice reached the target\n%s", s.output())
		}
		kind := queue.NoticeArgs{}.Kind()
		if got := e.jobs(kind); got["running"] != 1 {
			t.Fatalf("notice jobs while the target holds the request = %v, want one running", got)
		}
		e.kill(s)
		s2, _ := e.start()
		e.await("the notice job completing", 90*time.Second, func() bool { return e.jobs(kind)["completed"] == 1 }, s2.output)
		mu.Lock()
		defer mu.Unlock()
		if answered != 1 {
			t.Errorf("the target answered %d notices after the restart, want 1", answered)
		}
		if got := e.jobs(kind); len(got) != 1 {
			t.Errorf("notice jobs = %v, want the one completed", got)
		}
		if ids, err := e.q.Store().NotificationIDs(context.Background(), ""); err != nil || len(ids) != 0 {
			t.Errorf("notifications left = %v, %v; want none once sent", ids, err)
		}
	})
}

// A comment's feedback job asking GitHub for its author's access when the
// server is killed: the next server asks again, acts on the comment, and
// reacts to it once.
func TestKilledServerFinishesItsFeedback(t *testing.T) {
	forDialects(t, func(t *testing.T, d sqlstore.Dialect) {
		gh := githubtest.NewServer(t)
		gh.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Greet people", Labels: []string{"baton"}})
		gh.SetPermission("octo/app", "alice", "write")
		e := newCrashEnv(t, d, gh.Env()...)
		e.run("source", "add", "octo/app")
		e.run("source", "sync", "octo/app")
		stall := gh.Stall("GET /repos/octo/app/collaborators/*/permission")
		s, url := e.start()
		comment := gh.AddComment("octo/app", 1, githubtest.Comment{Author: "alice", Body: "@baton greet bots too"})
		body := fmt.Sprintf(`{"action":"created","repository":{"full_name":"octo/app","html_url":"https://github.com/octo/app"},`+
			`"issue":{"number":1,"title":"Greet people","state":"open","html_url":"https://github.com/octo/app/issues/1"},`+
			`"comment":{"id":%d,"body":"@baton greet bots too","html_url":"https://github.com/octo/app/issues/1#issuecomment-%d","user":{"login":"alice","type":"User"}}}`, comment.ID, comment.ID)
		if status := sendWebhook(t, url, "issue_comment", "c-1", body); status != http.StatusAccepted {
			t.Fatalf("the comment webhook = %d, want 202", status)
		}
		select {
		case <-stall.Arrived():
		case <-time.After(30 * time.Second): // a bound on a broken server, not a wait for success
			t.Fatalf("the feedback job never asked GitHub\n%s", s.output())
		}
		kind := queue.FeedbackArgs{}.Kind()
		if got := e.jobs(kind); got["running"] != 1 {
			t.Fatalf("feedback jobs while GitHub holds the request = %v, want one running", got)
		}
		e.kill(s)
		gh.Unstall(stall)
		s2, _ := e.start()
		e.await("the feedback job completing", 90*time.Second, func() bool { return e.jobs(kind)["completed"] == 1 }, s2.output)
		f, err := e.q.Store().FindFeedback(context.Background(), "octo/app", "issue_comment", comment.ID)
		if err != nil || f.State != sqlstore.FeedbackDeferred || f.DeliveryID == "" {
			t.Errorf("the comment = %+v, %v; want deferred behind the delivery's queued plan", f, err)
		}
		if rs := gh.Reactions("octo/app", comment.ID); len(rs) != 1 || rs[0].Content != "eyes" {
			t.Errorf("reactions = %+v, want one 👀", rs)
		}
	})
}

// sendWebhook posts a signed webhook to the server at url and returns
// its answer's status, 0 when none came (the server died).
func sendWebhook(t *testing.T, url, event, id, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/webhooks/github", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", intake.Sign("whsec", []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Webhooks being handled when the server is killed: each is handled by
// the next server, and every issue they bring in is one delivery. A
// round of webhooks is sent, and the server killed as soon as one of
// their jobs is seen running; a round that ended before the test saw one
// is sent again with other issues.
func TestKilledServerFinishesItsWebhooks(t *testing.T) {
	forDialects(t, func(t *testing.T, d sqlstore.Dialect) {
		const perRound, rounds = 40, 5
		e := newCrashEnv(t, d)
		e.run("source", "add", "octo/app")
		kind := queue.WebhookArgs{}.Kind()
		s, url := e.start()
		body := func(n int) string {
			return fmt.Sprintf(`{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"octo/app","html_url":"https://github.com/octo/app"},`+
				`"issue":{"number":%d,"title":"Issue %d","state":"open","html_url":"https://github.com/octo/app/issues/%d","labels":[{"name":"baton"}]}}`, n, n, n)
		}
		var mu sync.Mutex
		var unanswered []int // GitHub delivers these again
		sent, caught := 0, 0
		for round := 0; round < rounds && caught == 0; round++ {
			var wg sync.WaitGroup
			for i := range perRound {
				n := sent + i + 1
				wg.Go(func() {
					switch status := sendWebhook(t, url, "issues", fmt.Sprintf("w-%d", n), body(n)); status {
					case http.StatusAccepted:
					case 0:
						mu.Lock()
						unanswered = append(unanswered, n)
						mu.Unlock()
					default:
						t.Errorf("webhook %d = %d, want 202", n, status)
					}
				})
			}
			sent += perRound
			for end := time.Now().Add(10 * time.Second); caught == 0 && time.Now().Before(end); {
				got := e.jobs(kind)
				if caught = got["running"]; caught > 0 {
					e.kill(s)
					break
				}
				if got["completed"] == sent {
					break // all handled before the test looked: another round
				}
			}
			wg.Wait()
		}
		if caught == 0 {
			t.Skipf("in %d rounds of %d webhooks the test never saw a job running before it ended", rounds, perRound)
		}
		s2, url2 := e.start()
		for _, n := range unanswered {
			if status := sendWebhook(t, url2, "issues", fmt.Sprintf("w-%d", n), body(n)); status != http.StatusAccepted && status != http.StatusOK {
				t.Errorf("webhook %d delivered again = %d, want 202, or 200 when the dead server had recorded it", n, status)
			}
		}
		e.await("every webhook job completing", 90*time.Second, func() bool { return e.jobs(kind)["completed"] == sent },
			func() string { return fmt.Sprintf("webhook jobs %v of %d\n%s", e.jobs(kind), sent, s2.output()) })
		ds, err := e.q.Store().FindDeliveries(context.Background(), baton.DeliveryFilter{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, dv := range ds {
			seen[dv.Refs[0].URL]++
		}
		if len(ds) != sent || len(seen) != sent {
			t.Errorf("%d deliveries for %d issues (%d distinct), want one each", len(ds), sent, len(seen))
		}
		for i := 1; i <= sent; i++ {
			w, err := e.q.Store().FindWebhook(context.Background(), fmt.Sprintf("w-%d", i))
			if err != nil || w.Payload != "" || (w.Outcome != "created" && w.Outcome != "exists") {
				t.Errorf("webhook w-%d = %+v, %v; want handled", i, w, err)
			}
		}
		t.Logf("%d of %d webhooks' jobs were running when the server was killed; %d were not answered and were sent again", caught, sent, len(unanswered))
	})
}

// A reject's review job posting to GitHub when the server is killed:
// GitHub has the review, the server has not recorded it (it is reading
// the review's line comments back). The next server takes the job over,
// finds the review by the note's key instead of posting another, and
// adds its URL to the delivery: one review on the pull request.
func TestKilledServerPostsItsReviewOnce(t *testing.T) {
	forDialects(t, func(t *testing.T, d sqlstore.Dialect) {
		issue := "https://github.com/octo/app/issues/1"
		gh := githubtest.NewServer(t)
		gh.AddRepo("octo/app")
		gh.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Greet people"})
		id := baton.DeliveryID("octo/app", issue)
		gh.AddBranch("octo/app", "baton/"+id, strings.Repeat("f", 40)) // GitHub sees the push
		remote := filepath.Join(t.TempDir(), "remote.git")
		e := newCrashEnv(t, d, append(gh.Env(), "BATON_GITHUB_REMOTE_URL="+remote)...)
		if out, err := exec.Command("git", "clone", "-q", "--bare", e.repo, remote).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		e.run("delivery", "create", "--issue", issue, "--checkpoints", "plan", "--agent", "command:echo 1. Greet people.")
		e.run("delivery", "run", id) // the plan, in the foreground: serve has no workers
		prs := gh.PullRequests("octo/app")
		if len(prs) != 1 {
			t.Fatalf("pull requests after plan = %+v, want the draft", prs)
		}
		pr := prs[0].Number
		stall := gh.Stall(fmt.Sprintf("GET /repos/octo/app/pulls/%d/comments", pr))
		s, _ := e.start()
		e.run("delivery", "reject", id, "--reason", "Not like this", "--note", "docs/plan.md:1: say who is greeted")
		select {
		case <-stall.Arrived():
		case <-time.After(30 * time.Second): // a bound on a broken server, not a wait for success
			t.Fatalf("the review job never read the review back: GitHub had %q, jobs %v\n%s", gh.Requests(), e.jobs(queue.ReviewArgs{}.Kind()), s.output())
		}
		kind := queue.ReviewArgs{}.Kind()
		if got := e.jobs(kind); got["running"] != 1 {
			t.Fatalf("review jobs while GitHub holds the request = %v, want one running", got)
		}
		e.kill(s)
		gh.Unstall(stall)
		s2, _ := e.start()
		e.await("the review job completing", 90*time.Second, func() bool { return e.jobs(kind)["completed"] == 1 }, s2.output)
		if n, reviews := gh.Count(fmt.Sprintf("POST /repos/octo/app/pulls/%d/reviews", pr)), gh.Reviews("octo/app", pr); n != 1 || len(reviews) != 1 {
			t.Errorf("%d review posts, reviews %+v; want one", n, reviews)
		}
		if c := gh.ReviewComments("octo/app", pr); len(c) != 1 || c[0].Path != "docs/plan.md" {
			t.Errorf("line comments = %+v, want one on docs/plan.md", c)
		}
		got, err := e.q.Store().FindDeliveryByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := got.Ref(baton.RoleReview, "pr_review"); !ok || !strings.Contains(r.URL, fmt.Sprintf("/pull/%d#pullrequestreview-", pr)) {
			t.Errorf("refs = %+v, want the review's", got.Refs)
		}
	})
}
