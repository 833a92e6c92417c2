package delivery_test

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/testenv"
)

func cfg() baton.DeliveryConfig {
	return baton.DeliveryConfig{Agent: "claude", PhaseTimeout: time.Minute, MaxRounds: 5}
}

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	a, created, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil || !created {
		t.Fatalf("Create = %v %v", err, created)
	}
	other := newDelivery(src, cfg())
	other.Config.Agent = "codex" // a different request body for the same request
	b, created, err := h.svc.Insert(t.Context(), other, "bob")
	if err != nil || created {
		t.Fatalf("second Create = %v created=%v, want the existing delivery", err, created)
	}
	if b.ID != a.ID || b.Seq != a.Seq || b.Config.Agent != "claude" || b.Version != a.Version {
		t.Errorf("second Create returned %+v, want the first delivery untouched", b)
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), a.ID)
	if len(log) != 2 {
		t.Errorf("phase log has %d entries after two creates, want 2 (intake, plan pending)", len(log))
	}
	if st, _ := h.q.JobStates(t.Context(), a.ID); st["available"] != 1 {
		t.Errorf("jobs = %v, want one queued plan job", st)
	}
}

// Two run requests at once, from two runners (a worker and a person):
// exactly one agent run.
func TestConcurrentRunsRunOnce(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText, Sleep: 300 * time.Millisecond})
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 4)
	ran := make([]bool, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := *h.runner
			person := ""
			if i%2 == 1 {
				person = "alice"
			}
			got, err := r.Run(context.Background(), d.ID, baton.PhasePlan, person)
			results[i], ran[i] = err, got != nil
		}()
	}
	wg.Wait()
	n := 0
	for i := range 4 {
		if ran[i] {
			n++
		} else if results[i] != nil && baton.ErrorCode(results[i]) != baton.Conflict {
			t.Errorf("runner %d: %v, want nothing or Conflict", i, results[i])
		}
	}
	if n != 1 {
		t.Errorf("%d runners ran the phase, want 1 (errors %v)", n, results)
	}
	if calls := h.fake.Calls(t); len(calls) != 1 {
		t.Errorf("the agent ran %d times, want once", len(calls))
	}
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if len(runs) != 1 {
		t.Errorf("%d agent runs recorded, want 1", len(runs))
	}
}

// Cancel from another actor kills the agent; its late result is
// discarded, and the agent run keeps what it produced.
func TestCancelKillsAgentAndWins(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText, Sleep: 30 * time.Second})
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *baton.Delivery, 1)
	start := time.Now()
	go func() {
		got, err := h.runner.Run(context.Background(), d.ID, baton.PhasePlan, "")
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	h.waitFor(d.ID, "plan to run", func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
	// The agent run row exists (running) before the agent finishes.
	var runs []baton.AgentRun
	if !testenv.Until(10*time.Second, h.wake, func() bool {
		runs, _ = h.svc.Store().AgentRuns(t.Context(), d.ID)
		return len(runs) == 1 && runs[0].Status == baton.RunRunning
	}) {
		t.Fatalf("no running agent run recorded: %+v", runs)
	}
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActReject, Actor: "bob", Person: true, Note: "x"}); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("reject while running = %v, want Conflict", err)
	}
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActCancel, Actor: "bob", Person: true}); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if elapsed := time.Since(start); elapsed > 15*time.Second {
		t.Errorf("the run took %s after cancel, want the agent killed promptly", elapsed)
	}
	if got.String() != "plan/failed" || got.Error != "canceled by bob" {
		t.Errorf("after cancel: %s %q, want plan/failed canceled by bob", got.String(), got.Error)
	}
	runs, _ = h.svc.Store().AgentRuns(t.Context(), d.ID)
	if len(runs) != 1 || runs[0].Status != baton.RunCanceled || runs[0].EndedAt.IsZero() {
		t.Fatalf("agent runs = %+v, want one canceled run with an end", runs)
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	last := log[len(log)-1]
	if last.Action != "cancel" || last.Actor != "bob" {
		t.Errorf("last log entry %+v, want bob's cancel", last)
	}
	// Retry runs it again as a new attempt.
	r, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActRetry, Actor: "bob", Person: true})
	if err != nil || r.String() != "plan/pending" || !r.Queued {
		t.Fatalf("retry = %v %v", r, err)
	}
}

