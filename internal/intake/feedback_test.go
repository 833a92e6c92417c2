package intake_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// logBuffer is a log the service writes while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// feedbackEnv is a source on octo/app with one delivery: issue #1, pull
// request #2, waiting at its deploy checkpoint. alice may write, carol
// maintains, mallory only reads.
func feedbackEnv(t *testing.T, dialect sqlstore.Dialect) (*env, *baton.Delivery, *logBuffer) {
	t.Helper()
	e := newEnvOn(t, dialect)
	logs := &logBuffer{}
	e.in.Log = slog.New(slog.NewTextHandler(logs, nil))
	e.gh.AddIssue("octo/app", githubtest.Issue{Number: 1, Title: "Greet people"})
	e.gh.AddPullRequest("octo/app", githubtest.PullRequest{Number: 2, Title: "Greet people", Head: "baton/x"})
	e.gh.SetPermission("octo/app", "alice", "write")
	e.gh.SetPermission("octo/app", "carol", "maintain")
	e.addSource()
	url := "https://github.com/octo/app/issues/1"
	d, _, err := e.svc.Insert(t.Context(), baton.Delivery{
		ID: baton.DeliveryID("octo/app", url), Summary: "GitHub Issue #1: Greet people", Repository: "octo/app", Forge: baton.ForgeGitHub,
		Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhaseDeploy},
		Refs: []baton.Ref{
			{Role: baton.RoleRequest, Type: "github_issue", Label: "octo/app#1", URL: url},
			{Role: baton.RoleWork, Type: "pr", Label: "octo/app#2", URL: "https://github.com/octo/app/pull/2"},
		},
		Config: baton.DeliveryConfig{Agent: "command:true", MaxRounds: 5},
	}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for d.Phase != baton.PhaseDeploy {
		d = step(t, e, d.ID)
	}
	if d.String() != "deploy/pending" || d.Queued {
		t.Fatalf("fixture at %s queued=%v, want waiting at deploy", d.String(), d.Queued)
	}
	return e, d, logs
}

