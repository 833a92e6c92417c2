package delivery_test

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sourceRepo is the user's repository: main checked out, one commit, and a
// check script the verify command runs.
func sourceRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "README.md"), "# app\n")
	write(t, filepath.Join(dir, "check.sh"), "grep -q 'return \"hello, \" + name' greet.go\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "initial commit")
	return dir
}

type harness struct {
	t       testing.TB
	svc     *delivery.Service
	runner  *delivery.Runner
	q       *queue.Queue
	dataDir string
	fake    *agenttest.Fake
	dsn     string
	// wake fires when this process commits a delivery's events.
	wake <-chan struct{}
	fire func()
}

func newHarness(t testing.TB, workers int, turns ...agenttest.Turn) *harness {
	t.Helper()
	return newHarnessOn(t, sqlstore.SQLite, workers, turns...)
}

// newHarnessOn is newHarness on SQLite or PostgreSQL (a fresh schema of
// BATON_TEST_POSTGRES_URL's database).
func newHarnessOn(t testing.TB, dialect sqlstore.Dialect, workers int, turns ...agenttest.Turn) *harness {
	t.Helper()
	dataDir := t.TempDir()
	h := &harness{t: t, dataDir: dataDir, fake: agenttest.New(t, turns...)}
	h.dsn = sqlstoretest.DSN(t, dialect)
	q, err := queue.Open(t.Context(), h.dsn, queue.Config{Workers: workers, FetchPollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	svc := &delivery.Service{Queue: q, DataDir: dataDir, Sandbox: sandbox.Confinement{Policy: h.fake.Sandbox()}, AgentEnv: h.fake.Env()}
	h.runner = &delivery.Runner{Service: svc, Owner: "worker:test", PollEvery: 20 * time.Millisecond, KillGrace: time.Second}
	h.svc, h.q = svc, q
	h.wake, h.fire = testenv.Signal()
	t.Cleanup(svc.OnEvents(func(string) { h.fire() }))
	return h
}

// serve works the server's jobs (review notes to post) until the test
// ends, as `baton serve` does: a second process on the database, with
// the harness's data directory and forge.
func (h *harness) serve() {
	q, err := queue.Open(h.t.Context(), h.dsn, queue.Config{ServerJobs: 2, FetchPollInterval: 20 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	svc := &delivery.Service{Queue: q, DataDir: h.dataDir, Forge: h.svc.Forge}
	unsubscribe := svc.OnEvents(func(string) { h.fire() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Run(ctx, queue.Handlers{Review: svc.PostReview,
			Notice:   func(context.Context, queue.NoticeArgs, queue.Job) error { return nil },
			Feedback: func(context.Context, queue.FeedbackArgs, queue.Job) error { return nil },
			Webhook:  func(context.Context, queue.WebhookArgs, queue.Job) error { return nil }})
	}()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("server queue Run = %v", err)
		}
		unsubscribe()
		q.Close()
	})
}

// work runs the queue's workers until the test ends.
func (h *harness) work() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.q.Run(ctx, queue.Handlers{Phase: func(ctx context.Context, args queue.RunPhaseArgs, _ queue.Job) error {
			_, err := h.runner.Run(ctx, args.DeliveryID, args.Phase, "")
			return err
		}, Message: (&delivery.Worker{Runner: h.runner}).WorkMessage})
	}()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("queue Run = %v", err)
		}
	})
}