// A run stopped under its runner says why, from the phase log's record
// of what stopped it: a person's cancel names who canceled; anything
// else, even a failure whose text reads like a cancel, is a takeover.
func TestRunnerTellsACancelFromATakeover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop delivery.Input
		want string
	}{
		{"cancel", delivery.Input{Action: delivery.ActCancel, Actor: "bob", Person: true}, "stopped (canceled by bob)"},
		// A lost attempt that reaches the limit fails with the note as its
		// error: text is not what makes a cancel.
		{"lost", delivery.Input{Action: delivery.ActLose, Actor: "reconciler:test", Note: "canceled by the kernel: out of memory"},
			"stopped (the attempt is no longer the delivery's)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := sourceRepo(t)
			h := newHarness(t, 0, agenttest.Turn{Final: planText, Sleep: 30 * time.Second})
			nd := newDelivery(src, cfg())
			nd.Lost = delivery.MaxLostAttempts - 1
			d, _, err := h.svc.Insert(t.Context(), nd, "alice")
			if err != nil {
				t.Fatal(err)
			}
			var live strings.Builder
			h.runner.Live = &live
			done := make(chan *baton.Delivery, 1)
			go func() {
				got, err := h.runner.Run(context.Background(), d.ID, baton.PhasePlan, "")
				if err != nil {
					t.Error(err)
				}
				done <- got
			}()
			running := h.waitFor(d.ID, "plan to run", func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
			in := tc.stop
			in.Attempt, in.Now = running.Attempt, time.Now()
			if _, err := h.svc.Act(t.Context(), d.ID, in); err != nil {
				t.Fatal(err)
			}
			got := <-done
			if got.RunStatus != baton.StatusFailed || !strings.HasPrefix(got.Error, "canceled by ") {
				t.Errorf("after %s: %s %q, want failed with an error that reads like a cancel", tc.name, got, got.Error)
			}
			if !strings.Contains(live.String(), tc.want) {
				t.Errorf("live output after %s = %q, want %q", tc.name, live.String(), tc.want)
			}
		})
	}
}

func TestAgentFailureKeepsRunAndPartialWork(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "half.go", Content: "package app\n"}}, IsError: true, Errors: []string{"context window exceeded"}, CostUSD: 0.5},
	)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, ""); err != nil {
		t.Fatal(err)
	}
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseImplement, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "implement/failed" || !strings.Contains(got.Error, "context window exceeded") || !strings.Contains(got.Error, "partial work was committed and pushed") {
		t.Fatalf("implement = %s %q", got.String(), got.Error)
	}
	if out := gittest.Git(t, src, "show", "baton/"+d.ID+":half.go"); out != "package app" {
		t.Errorf("the partial work is not on the work branch: %q", out)
	}
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if r := runs[len(runs)-1]; r.Status != baton.RunFailed || r.CostUSD != 0.5 || r.Error == "" || r.ExitCode == 0 {
		t.Errorf("failed run = %+v, want failed with cost, error and exit status kept", r)
	}
}

func TestReviewWithoutVerdictFails(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "a.go", Content: "package app\n"}}, Final: "done"},
		agenttest.Turn{Final: "Looks good to me!"},
	)
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, baton.DeliveryConfig{Agent: h.fake.CommandAgent(), PhaseTimeout: time.Minute}), "alice")
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview} {
		got, err := h.runner.Run(t.Context(), d.ID, p, "")
		if err != nil {
			t.Fatal(err)
		}
		d = got
	}
	if d.String() != "review/failed" || !strings.Contains(d.Error, "verdict") {
		t.Fatalf("review without a verdict = %s %q, want review/failed naming the verdict", d.String(), d.Error)
	}
	calls := h.fake.Calls(t)
	if len(calls[2].Schema) == 0 {
		t.Error("the review run was not given the verdict schema")
	}
}

func TestSystemPhasesSkipWithReason(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	// Put the delivery at verify with a work branch, as if review passed.
	gittest.Git(t, src, "branch", "baton/"+d.ID)
	setState(t, h, d.ID, baton.PhaseVerify)
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseVerify, "")
	if err != nil {
		t.Fatal(err)
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	var skip *baton.PhaseLogEntry
	for i := range log {
		if log[i].Status == baton.StatusSkipped {
			skip = &log[i]
		}
	}
	if skip == nil || skip.Phase != baton.PhaseVerify || !strings.Contains(skip.Note, "no --verify command") || skip.Verdict != "" {
		t.Fatalf("verify skip entry = %+v, want skipped with the reason and no verdict", skip)
	}
	if got.String() != "deploy/pending" {
		t.Errorf("after skipped verify: %s", got.String())
	}
	setState(t, h, d.ID, baton.PhaseObserve)
	got, err = h.runner.Run(t.Context(), d.ID, baton.PhaseObserve, "")
	if err != nil || got.String() != "close/succeeded" {
		t.Fatalf("observe without a probe → %v %v, want skipped then close", got, err)
	}
}

