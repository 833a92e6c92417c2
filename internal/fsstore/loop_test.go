package fsstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func testLoop(prompt string) *baton.Loop {
	return &baton.Loop{Prompt: prompt, Iteration: 1, MaxIterations: baton.DefaultLoopMaxIterations, CompletionPromises: []string{"DONE"}}
}

func TestLoopsCreateFindListResolve(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)
	a := testLoop("Fix the tests\n---\nthen lint")
	a.CreatedAt = t0
	if err := s.CreateLoop(ctx, a); err != nil {
		t.Fatal(err)
	}
	if a.ID != "20261122T093400Z-fix-the-tests" || a.Status != baton.LoopActive {
		t.Fatalf("CreateLoop = id %q status %q", a.ID, a.Status)
	}
	b := testLoop("Fix the tests")
	b.CreatedAt = t0 // same second: the id gets a suffix
	if err := s.CreateLoop(ctx, b); err != nil {
		t.Fatal(err)
	}
	if b.ID != "20261122T093400Z-fix-the-tests-2" {
		t.Fatalf("second loop id = %q, want a -2 suffix", b.ID)
	}
	got, err := s.FindLoopByID(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("FindLoopByID mismatch (-want +got):\n%s", diff)
	}
	all, warns, err := s.FindLoops(LoopFilter{})
	if err != nil || len(warns) != 0 || len(all) != 2 {
		t.Fatalf("FindLoops = %d loops, %v, %v", len(all), warns, err)
	}
	if _, err := s.ResolveLoop("fix-the-tests"); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("ResolveLoop(ambiguous) error = %v, want Conflict", err)
	}
	if l, err := s.ResolveLoop("fix-the-tests-2"); err != nil || l.ID != b.ID {
		t.Errorf("ResolveLoop(slug) = %v, %v", l, err)
	}
	if _, err := s.ResolveLoop("nope"); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("ResolveLoop(nope) error = %v, want NotFound", err)
	}
	if _, err := s.FindLoopByID("../x"); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("FindLoopByID(../x) error = %v, want Invalid", err)
	}
	// A corrupt loop file is reported and skipped in listings.
	if err := os.WriteFile(filepath.Join(s.Dir(), LoopsDir, "broken.md"), []byte("not a loop"), 0o644); err != nil {
		t.Fatal(err)
	}
	all, warns, err = s.FindLoops(LoopFilter{Status: baton.LoopActive})
	if err != nil || len(warns) != 1 || len(all) != 2 {
		t.Fatalf("FindLoops with a corrupt file = %d loops, %v, %v", len(all), warns, err)
	}
	if _, err := s.FindLoopByID("broken"); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("FindLoopByID(corrupt) error = %v, want Invalid", err)
	}
}

func TestUpdateLoop(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	l := testLoop("go")
	if err := s.CreateLoop(ctx, l); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(s.Dir(), LoopsDir, l.ID+".md"))
	got, err := s.UpdateLoop(ctx, l.ID, func(l *baton.Loop) error { l.Iteration = 99; return ErrUnchanged })
	if err != nil || got.Iteration != 99 {
		t.Fatalf("UpdateLoop(ErrUnchanged) = %v, %v", got, err)
	}
	after, _ := os.ReadFile(filepath.Join(s.Dir(), LoopsDir, l.ID+".md"))
	if string(before) != string(after) {
		t.Error("UpdateLoop with ErrUnchanged wrote the file")
	}
	// An update that breaks an invariant is refused and writes nothing.
	if _, err := s.UpdateLoop(ctx, l.ID, func(l *baton.Loop) error { l.Status = baton.LoopDone; return nil }); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("UpdateLoop(done without outcome) error = %v, want Invalid", err)
	}
	got, err = s.UpdateLoop(ctx, l.ID, func(l *baton.Loop) error { l.Status, l.Outcome = baton.LoopDone, "DONE"; return nil })
	if err != nil || got.Status != baton.LoopDone {
		t.Fatalf("UpdateLoop(done) = %v, %v", got, err)
	}
	if _, err := s.UpdateLoop(ctx, "missing", func(*baton.Loop) error { return nil }); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("UpdateLoop(missing) error = %v, want NotFound", err)
	}
}