// waitFor waits until the delivery meets cond, woken by its events,
// failing after 60s with the delivery's state and log.
func (h *harness) waitFor(id, what string, cond func(d *baton.Delivery) bool) *baton.Delivery {
	h.t.Helper()
	var d *baton.Delivery
	var err error
	held := testenv.Until(60*time.Second, h.wake, func() bool {
		d, err = h.svc.Store().FindDeliveryByID(context.Background(), id)
		return err != nil || cond(d)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if !held {
		log, _ := h.svc.Store().PhaseLog(context.Background(), id)
		var lines []string
		for _, e := range log {
			lines = append(lines, fmt.Sprintf("%s/%s %s %s: %s", e.Phase, e.Status, e.Verdict, e.Action, e.Note))
		}
		h.t.Fatalf("timed out waiting for %s; delivery is %s (%s)\n%s", what, d.String(), d.Error, strings.Join(lines, "\n"))
	}
	return d
}

func newDelivery(src string, cfg baton.DeliveryConfig, checkpoints ...baton.Phase) baton.Delivery {
	summary := "Add a greeting function"
	return baton.Delivery{
		ID: baton.DeliveryID(src, summary), Summary: summary, Repository: src, Forge: baton.ForgeLocal,
		Endpoint: baton.PhaseObserve, Checkpoints: append([]baton.Phase{}, checkpoints...),
		Refs:   []baton.Ref{{Role: baton.RoleRequest, Type: "summary", Label: summary}},
		Config: cfg,
	}
}

const planText = "1. Add greet.go with Greet(name).\n2. Cover it with a test."

func TestEndToEndLocal(t *testing.T) { endToEnd(t, sqlstore.SQLite) }

// The same pipeline on PostgreSQL: nothing above internal/queue changes.
func TestEndToEndLocalPostgres(t *testing.T) { endToEnd(t, sqlstore.Postgres) }

func endToEnd(t *testing.T, dialect sqlstore.Dialect) {
	src := sourceRepo(t)
	greetV1 := "package app\n\nfunc Greet(name string) string { return \"hi \" + name }\n"
	greetV2 := "package app\n\nfunc Greet(name string) string { return \"hello, \" + name }\n"
	h := newHarnessOn(t, dialect, 1,
		agenttest.Turn{Final: planText, CostUSD: 0.10, InputTokens: 1000, OutputTokens: 200},
		// implement 1: leaves its work uncommitted; baton commits it.
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: greetV1}}, Final: "Added greet.go", CostUSD: 0.20},
		agenttest.Turn{Final: map[string]string{"verdict": "not_pass", "summary": "No test", "feedback": "Add greet_test.go"}},
		// implement 2: tries to commit, which a confined agent cannot (the
		// repository's objects are the cache's, shared by every delivery);
		// baton commits for it.
		agenttest.Turn{
			Files:    []agenttest.File{{Path: "greet_test.go", Content: "package app\n"}},
			Commands: []agenttest.Command{{Argv: []string{"git", "add", "-A"}, AllowFail: true}},
			Final:    "Added the test",
		},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Good", "feedback": ""}},
		// verify fails (check.sh wants "hello, "); implement 3 fixes it.
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: greetV2}}, Final: "Fixed the greeting"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "Still good", "feedback": ""}},
	)
	h.work()
	cfg := baton.DeliveryConfig{Agent: "claude", PhaseTimeout: time.Minute, MaxRounds: 5, VerifyCommand: "sh check.sh",
		ObserveCommand: "git rev-parse --verify HEAD", ObserveWindow: 300 * time.Millisecond, ObserveEvery: 100 * time.Millisecond}
	d, created, err := h.svc.Insert(t.Context(), newDelivery(src, cfg, baton.PhaseDeploy), "alice")
	if err != nil || !created {
		t.Fatalf("Create = %v created=%v", err, created)
	}

	// Everything up to deploy runs by itself; deploy is a checkpoint.
	d = h.waitFor(d.ID, "deploy to wait for a person", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending || d.RunStatus == baton.StatusFailed
	})
	if d.RunStatus != baton.StatusPending || d.Queued {
		t.Fatalf("delivery is %s queued=%v (%s), want deploy waiting", d.String(), d.Queued, d.Error)
	}
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActApprove, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "deploy to succeed", func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusSucceeded || d.RunStatus == baton.StatusFailed
	})
	if d.RunStatus != baton.StatusSucceeded {
		t.Fatalf("deploy is %s: %s", d.String(), d.Error)
	}
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActApprove, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	d = h.waitFor(d.ID, "close", func(d *baton.Delivery) bool { return d.Phase == baton.PhaseClose || d.RunStatus == baton.StatusFailed })
	if d.String() != "close/succeeded" {
		t.Fatalf("delivery ended %s: %s", d.String(), d.Error)
	}

	// The phase log: every change, its actor, and durations.
	log, err := h.svc.Store().PhaseLog(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range log {
		if e.Status == baton.StatusPending {
			continue
		}
		s := string(e.Phase) + "/" + string(e.Status)
		if e.Verdict != "" {
			s += "/" + string(e.Verdict)
		}
		steps = append(steps, s)
	}
	want := []string{
		"intake/succeeded",
		"plan/running", "plan/succeeded",
		"implement/running", "implement/succeeded",
		"review/running", "review/succeeded/not_pass",
		"implement/running", "implement/succeeded",
		"review/running", "review/succeeded/pass",
		"verify/running", "verify/succeeded/not_pass",
		"implement/running", "implement/succeeded",
		"review/running", "review/succeeded/pass",
		"verify/running", "verify/succeeded/pass",
		"deploy/running", "deploy/succeeded",
		"observe/running", "observe/succeeded",
		"close/succeeded",
	}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("phase log (-want +got):\n%s", diff)
	}
	for i, e := range log {
		if e.Actor == "" || e.Action == "" {
			t.Errorf("entry %d has no actor or action: %+v", i, e)
		}
		if e.EndedAt.IsZero() {
			t.Errorf("entry %d (%s/%s) has no end time", i, e.Phase, e.Status)
		}
		if e.Status == baton.StatusRunning && e.Duration(time.Time{}) <= 0 {
			t.Errorf("running entry %d (%s) has no duration", i, e.Phase)
		}
	}
	if log[0].Actor != "alice" {
		t.Errorf("intake actor %q, want alice", log[0].Actor)
	}
	if d.Rounds != 2 {
		t.Errorf("rounds = %d, want 2 (one review, one verify)", d.Rounds)
	}

	// Refs: the request, the work branch, two reviews, the failed check,
	// the merge.
	var refs []string
	for _, r := range d.Refs {
		refs = append(refs, string(r.Role)+":"+r.Type)
		if (r.Role == baton.RoleReview || r.Role == baton.RoleCheck) && !strings.HasPrefix(r.URL, "file:///") {
			t.Errorf("%s ref %q has no file URL an agent can open", r.Role, r.URL)
		}
	}
	wantRefs := []string{"request:summary", "work:branch", "review:review_note", "review:review_note", "work:verified_commit", "check:verify_command", "review:review_note", "work:commit"}
	if diff := cmp.Diff(wantRefs, refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}

	// Agent runs: all recorded with prompt, final message and usage; the
	// second implement run is pointed at the review note, not fed its text.
	runs, err := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if err != nil || len(runs) != 7 {
		t.Fatalf("AgentRuns = %d runs, %v; want 7", len(runs), err)
	}
	for _, r := range runs {
		if r.Status != baton.RunSucceeded || r.Prompt == "" || r.SystemPrompt == "" || r.EndedAt.IsZero() || r.LogDir == "" {
			t.Errorf("run %d (%s) = %+v, want a complete succeeded run", r.N, r.Phase, r)
		}
		if _, err := os.Stat(filepath.Join(r.LogDir, "events.jsonl")); err != nil {
			t.Errorf("run %d: no events log: %v", r.N, err)
		}
	}
	if runs[0].FinalMessage != planText || runs[0].CostUSD != 0.10 || runs[0].InputTokens != 1000 {
		t.Errorf("plan run = %+v", runs[0])
	}
	impl2 := runs[3]
	if !strings.Contains(impl2.Prompt, "## References") || strings.Contains(impl2.Prompt, "Add greet_test.go") {
		t.Errorf("implement 2 prompt = %q, want references and no injected feedback", impl2.Prompt)
	}
	calls := h.fake.Calls(t)
	if len(calls) != 7 {
		t.Fatalf("the agent was called %d times, want 7", len(calls))
	}
	firstNote := ""
	for _, r := range d.Refs {
		if r.Role == baton.RoleReview {
			firstNote = r.URL
			break
		}
	}
	if firstNote == "" || !strings.Contains(calls[3].Prompt, firstNote) {
		t.Errorf("implement 2 was not pointed at the review note %s:\n%s", firstNote, calls[3].Prompt)
	}
	if !strings.Contains(calls[2].SystemPrompt, "git diff main...HEAD") {
		t.Errorf("review system prompt = %q", calls[2].SystemPrompt)
	}
	if !strings.HasPrefix(calls[1].Dir, filepath.Join(h.dataDir, "worktrees", d.ID)) {
		t.Errorf("implement ran in %s, want a worktree under the data dir", calls[1].Dir)
	}

	// The work branch holds the plan and every implement round.
	branch := "baton/" + d.ID
	subjects := strings.Split(gittest.Git(t, src, "log", "--format=%s", "main@{1}.."+branch), "\n")
	wantSubjects := []string{"Add a greeting function", "Add a greeting function", "Add a greeting function", "Plan: Add a greeting function"}
	if diff := cmp.Diff(wantSubjects, subjects); diff != "" {
		t.Errorf("work branch commits (-want +got):\n%s", diff)
	}
	if got := gittest.Git(t, src, "show", branch+":docs/plan.md"); got != planText {
		t.Errorf("docs/plan.md = %q", got)
	}

	// main got one squashed commit with the work, and the user's checkout
	// (main is checked out in src) was fast-forwarded.
	if got := gittest.Git(t, src, "log", "-1", "--format=%s", "main"); got != "Add a greeting function" {
		t.Errorf("main head subject = %q", got)
	}
	if n := gittest.Git(t, src, "rev-list", "--count", "main"); n != "2" {
		t.Errorf("main has %s commits, want 2 (initial + squash)", n)
	}
	if got, _ := os.ReadFile(filepath.Join(src, "greet.go")); string(got) != greetV2 {
		t.Errorf("greet.go in the user's checkout = %q", got)
	}
	if st := gittest.Git(t, src, "status", "--porcelain"); st != "" {
		t.Errorf("source work tree not clean after deploy: %q", st)
	}
	// The plan stays on the work branch; the merge leaves it out.
	if files := gittest.Git(t, src, "show", "--name-only", "--format=", "main"); files != "greet.go\ngreet_test.go" {
		t.Errorf("the merge changed %q, want greet.go and greet_test.go only", files)
	}
}
