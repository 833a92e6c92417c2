package delivery_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// The turns of a delivery whose implement writes greet.go and whose
// review passes.
var greetTurns = []agenttest.Turn{
	{Final: planText},
	{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "Added greet.go."},
	{Final: map[string]string{"verdict": "pass", "summary": "fine", "feedback": ""}},
}

// runPhases runs d's phases one after the other and returns d after the
// last.
func runPhases(t *testing.T, h *harness, d *baton.Delivery, phases ...baton.Phase) *baton.Delivery {
	t.Helper()
	for _, p := range phases {
		var err error
		if d, err = h.runner.Run(t.Context(), d.ID, p, ""); err != nil {
			t.Fatal(err)
		}
		if d.RunStatus == baton.StatusFailed {
			t.Fatalf("%s failed: %s", p, d.Error)
		}
	}
	return d
}

// workFiles lists the files of d's work branch in the source repository.
func workFiles(t *testing.T, src string, d *baton.Delivery) []string {
	t.Helper()
	return strings.Fields(gittest.Git(t, src, "ls-tree", "-r", "--name-only", d.WorkBranch()))
}

// After plan and implement baton knows the worktree clean, having staged
// all of it with no agent running: the next phase's checkout starts no
// box to run git status. Plan checks out and commits (two boxes),
// implement only commits, review starts none of baton's own.
func TestWorktreeBatonLeftCleanNeedsNoStatus(t *testing.T) {
	t.Parallel()
	needBox(t)
	src := sourceRepo(t)
	h := newHarness(t, 0, greetTurns...)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	ws := h.svc.Workspaces()
	var boxes []int64
	for _, p := range []baton.Phase{baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview} {
		before := ws.GitBoxes()
		d = runPhases(t, h, d, p)
		boxes = append(boxes, ws.GitBoxes()-before)
	}
	if want := []int64{2, 1, 0}; !slices.Equal(boxes, want) {
		t.Errorf("boxes of baton's git in plan, implement, review = %v, want %v", boxes, want)
	}
	if d.Phase != baton.PhaseVerify {
		t.Errorf("after review the delivery is %s (%s), want verify", d.String(), d.Error)
	}
}

func needBox(t *testing.T) {
	t.Helper()
	st := sandbox.Probe()
	for _, def := range st.Defences {
		if !def.Enforced && (def.Name == sandbox.DefFiles || def.Name == sandbox.DefProcesses) {
			t.Skipf("this machine's boxes lack %s: baton never trusts what it knows of a worktree here", def.Name)
		}
	}
}

// Whatever may have written the worktree after baton left it clean makes
// the next phase look again: each way below leaves stray.txt in the
// worktree behind baton's back after plan, and implement's commit must
// not hold it (git status finds it, the checkout removes it).
func TestWorktreeWrittenBehindBatonsBackIsCaught(t *testing.T) {
	t.Parallel()
	needBox(t)
	ways := []struct {
		name   string
		before func(h *harness)
		behind func(t *testing.T, h *harness, d *baton.Delivery, wt string)
	}{{
		// What the plan's agent started may outlive its box: the test
		// writes as that process would.
		name:   "a process left by an agent whose box had no pid namespace",
		before: func(h *harness) { h.svc.Sandbox.NoNamespaces = true },
	}, {
		name: "another worker process gave the worktree to its agent",
		behind: func(t *testing.T, h *harness, d *baton.Delivery, wt string) {
			other := &forge.Workspaces{Dir: h.dataDir}
			co, err := other.Checkout(t.Context(), d, forge.Local{})
			if err != nil {
				t.Fatal(err)
			}
			c := h.svc.Sandbox
			co.Confine(&c)
		},
	}, {
		// Without Landlock its agents reach every worktree of the data
		// directory.
		name: "a worker process with unconfined agents shares the data directory",
		behind: func(t *testing.T, h *harness, d *baton.Delivery, wt string) {
			other := &forge.Workspaces{Dir: h.dataDir}
			co, done, err := other.Observe(t.Context(), d, forge.Local{})
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			co.Confine(&sandbox.Confinement{Mode: sandbox.ModeOff})
		},
	}, {
		name: "baton's index replaced",
		behind: func(t *testing.T, h *harness, d *baton.Delivery, wt string) {
			index := filepath.Join(strings.TrimSuffix(h.svc.Workspaces().CacheDir(d.Repository), ".git")+".state", d.ID, "index")
			b, err := os.ReadFile(index)
			if err != nil {
				t.Fatal(err)
			}
			write(t, index+".new", string(b))
			if err := os.Rename(index+".new", index); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name: "the worktree's registration broken",
		behind: func(t *testing.T, h *harness, d *baton.Delivery, wt string) {
			if err := os.Remove(filepath.Join(wt, ".git")); err != nil {
				t.Fatal(err)
			}
		},
	}}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			src := sourceRepo(t)
			h := newHarness(t, 0, greetTurns...)
			if way.before != nil {
				way.before(h)
			}
			d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
			if err != nil {
				t.Fatal(err)
			}
			d = runPhases(t, h, d, baton.PhasePlan)
			wt := filepath.Join(h.dataDir, "worktrees", d.ID)
			if way.behind != nil {
				way.behind(t, h, d, wt)
			}
			write(t, filepath.Join(wt, "stray.txt"), "written behind baton's back\n")
			d = runPhases(t, h, d, baton.PhaseImplement)
			if files := workFiles(t, src, d); slices.Contains(files, "stray.txt") || !slices.Contains(files, "greet.go") {
				t.Errorf("the work branch after implement holds %v: want greet.go and not stray.txt", files)
			}
		})
	}
}