func TestForegroundPointer(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if id, err := s.ForegroundLoopID(); id != "" || err != nil {
		t.Fatalf("ForegroundLoopID() on a new store = %q, %v", id, err)
	}
	a, b := testLoop("a"), testLoop("b")
	for _, l := range []*baton.Loop{a, b} {
		if err := s.CreateLoop(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if prev, err := s.SetForegroundLoop(ctx, a.ID); prev != "" || err != nil {
		t.Fatalf("SetForegroundLoop(a) = %q, %v", prev, err)
	}
	raw, _ := os.ReadFile(filepath.Join(s.Dir(), IndexesDir, ActiveLoopFile))
	if string(raw) != `{"active_loop_id":"`+a.ID+`"}`+"\n" {
		t.Errorf("active-loop.json = %q", raw)
	}
	if prev, err := s.SetForegroundLoop(ctx, b.ID); prev != a.ID || err != nil {
		t.Fatalf("SetForegroundLoop(b) = %q, %v", prev, err)
	}
	// Ending a loop that is no longer foreground leaves the pointer alone.
	if cleared, err := s.ClearForegroundLoop(ctx, a.ID); cleared || err != nil {
		t.Fatalf("ClearForegroundLoop(a) = %v, %v; want false", cleared, err)
	}
	if l, err := s.ForegroundLoop(); err != nil || l.ID != b.ID {
		t.Fatalf("ForegroundLoop() = %v, %v; want b", l, err)
	}
	if cleared, err := s.ClearForegroundLoop(ctx, b.ID); !cleared || err != nil {
		t.Fatalf("ClearForegroundLoop(b) = %v, %v; want true", cleared, err)
	}
	if l, err := s.ForegroundLoop(); l != nil || err != nil {
		t.Fatalf("ForegroundLoop() after clear = %v, %v", l, err)
	}
	if _, err := s.SetForegroundLoop(ctx, "../etc"); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("SetForegroundLoop(../etc) error = %v, want Invalid", err)
	}
	// A corrupt pointer is an error to read and is repaired by a set.
	p := filepath.Join(s.Dir(), IndexesDir, ActiveLoopFile)
	if err := os.WriteFile(p, []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForegroundLoopID(); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("ForegroundLoopID(corrupt) error = %v, want Invalid", err)
	}
	if _, err := s.SetForegroundLoop(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if id, err := s.ForegroundLoopID(); id != a.ID || err != nil {
		t.Errorf("ForegroundLoopID() after repair = %q, %v", id, err)
	}
	// A pointer to a deleted loop reads as no loop.
	if err := os.Remove(filepath.Join(s.Dir(), LoopsDir, a.ID+".md")); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ForegroundLoop(); l != nil || err != nil {
		t.Errorf("ForegroundLoop() to a missing loop = %v, %v", l, err)
	}
}

// Eight processes increment one loop's iteration at once, as racing stop
// hooks would: no increment is lost.
func TestConcurrentLoopIncrementsAcrossProcesses(t *testing.T) {
	s := newStore(t)
	l := testLoop("race")
	l.MaxIterations = 0
	if err := s.CreateLoop(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 25
	var cmds []*exec.Cmd
	for w := 0; w < workers; w++ {
		c := helperCmd(t, "BATON_FSSTORE_HELPER=loop-increment", "ROOT="+s.Root(), "ID="+l.ID, "N="+strconv.Itoa(perWorker))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("incrementer failed: %v", err)
		}
	}
	got, err := s.FindLoopByID(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + workers*perWorker; got.Iteration != want {
		t.Errorf("iteration after %d increments = %d, want %d", workers*perWorker, got.Iteration, want)
	}
}
