package loop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	st := fsstore.Open(t.TempDir(), fsstore.Options{Now: func() time.Time { clock = clock.Add(time.Minute); return clock }})
	if _, err := Resolve(st, Current, ""); !errors.Is(err, ErrNoForeground) || baton.ErrorCode(err) != baton.NotFound {
		t.Fatalf("Resolve(current) in an empty store = %v, want ErrNoForeground", err)
	}
	fix, _, err := Start(ctx, st, StartRequest{Prompt: "Fix the tests", MaxIterations: -1})
	if err != nil {
		t.Fatal(err)
	}
	docs, _, err := Start(ctx, st, StartRequest{Prompt: "Write the docs", MaxIterations: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  string
		want string
		code baton.Code
	}{
		{"", docs.ID, ""},
		{"current", docs.ID, ""},
		{" current ", docs.ID, ""},
		{fix.ID, fix.ID, ""},
		{"fix", fix.ID, ""},          // a prefix of the slug
		{"2026", "", baton.Conflict}, // both
		{"nothing", "", baton.NotFound},
		{"../x", "", baton.Invalid},
	} {
		l, err := Resolve(st, tt.ref, "")
		switch {
		case baton.ErrorCode(err) != tt.code:
			t.Errorf("Resolve(%q) error %v, want code %q", tt.ref, err, tt.code)
		case err == nil && l.ID != tt.want:
			t.Errorf("Resolve(%q) = %s, want %s", tt.ref, l.ID, tt.want)
		}
	}

	// A damaged pointer hides only the foreground loop: a named loop
	// still resolves.
	pointer := filepath.Join(st.IndexDir(), fsstore.ForegroundLoopsFile)
	if err := os.WriteFile(pointer, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(st, Current, ""); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Resolve(current) with a corrupt pointer = %v, want Invalid", err)
	}
	if l, err := Resolve(st, "fix", ""); err != nil || l.ID != fix.ID {
		t.Errorf("Resolve(fix) with a corrupt pointer = %v, %v, want %s", l, err, fix.ID)
	}

	// A pointer at a loop that is gone reads as none.
	gone := &baton.Loop{ID: "20261122T000000Z-gone", Prompt: "gone"}
	if _, err := st.AdoptLoop(ctx, "", gone); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(st, "", ""); !errors.Is(err, ErrNoForeground) {
		t.Errorf("Resolve() with a dangling pointer = %v, want ErrNoForeground", err)
	}
}

// Each session's "current" is its own foreground loop; outside a session
// it is the only loop there is, and with several sessions' loops it names
// them instead of guessing.
func TestResolveCurrentPerSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	st := fsstore.Open(t.TempDir(), fsstore.Options{Now: func() time.Time { clock = clock.Add(time.Minute); return clock }})
	a, _, err := Start(ctx, st, StartRequest{Prompt: "Fix the tests", MaxIterations: -1, SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := Resolve(st, Current, ""); err != nil || l.ID != a.ID {
		t.Fatalf("Resolve(current) outside a session with one loop = %v, %v, want %s", l, err, a.ID)
	}
	if _, err := Resolve(st, Current, "s2"); !errors.Is(err, ErrNoForeground) {
		t.Fatalf("Resolve(current) in a session without a loop = %v, want ErrNoForeground", err)
	}
	b, _, err := Start(ctx, st, StartRequest{Prompt: "Write the docs", MaxIterations: -1, SessionID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	for session, want := range map[string]string{"s1": a.ID, "s2": b.ID} {
		if l, err := Resolve(st, Current, session); err != nil || l.ID != want {
			t.Errorf("Resolve(current) in session %s = %v, %v, want %s", session, l, err, want)
		}
	}
	if _, err := Resolve(st, Current, ""); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("Resolve(current) outside a session with two sessions' loops = %v, want Conflict", err)
	}
	// An unbound loop is every session's without a loop of its own, and
	// the terminal's.
	c, _, err := Start(ctx, st, StartRequest{Prompt: "Port the handlers", MaxIterations: -1})
	if err != nil {
		t.Fatal(err)
	}
	for session, want := range map[string]string{"": c.ID, "s3": c.ID, "s1": a.ID} {
		if l, err := Resolve(st, Current, session); err != nil || l.ID != want {
			t.Errorf("Resolve(current) in session %q = %v, %v, want %s", session, l, err, want)
		}
	}
	// Activate --rebind hands a loop to another session: its slot moves.
	if _, _, err := Activate(ctx, st, a.ID, true, "s4", time.Now()); err != nil {
		t.Fatal(err)
	}
	if l, err := Resolve(st, Current, "s4"); err != nil || l.ID != a.ID {
		t.Errorf("Resolve(current) in s4 after the rebind = %v, %v, want %s", l, err, a.ID)
	}
	if l, err := Resolve(st, Current, "s1"); err != nil || l.ID != c.ID {
		t.Errorf("Resolve(current) in s1 after its loop moved = %v, %v, want the unbound %s", l, err, c.ID)
	}
}