// setState moves a delivery to phase/pending, queued, through the store.
func setState(t testing.TB, h *harness, id string, p baton.Phase) {
	t.Helper()
	d, err := h.svc.Store().FindDeliveryByID(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	d.Phase, d.RunStatus, d.Queued = p, baton.StatusPending, true
	if err := h.svc.Store().UpdateDelivery(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// Deploy never clobbers the user's uncommitted changes on the base
// branch: it fails with a clear error and leaves the work tree as it was.
func TestLocalDeployProtectsUncommittedChanges(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	// The work branch changes README.md; the user has edited it too.
	gittest.Git(t, src, "checkout", "-q", "-b", "baton/"+d.ID)
	write(t, filepath.Join(src, "README.md"), "# app\n\nfrom the agent\n")
	gittest.Git(t, src, "commit", "-qam", "agent change")
	gittest.Git(t, src, "checkout", "-q", "main")
	write(t, filepath.Join(src, "README.md"), "# app\n\nmy uncommitted notes\n")
	setState(t, h, d.ID, baton.PhaseDeploy)
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseDeploy, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "deploy/failed" || !strings.Contains(got.Error, "uncommitted changes") {
		t.Fatalf("deploy = %s %q, want failed naming the uncommitted changes", got.String(), got.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "README.md")); string(b) != "# app\n\nmy uncommitted notes\n" {
		t.Errorf("the user's change was clobbered: %q", b)
	}
	if n := gittest.Git(t, src, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("main moved to %s commits", n)
	}
	// Once the user commits elsewhere (stashes), retry lands the merge.
	gittest.Git(t, src, "stash", "-q")
	if _, err := h.svc.Act(t.Context(), d.ID, delivery.Input{Action: delivery.ActRetry, Actor: "alice", Person: true}); err != nil {
		t.Fatal(err)
	}
	got, err = h.runner.Run(t.Context(), d.ID, baton.PhaseDeploy, "")
	if err != nil || got.String() != "observe/pending" {
		t.Fatalf("retried deploy = %v %v", got, err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "README.md")); !strings.Contains(string(b), "from the agent") {
		t.Errorf("README.md after deploy = %q", b)
	}
}

// A running delivery whose worker stopped beating is handed back: the
// agent run fails as lost, and the phase is queued again.
func TestReconcileLostWorker(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	cur, _ := h.svc.Store().FindDeliveryByID(t.Context(), d.ID)
	cur.RunStatus, cur.Attempt, cur.Owner, cur.HeartbeatAt = baton.StatusRunning, 1, "worker:dead", time.Now().Add(-time.Hour)
	if err := h.svc.Store().UpdateDelivery(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.Store().CreateAgentRun(t.Context(), &baton.AgentRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Attempt: 1, Agent: "claude", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	n, err := h.svc.Reconcile(t.Context(), time.Minute, "reconciler:test")
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d %v", n, err)
	}
	got, _ := h.svc.Store().FindDeliveryByID(t.Context(), d.ID)
	if got.String() != "plan/pending" || !got.Queued || got.Lost != 1 {
		t.Errorf("after reconcile: %s queued=%v lost=%d", got.String(), got.Queued, got.Lost)
	}
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if runs[0].Status != baton.RunFailed || !strings.Contains(runs[0].Error, "worker:dead lost") {
		t.Errorf("lost run = %+v", runs[0])
	}
}

// A worker that stops mid-run (SIGINT) releases the phase to the queue;
// a foreground run interrupted by its person is canceled instead.
func TestInterruptedRunIsReleasedOrCanceled(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText, Sleep: 30 * time.Second}, agenttest.Turn{Final: planText, Sleep: 30 * time.Second})
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	for _, foreground := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		r := *h.runner
		r.Foreground = foreground
		done := make(chan *baton.Delivery, 1)
		go func() {
			person := ""
			if foreground {
				person = "alice"
			}
			got, err := r.Run(ctx, d.ID, baton.PhasePlan, person)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		h.waitFor(d.ID, "plan to run", func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
		testenv.Until(10*time.Second, h.wake, func() bool {
			runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
			return slices.ContainsFunc(runs, func(x baton.AgentRun) bool { return x.Status == baton.RunRunning })
		})
		cancel()
		got := <-done
		runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
		last := runs[len(runs)-1]
		if !foreground {
			if got.String() != "plan/pending" || !got.Queued || last.Status != baton.RunCanceled || !strings.Contains(last.Error, "queued again") {
				t.Fatalf("released: %s queued=%v, run %+v", got.String(), got.Queued, last)
			}
			continue
		}
		if got.String() != "plan/failed" || got.Error != "canceled by alice" || last.Status != baton.RunCanceled {
			t.Fatalf("interrupted foreground run: %s %q, run %s", got.String(), got.Error, last.Status)
		}
	}
}

func TestPhaseTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText, Sleep: 30 * time.Second})
	c := cfg()
	c.PhaseTimeout = 300 * time.Millisecond
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	start := time.Now()
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "plan/failed" || !strings.Contains(got.Error, "did not finish within 300ms") {
		t.Fatalf("timed out plan = %s %q", got.String(), got.Error)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the timeout took %s to apply", time.Since(start))
	}
	runs, _ := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if len(runs) != 1 || runs[0].Status != baton.RunFailed || runs[0].EndedAt.IsZero() {
		t.Errorf("timed out run = %+v", runs)
	}
}