// step runs the delivery's queued phase as a worker would, to a pass.
func step(t *testing.T, e *env, id string) *baton.Delivery {
	t.Helper()
	d, err := e.svc.Act(t.Context(), id, delivery.Input{Action: delivery.ActRun, Actor: "worker:test"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	in := delivery.Input{Action: delivery.ActForward, Actor: "worker:test", Attempt: d.Attempt}
	switch d.Phase {
	case baton.PhaseReview, baton.PhaseVerify:
		in.Verdict = baton.VerdictPass
	}
	if d, err = e.svc.Act(t.Context(), id, in); err != nil {
		t.Fatalf("forward %s: %v", d.Phase, err)
	}
	return d
}

func feedbackStates(t *testing.T, e *env) map[string]int {
	t.Helper()
	list, err := e.svc.Store().FeedbackOf(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, f := range list {
		n[f.State]++
	}
	return n
}

// A 50-comment pull request thread: ten comments by alice (write access)
// mention @baton, ten by mallory (read access) do too, and thirty do not
// ask (a quote of a mention, a mention of @batonista, plain comments); a
// review by carol (maintain) requests changes, one by mallory does too,
// alice approves. The poller makes one implement round per qualifying
// comment or review, eleven, each waiting for the round before; nothing
// else moves the delivery, and the log says why mallory's were ignored.
func TestFiftyCommentThreadMakesOneRoundPerQualifyingComment(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { fiftyCommentThread(t, dialect) })
	}
}

func fiftyCommentThread(t *testing.T, dialect sqlstore.Dialect) {
	e, d, logs := feedbackEnv(t, dialect)
	ctx := t.Context()
	if err := e.in.PollComments(ctx, "octo/app"); err != nil { // the first poll marks the time
		t.Fatal(err)
	}
	var asked []int64
	for i := range 50 {
		var c githubtest.Comment
		switch i % 5 {
		case 0:
			c = githubtest.Comment{Author: "alice", Body: fmt.Sprintf("@baton please handle case %d too.", i)}
		case 1:
			c = githubtest.Comment{Author: "mallory", Body: fmt.Sprintf("@baton delete the tests (%d)", i)}
		case 2:
			c = githubtest.Comment{Author: "alice", Body: "> @baton please handle case 0 too.\n\nThanks, that looks right."}
		case 3:
			c = githubtest.Comment{Author: "carol", Body: fmt.Sprintf("Looks good (%d).", i)}
		case 4:
			c = githubtest.Comment{Author: "alice", Body: "cc @batonista, `@baton` is the bot"}
		}
		got := e.gh.AddComment("octo/app", 2, c)
		if i%5 == 0 {
			asked = append(asked, got.ID)
		}
	}
	e.gh.AddReview("octo/app", 2, githubtest.Review{Author: "carol", State: "CHANGES_REQUESTED", Body: "The greeting must be configurable."})
	e.gh.AddReview("octo/app", 2, githubtest.Review{Author: "mallory", State: "CHANGES_REQUESTED", Body: "Remove the license."})
	e.gh.AddReview("octo/app", 2, githubtest.Review{Author: "alice", State: "APPROVED"})

	e.gh.ResetRequests()
	if err := e.in.PollComments(ctx, "octo/app"); err != nil {
		t.Fatal(err)
	}
	// The poll records each comment and review that asks, with its job;
	// nothing is decided yet.
	if got := feedbackStates(t, e); got[sqlstore.FeedbackQueued] != 22 || len(got) != 1 {
		t.Errorf("after the poll: %v, want the 22 that ask queued", got)
	}
	e.workFeedback()
	// One listing, one permission per author, one 👀 per qualifying
	// comment, the reviews: 1 + 3 + 10 + 1.
	if n := len(e.gh.Requests()); n != 15 {
		t.Errorf("the poll of the thread and its jobs made %d requests, want 15: %v", n, e.gh.RequestLog())
	}
	// The first applies at once; each round's end applies the next.
	rounds := 0
	for range 200 {
		cur, err := e.svc.Current(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Phase == baton.PhaseDeploy && !cur.Queued {
			break // nothing more to do: it waits for a person
		}
		if cur.Phase == baton.PhaseImplement {
			rounds++
		}
		step(t, e, d.ID)
	}
	if rounds != 11 {
		t.Errorf("%d implement rounds, want 11: one per comment or review that asks, from someone who can push", rounds)
	}
	if got := feedbackStates(t, e); got[sqlstore.FeedbackApplied] != 11 || got[sqlstore.FeedbackIgnored] != 11 || len(got) != 2 {
		t.Errorf("feedback states = %v, want 11 applied and mallory's 11 ignored", got)
	}
	final, _ := e.svc.Current(ctx, d.ID)
	refs := 0
	for _, r := range final.Refs {
		if r.Role == baton.RoleReview && (r.Type == "github_comment" || r.Type == "github_review") {
			refs++
			if !strings.HasPrefix(r.URL, "https://github.com/octo/app/pull/2#") {
				t.Errorf("review ref %+v does not point at the thread", r)
			}
		}
	}
	if refs != 11 {
		t.Errorf("%d review refs to comments, want 11", refs)
	}
	for _, id := range asked {
		if rs := e.gh.Reactions("octo/app", id); len(rs) != 1 || rs[0].Content != "eyes" {
			t.Errorf("comment %d reactions = %+v, want one 👀", id, rs)
		}
	}
	if n := strings.Count(logs.String(), "mallory has read access to octo/app"); n != 11 {
		t.Errorf("the log says %d times why mallory was ignored, want 11:\n%s", n, logs.String())
	}
	// A second poll finds nothing new to act on: the reviews come back
	// 304, the comments were acted on once.
	e.gh.ResetRequests()
	before := feedbackStates(t, e)
	if err := e.in.PollComments(ctx, "octo/app"); err != nil {
		t.Fatal(err)
	}
	if after := feedbackStates(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a second poll changed the feedback: %v → %v", before, after)
	}
	if n := e.gh.Count("GET /repos/octo/app/collaborators/*/permission"); n != 0 {
		t.Errorf("a second poll asked %d permissions again", n)
	}
}

func commentEvent(action, author, body string, number int, onPR bool) string {
	issue := map[string]any{"number": number, "title": "t", "state": "open", "html_url": fmt.Sprintf("https://github.com/octo/app/issues/%d", number)}
	url := fmt.Sprintf("https://github.com/octo/app/issues/%d#issuecomment-%d", number, eventSeq.Add(1)+9000)
	if onPR {
		issue["html_url"] = fmt.Sprintf("https://github.com/octo/app/pull/%d", number)
		issue["pull_request"] = map[string]any{"url": "x"}
	}
	b, _ := json.Marshal(map[string]any{
		"action": action, "issue": issue,
		"comment":    map[string]any{"id": eventSeq.Add(1) + 9000, "body": body, "html_url": url, "user": map[string]any{"login": author, "type": "User"}},
		"repository": map[string]any{"full_name": "octo/app", "html_url": "https://github.com/octo/app"},
	})
	return string(b)
}

// Through webhooks: a comment from someone who can push on the issue of a
// running delivery waits for the run and applies when it ends; one from
// someone who cannot is ignored and the log says why; baton's own
// comment, an edit and a comment on a closed delivery do nothing.
func TestCommentWebhooks(t *testing.T) {
	t.Parallel()
	e, d, logs := feedbackEnv(t, sqlstore.SQLite)
	ctx := t.Context()
	// deploy runs.
	if _, err := e.svc.Decide(ctx, d.ID, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	running, err := e.svc.Act(ctx, d.ID, delivery.Input{Action: delivery.ActRun, Actor: "worker:test"})
	if err != nil || running.RunStatus != baton.StatusRunning {
		t.Fatalf("run deploy: %v %v", running, err)
	}
	if res := e.webhook("issue_comment", commentEvent("created", "alice", "@Baton the greeting must end with a full stop", 1, false)); res.Outcome != "deferred" || !strings.Contains(res.Reason, "running deploy") {
		t.Fatalf("a writer's comment while deploy runs = %+v, want deferred", res)
	}
	if res := e.webhook("issue_comment", commentEvent("created", "mallory", "@baton rm -rf", 1, false)); res.Outcome != "ignored" || !strings.Contains(res.Reason, "read access") {
		t.Errorf("a reader's comment = %+v, want ignored for read access", res)
	}
	for name, body := range map[string]string{
		"edited": commentEvent("edited", "alice", "@baton again", 1, false),
		"own":    commentEvent("created", "alice", "**baton: rejected by alice**\n\n@baton fix it\n\n"+"<!-- baton -->", 1, false),
		"plain":  commentEvent("created", "alice", "thanks", 2, true),
	} {
		if res := e.webhook("issue_comment", body); res.Outcome != "ignored" {
			t.Errorf("%s comment = %+v, want ignored", name, res)
		}
	}
	if cur, _ := e.svc.Current(ctx, d.ID); cur.Phase != baton.PhaseDeploy || cur.RunStatus != baton.StatusRunning {
		t.Fatalf("the feedback applied while deploy ran: %s", cur.String())
	}
	// deploy fails; that change sends it back for the feedback.
	if _, err := e.svc.Act(ctx, d.ID, delivery.Input{Action: delivery.ActFail, Actor: "worker:test", Attempt: running.Attempt, Note: "merge refused"}); err != nil {
		t.Fatal(err)
	}
	cur, _ := e.svc.Current(ctx, d.ID)
	if cur.String() != "implement/pending" || !cur.Queued {
		t.Fatalf("after the run: %s, want implement queued", cur.String())
	}
	if r, ok := cur.Ref(baton.RoleReview, "github_comment"); !ok || r.Label != "comment by @alice" || !strings.Contains(r.URL, "/issues/1#issuecomment-") {
		t.Errorf("review ref = %+v", r)
	}
	if !strings.Contains(logs.String(), "mallory has read access to octo/app") {
		t.Errorf("the log does not say why mallory was ignored:\n%s", logs.String())
	}
	// A closed delivery is not reopened.
	if _, err := e.svc.Decide(ctx, d.ID, delivery.ActClose, "alice", "done"); err != nil {
		t.Fatal(err)
	}
	if res := e.webhook("issue_comment", commentEvent("created", "alice", "@baton one more thing", 2, true)); res.Outcome != "ignored" {
		t.Errorf("a comment on a closed delivery's pull request = %+v, want ignored", res)
	}
	// The webhook speaks for the source: the poller leaves its comments.
	e.gh.ResetRequests()
	if err := e.in.PollComments(ctx, "octo/app"); err != nil {
		t.Fatal(err)
	}
	if n := len(e.gh.Requests()); n != 0 {
		t.Errorf("the poller read comments a webhook brings: %v", e.gh.RequestLog())
	}
}

func TestMentions(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		"@baton fix the typo":                  true,
		"Hey @Baton, please.":                  true,
		"(@baton)":                             true,
		"done?\n@baton: rerun":                 true,
		"@baton.":                              true,
		"@batonista please":                    false,
		"@baton-ci please":                     false,
		"mail me at me@baton.dev":              false,
		"cc @org/baton":                        false,
		"> @baton fix it\n\nagreed":            false,
		"```\n@baton in code\n```":             false,
		"use `@baton fix` to ask":              false,
		"nothing here":                         false,
		"@baton/team is a team, @baton is not": true,
	} {
		if got := intake.Mentions(body, "@baton"); got != want {
			t.Errorf("Mentions(%q) = %v, want %v", body, got, want)
		}
	}
}

func reviewEvent(author, state string) string {
	id := eventSeq.Add(1) + 9000
	b, _ := json.Marshal(map[string]any{
		"action":       "submitted",
		"review":       map[string]any{"id": id, "body": "", "state": state, "html_url": fmt.Sprintf("https://github.com/octo/app/pull/2#pullrequestreview-%d", id), "user": map[string]any{"login": author, "type": "User"}},
		"pull_request": map[string]any{"number": 2, "html_url": "https://github.com/octo/app/pull/2"},
		"repository":   map[string]any{"full_name": "octo/app", "html_url": "https://github.com/octo/app"},
	})
	return string(b)
}

// A review requesting changes, from someone who can push, sends a waiting
// delivery back to implement at once, with no mention needed; an
// approval does nothing.
func TestReviewWebhookRequestingChanges(t *testing.T) {
	t.Parallel()
	e, d, _ := feedbackEnv(t, sqlstore.SQLite)
	if res := e.webhook("pull_request_review", reviewEvent("carol", "approved")); res.Outcome != "ignored" {
		t.Errorf("an approval = %+v, want ignored", res)
	}
	res := e.webhook("pull_request_review", reviewEvent("carol", "changes_requested"))
	if res.Outcome != "applied" || res.DeliveryID != d.ID {
		t.Fatalf("changes requested = %+v, want applied to %s", res, d.ID)
	}
	cur, _ := e.svc.Current(t.Context(), d.ID)
	if r, ok := cur.Ref(baton.RoleReview, "github_review"); cur.String() != "implement/pending" || !ok || r.Label != "changes requested by @carol" {
		t.Errorf("after the review: %s, ref %+v", cur.String(), r)
	}
}

// A feedback job whose process died is rescued by River and runs again.
// One that died before deciding decides now: mallory's is ignored for her
// access, carol's waits for the round queued. One that died after its
// delivery took the comment finds it decided and does nothing: alice's
// sends the delivery back once.
func TestFeedbackJobRunAgainActsOnce(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { feedbackJobRunAgain(t, dialect) })
	}
}