// A reviewer's box may write the worktree: what it left is gone before
// the next implement round, which commits only its own work.
func TestReviewersLeftoversAreCleanedBeforeImplement(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		greetTurns[0], greetTurns[1],
		agenttest.Turn{Files: []agenttest.File{{Path: "stray.txt", Content: "the reviewer's scratch\n"}},
			Final: map[string]string{"verdict": "not_pass", "summary": "Needs a doc comment", "feedback": "Document greet.go"}},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "// Package app greets.\npackage app\n"}}, Final: "Documented."},
	)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	d = runPhases(t, h, d, baton.PhasePlan, baton.PhaseImplement, baton.PhaseReview)
	if d.Phase != baton.PhaseImplement {
		t.Fatalf("after a failing review the delivery is %s (%s), want implement", d.String(), d.Error)
	}
	d = runPhases(t, h, d, baton.PhaseImplement)
	if files := workFiles(t, src, d); slices.Contains(files, "stray.txt") {
		t.Errorf("the work branch after the second implement holds the reviewer's stray.txt: %v", files)
	}
}

// With --sandbox=off a process the plan's agent started in a session of
// its own outlives the run for real and writes the worktree after baton
// committed: implement still finds and removes what it wrote.
func TestProcessThatOutlivedItsRunIsCaught(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready, gate, ack := filepath.Join(dir, "ready"), filepath.Join(dir, "gate"), filepath.Join(dir, "ack")
	for _, p := range []string{ready, gate, ack} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src := sourceRepo(t)
	plan := greetTurns[0]
	// The agent waits until the process is in its session, out of the
	// run's process group, before it ends.
	plan.Commands = []agenttest.Command{{Argv: []string{"sh", "-c",
		`setsid sh -c 'echo up > "$1"; read go < "$2"; echo "written after the run" > stray.txt; echo done > "$3"' outliver "$1" "$2" "$3" </dev/null >/dev/null 2>&1 &
read up < "$1"`, "plan", ready, gate, ack}}}
	h := newHarness(t, 0, plan, greetTurns[1], greetTurns[2])
	h.svc.Sandbox.Mode = sandbox.ModeOff
	d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	d = runPhases(t, h, d, baton.PhasePlan)
	released := make(chan error, 1)
	go func() {
		// Opening a named pipe waits for its other end: the process
		// must still be there to take the gate and answer.
		err := os.WriteFile(gate, []byte("go\n"), 0)
		if err == nil {
			var f *os.File
			if f, err = os.Open(ack); err == nil {
				_, err = io.ReadAll(f)
				f.Close()
			}
		}
		released <- err
	}()
	select {
	case err := <-released:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the process the plan's agent left did not answer within 60s")
	}
	d = runPhases(t, h, d, baton.PhaseImplement)
	if files := workFiles(t, src, d); slices.Contains(files, "stray.txt") || !slices.Contains(files, "greet.go") {
		t.Errorf("the work branch after implement holds %v: want greet.go and not stray.txt", files)
	}
}

// A person pushes to the work branch between implement and review. The
// worktree baton left clean is at implement's commit: review's checkout
// moves it to the pushed commit with no git status first, or with no box
// at all when the pushed commit has the same tree.
func TestWorkBranchMovedBehindBatonIsCheckedOut(t *testing.T) {
	t.Parallel()
	needBox(t)
	for _, same := range []bool{false, true} {
		t.Run(map[bool]string{false: "new files", true: "same tree"}[same], func(t *testing.T) {
			t.Parallel()
			src := sourceRepo(t)
			h := newHarness(t, 0, greetTurns...)
			d, _, err := h.svc.Insert(t.Context(), newDelivery(src, cfg()), "alice")
			if err != nil {
				t.Fatal(err)
			}
			d = runPhases(t, h, d, baton.PhasePlan, baton.PhaseImplement)
			gittest.Git(t, src, "checkout", "-q", d.WorkBranch())
			if same {
				gittest.Git(t, src, "commit", "-q", "--allow-empty", "-m", "a person's empty commit")
			} else {
				write(t, filepath.Join(src, "person.txt"), "a person's fix\n")
				gittest.Git(t, src, "add", "person.txt")
				gittest.Git(t, src, "commit", "-q", "-m", "a person's fix")
			}
			gittest.Git(t, src, "checkout", "-q", "main")
			ws := h.svc.Workspaces()
			before := ws.GitBoxes()
			d = runPhases(t, h, d, baton.PhaseReview)
			wantBoxes := int64(1)
			if same {
				wantBoxes = 0
			}
			if n := ws.GitBoxes() - before; n != wantBoxes {
				t.Errorf("review's checkout started %d boxes of baton's git, want %d", n, wantBoxes)
			}
			_, err = os.Stat(filepath.Join(h.dataDir, "worktrees", d.ID, "person.txt"))
			if same != os.IsNotExist(err) {
				t.Errorf("after review the worktree's person.txt: %v; the pushed commit is not what review saw", err)
			}
			co, err := ws.Checkout(t.Context(), d, forge.Local{})
			if err != nil {
				t.Fatal(err)
			}
			if head := strings.TrimSpace(gittest.Git(t, src, "rev-parse", d.WorkBranch())); co.Start != head {
				t.Errorf("the worktree is at %s, the work branch at %s", co.Start, head)
			}
		})
	}
}