// Deploy and observe commands: deploy runs instead of merging; a failing
// probe fails observe with its output kept behind a check ref.
func TestDeployAndObserveCommands(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	c := cfg()
	marker := filepath.Join(t.TempDir(), "deployed")
	// A confined command writes only where it is allowed to.
	h.svc.Sandbox.Policy.Write = append(h.svc.Sandbox.Policy.Write, filepath.Dir(marker))
	c.DeployCommand = "sh -c 'echo $BATON_WORK_BRANCH $BATON_BASE_BRANCH > " + marker + "'"
	c.ObserveCommand = "sh -c 'echo probe down; exit 3'"
	c.ObserveWindow, c.ObserveEvery = time.Second, 10*time.Millisecond
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	gittest.Git(t, src, "branch", "baton/"+d.ID)
	setState(t, h, d.ID, baton.PhaseDeploy)
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseDeploy, "")
	if err != nil || got.String() != "observe/pending" {
		t.Fatalf("deploy = %v %v", got, err)
	}
	if b, _ := os.ReadFile(marker); string(b) != "baton/"+d.ID+" main\n" {
		t.Errorf("deploy command saw %q", b)
	}
	if n := gittest.Git(t, src, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("a deploy command also merged: main has %s commits", n)
	}
	got, err = h.runner.Run(t.Context(), d.ID, baton.PhaseObserve, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "observe/failed" || !strings.Contains(got.Error, "probe 1") || !strings.Contains(got.Error, "exit 3") || !strings.Contains(got.Error, "probe down") {
		t.Fatalf("observe = %s %q", got.String(), got.Error)
	}
	ref, ok := got.Ref(baton.RoleCheck, "observe_command")
	if !ok {
		t.Fatalf("no check ref for the failed probe: %+v", got.Refs)
	}
	if b, err := os.ReadFile(strings.TrimPrefix(ref.URL, "file://")); err != nil || !strings.Contains(string(b), "probe down") || !strings.Contains(string(b), "[exit 3;") {
		t.Errorf("probe log = %q %v", b, err)
	}
}

// A verify command that cannot even start is a failed check (exit 127,
// as in a shell), not a pipeline error.
func TestVerifyCommandNotFound(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	c := cfg()
	c.VerifyCommand = "no-such-verify-tool --all"
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	gittest.Git(t, src, "branch", "baton/"+d.ID)
	setState(t, h, d.ID, baton.PhaseVerify)
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseVerify, "")
	if err != nil || got.String() != "implement/pending" || got.Rounds != 1 {
		t.Fatalf("verify = %v %v", got, err)
	}
	if c, ok := got.Ref(baton.RoleCheck, "verify_command"); !ok || !strings.Contains(c.Label, "exit 127") {
		t.Errorf("check ref = %+v", c)
	}
}

// Two deliveries in flight on one repository both write docs/plan.md;
// neither merge carries it, so they do not conflict, and a docs/plan.md
// the repository already has is left alone.
func TestConcurrentDeliveriesDoNotConflictOnThePlan(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	write(t, filepath.Join(src, "docs", "plan.md"), "the team's own plan\n")
	gittest.Git(t, src, "add", "-A")
	gittest.Git(t, src, "commit", "-qm", "team plan")
	h := newHarness(t, 0)
	var ids []string
	for i, name := range []string{"a", "b"} {
		nd := newDelivery(src, cfg())
		nd.Summary = "Deliver " + name
		nd.ID = baton.DeliveryID(src, nd.Summary)
		d, _, err := h.svc.Insert(t.Context(), nd, "alice")
		if err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, src, "checkout", "-q", "-b", "baton/"+d.ID, "main")
		write(t, filepath.Join(src, "docs", "plan.md"), fmt.Sprintf("plan %d\n", i))
		write(t, filepath.Join(src, name+".txt"), name+"\n")
		gittest.Git(t, src, "add", "-A")
		gittest.Git(t, src, "commit", "-qm", "work "+name)
		gittest.Git(t, src, "checkout", "-q", "main")
		ids = append(ids, d.ID)
	}
	for _, id := range ids {
		setState(t, h, id, baton.PhaseDeploy)
		got, err := h.runner.Run(t.Context(), id, baton.PhaseDeploy, "")
		if err != nil || got.RunStatus == baton.StatusFailed {
			t.Fatalf("deploy %s = %v %v", id, got, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(src, "docs", "plan.md")); string(b) != "the team's own plan\n" {
		t.Errorf("docs/plan.md on main = %q", b)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			t.Errorf("%s not merged: %v", f, err)
		}
	}
}