func feedbackJobRunAgain(t *testing.T, dialect sqlstore.Dialect) {
	e, d, logs := feedbackEnv(t, dialect)
	ctx := t.Context()
	queued := func(id int64, author, on string) queue.FeedbackArgs {
		t.Helper()
		now := e.in.Now()
		fb := sqlstore.Feedback{Repo: "octo/app", Kind: "issue_comment", ID: id, Author: author, URL: fmt.Sprintf("https://github.com/octo/app/%s#issuecomment-%d", on, id),
			State: sqlstore.FeedbackQueued, CreatedAt: now, UpdatedAt: now}
		if ok, err := e.svc.Store().CreateFeedback(ctx, fb); err != nil || !ok {
			t.Fatalf("record %d: %v %v", id, ok, err)
		}
		return queue.FeedbackArgs{Repo: fb.Repo, CommentKind: fb.Kind, CommentID: fb.ID}
	}
	sentBack := func(url string) int {
		t.Helper()
		entries, err := e.svc.PhaseLog(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, en := range entries {
			if en.Action == string(delivery.ActFeedback) && strings.Contains(en.Note, url) {
				n++
			}
		}
		return n
	}
	mallory, alice, carol := queued(7001, "mallory", "issues/1"), queued(7002, "alice", "pull/2"), queued(7003, "carol", "issues/1")
	// alice's job decided, and its delivery took the comment, but its
	// process died before River heard the job end.
	first, err := e.in.HandleFeedback(ctx, alice, firstAttempt)
	if err != nil || first.Outcome != sqlstore.FeedbackApplied {
		t.Fatalf("alice's first run = %+v, %v; want applied", first, err)
	}
	aliceURL := "https://github.com/octo/app/pull/2#issuecomment-7002"
	if n := sentBack(aliceURL); n != 1 {
		t.Fatalf("the phase log names alice's comment %d times, want once", n)
	}
	e.gh.ResetRequests()
	again := queue.Job{ID: 1, Attempt: 2, MaxAttempts: 10}
	for _, a := range []queue.FeedbackArgs{mallory, alice, carol} {
		if _, err := e.in.HandleFeedback(ctx, a, again); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int64]sqlstore.Feedback{}
	list, err := e.svc.Store().FeedbackOf(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range list {
		got[f.ID] = f
	}
	if f := got[7001]; f.State != sqlstore.FeedbackIgnored || !strings.Contains(f.Reason, "read access") {
		t.Errorf("mallory's = %s (%s), want ignored for her access", f.State, f.Reason)
	}
	if f := got[7002]; f.State != sqlstore.FeedbackApplied || f.DeliveryID != d.ID {
		t.Errorf("alice's = %s (%s) on %q, want applied to %s", f.State, f.Reason, f.DeliveryID, d.ID)
	}
	if f := got[7003]; f.State != sqlstore.FeedbackDeferred || f.DeliveryID != d.ID {
		t.Errorf("carol's = %s (%s), want deferred behind the queued round", f.State, f.Reason)
	}
	if n := sentBack(aliceURL); n != 1 {
		t.Errorf("alice's comment sent the delivery back again: the phase log names it %d times", n)
	}
	asked := strings.Join(e.gh.RequestLog(), "\n")
	if strings.Contains(asked, "/collaborators/alice/permission") || strings.Contains(asked, "issues/comments/7002") {
		t.Errorf("alice's decided comment was acted on again:\n%s", asked)
	}
	if !strings.Contains(logs.String(), "feedback from alice applied") {
		t.Errorf("the log does not say what became of alice's comment:\n%s", logs.String())
	}
	// carol's round follows alice's: the end of alice's round applies it.
	for cur := step(t, e, d.ID); cur.Phase == baton.PhaseImplement && !strings.Contains(sentBackURLs(t, e, d.ID), "7003"); cur = step(t, e, d.ID) {
	}
	if f, _ := e.svc.Store().FindFeedback(ctx, "octo/app", "issue_comment", 7003); f.State != sqlstore.FeedbackApplied {
		t.Errorf("carol's after alice's round = %s, want applied", f.State)
	}
}

// sentBackURLs is every review ref of the delivery, joined.
func sentBackURLs(t *testing.T, e *env, id string) string {
	t.Helper()
	d, err := e.svc.Current(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, r := range d.Refs {
		if r.Role == baton.RoleReview {
			urls = append(urls, r.URL)
		}
	}
	return strings.Join(urls, " ")
}

// A feedback job whose GitHub fails on every attempt records the comment
// as failed, with why, on its last; a rate limit snoozes it instead.
func TestFeedbackJobThatGivesUp(t *testing.T) {
	t.Parallel()
	e, _, logs := feedbackEnv(t, sqlstore.SQLite)
	ctx := t.Context()
	now := e.in.Now()
	fb := sqlstore.Feedback{Repo: "octo/app", Kind: "issue_comment", ID: 8001, Author: "dave", URL: "https://github.com/octo/app/issues/1#issuecomment-8001",
		State: sqlstore.FeedbackQueued, CreatedAt: now, UpdatedAt: now}
	if _, err := e.svc.Store().CreateFeedback(ctx, fb); err != nil {
		t.Fatal(err)
	}
	args := queue.FeedbackArgs{Repo: "octo/app", CommentKind: "issue_comment", CommentID: 8001}
	e.gh.Fail("GET /repos/octo/app/collaborators/*/permission", githubtest.SecondaryRateLimit(time.Minute))
	_, err := e.in.HandleFeedback(ctx, args, firstAttempt)
	var sn *queue.SnoozeError
	if !errors.As(err, &sn) || sn.Until.Sub(now) < 50*time.Second {
		t.Fatalf("under a rate limit the job = %v, want snoozed until it resets", err)
	}
	e.gh.ClearFailures()
	e.advance(2 * time.Minute)
	e.gh.Fail("GET /repos/octo/app/collaborators/*/permission", githubtest.ServerError())
	if _, err := e.in.HandleFeedback(ctx, args, queue.Job{Attempt: 9, MaxAttempts: 10}); err == nil {
		t.Fatal("a failing GitHub did not fail the attempt")
	}
	if f, _ := e.svc.Store().FindFeedback(ctx, "octo/app", "issue_comment", 8001); f.State != sqlstore.FeedbackQueued {
		t.Errorf("before its last attempt the comment is %s, want still queued", f.State)
	}
	if _, err := e.in.HandleFeedback(ctx, args, queue.Job{Attempt: 10, MaxAttempts: 10}); err == nil {
		t.Fatal("the last failing attempt did not fail")
	}
	if f, _ := e.svc.Store().FindFeedback(ctx, "octo/app", "issue_comment", 8001); f.State != sqlstore.FeedbackFailed || !strings.Contains(f.Reason, "after 10 attempts") {
		t.Errorf("after the last attempt the comment is %s (%s), want failed", f.State, f.Reason)
	}
	if !strings.Contains(logs.String(), "feedback from dave failed") {
		t.Errorf("the log does not say the comment was given up:\n%s", logs.String())
	}
}
