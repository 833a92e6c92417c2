package fsstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton"
)

// A hook's store checks each directory once per run (Options.OneShot),
// and keeps open the directories it opened, so an agent can swap a
// directory it already opened for a named pipe or a link while the hook
// runs. Listing the directory then must neither block on the pipe nor
// follow the link: it lists the directory first opened, or is refused.
func TestSwappedDirectoryIsNeitherFollowedNorWaitedOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	outside := t.TempDir()
	swaps := map[string]func(path string) error{
		"a named pipe": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"a link":       func(p string) error { return os.Symlink(outside, p) },
	}
	for name, swap := range swaps {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := Open(t.TempDir(), Options{OneShot: true})
			if _, err := s.Init(ctx); err != nil {
				t.Fatal(err)
			}
			l := &baton.Loop{Prompt: "p", MaxIterations: 3}
			if err := s.CreateLoop(ctx, l); err != nil {
				t.Fatal(err)
			}
			if got, _, err := s.ListLoops(LoopFilter{}); err != nil || len(got) != 1 {
				t.Fatalf("ListLoops = %d loops, %v; want the one", len(got), err)
			}
			// What the link leads to: a loop of its own.
			b, err := os.ReadFile(loops.path(s, l.ID))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "20260101T000000Z-out.md"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			dir := s.path(LoopsDir)
			if err := os.Rename(dir, dir+".away"); err != nil {
				t.Fatal(err)
			}
			if err := swap(dir); err != nil {
				t.Fatal(err)
			}
			type result struct {
				ids  []string
				warn []error
				err  error
			}
			done := make(chan result, 2)
			go func() {
				got, warn, err := s.ListLoops(LoopFilter{})
				var ids []string
				for _, l := range got {
					ids = append(ids, l.ID)
				}
				done <- result{ids, warn, err}
			}()
			go func() {
				_, err := loops.rebuildIndex(s, dirStamp{})
				done <- result{err: err}
			}()
			for range 2 {
				select {
				case r := <-done:
					if slices.Contains(r.ids, "20260101T000000Z-out") || len(r.warn) != 0 {
						t.Errorf("a listing through %s = loops %v, warnings %v, error %v; want the directory first opened, or a refusal", name, r.ids, r.warn, r.err)
					}
				case <-time.After(20 * time.Second):
					// Unblock the open waiting for a writer, then fail.
					if f, err := os.OpenFile(dir, os.O_RDWR, 0); err == nil {
						defer f.Close()
					}
					t.Fatalf("a listing waited on %s in the store", name)
				}
			}
		})
	}
}

// An index that cannot be kept current is removed; with the indexes
// directory swapped for a link since it was checked, the removal must
// not reach the file of the same name the link leads to.
func TestRemovedIndexStaysInTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := Open(t.TempDir(), Options{OneShot: true})
	if _, err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.mkIndexes(); err != nil {
		t.Fatal(err)
	}
	p := packets.indexPath(s)
	rel, err := filepath.Rel(s.path(IndexesDir), p)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	victim := filepath.Join(outside, rel)
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("not baton's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := s.path(IndexesDir)
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	removeIndex(s, packets.kind, p)
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("removing the index through a link removed %s outside the store: %v", victim, err)
	}
}
