package scalegen

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/safefile"
)

// TestGenerateSmall makes a small instance and checks it is what the
// benchmark says it measures: the files git tracks and does not, a store
// baton reads without a warning, the log's lines, the foreground loop.
func TestGenerateSmall(t *testing.T) {
	t.Parallel()
	spec := Spec{Name: "test", Tracked: 250, Untracked: 30, Packets: 12, Loops: 3, LogLines: 500}
	var logged []string
	in, err := Cached(t.TempDir(), spec, func(f string, a ...any) { logged = append(logged, f) })
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) == 0 {
		t.Errorf("Cached did not say it generated")
	}
	again, err := Cached(filepath.Dir(in.Dir), spec, func(f string, a ...any) { t.Errorf("Cached generated a cached instance again: "+f, a...) })
	if err != nil || again.Dir != in.Dir {
		t.Fatalf("Cached again = %v, %v; want %s", again.Dir, err, in.Dir)
	}
	if err := in.Reset(); err != nil {
		t.Fatal(err)
	}
	repo := in.Repo()
	if n := lines(t, repo, "ls-files"); n != spec.Tracked {
		t.Errorf("git ls-files lists %d files, want %d", n, spec.Tracked)
	}
	if n := lines(t, repo, "ls-files", "--others", "--exclude-standard", "--", ":!.agent"); n != spec.Untracked {
		t.Errorf("git lists %d untracked files, want %d", n, spec.Untracked)
	}

	st := fsstore.Open(repo, fsstore.Options{})
	ps, warnings, err := st.FindPackets(fsstore.PacketFilter{})
	if err != nil || len(warnings) > 0 || len(ps) != spec.Packets {
		t.Fatalf("FindPackets = %d packets, %v, %v; want %d and no warnings", len(ps), warnings, err, spec.Packets)
	}
	if ps[0].Status != baton.PacketDraft {
		t.Errorf("the newest packet is %s, want a draft", ps[0].Status)
	}
	ls, warnings, err := st.FindLoops(fsstore.LoopFilter{})
	if err != nil || len(warnings) > 0 || len(ls) != spec.Loops {
		t.Fatalf("FindLoops = %d loops, %v, %v; want %d and no warnings", len(ls), warnings, err, spec.Loops)
	}
	fg, err := st.ForegroundLoop(Session)
	if err != nil || fg == nil || fg.Status != baton.LoopActive || fg.SessionID != Session || fg.MaxIterations != 0 {
		t.Fatalf("ForegroundLoop = %+v, %v; want an active unbounded loop bound to %s", fg, err, Session)
	}
	stats, err := st.ScanRelevantFiles(func(baton.RelevantFile) error { return nil })
	confirmed := 2 * spec.Packets // each handoff records its two confirmed files
	if err != nil || stats.Corrupt > 0 || stats.Lines != spec.LogLines+confirmed {
		t.Errorf("the log has %+v, %v; want %d lines, none corrupt", stats, err, spec.LogLines+confirmed)
	}
	list, err := st.Files(fsstore.FilesRequest{})
	if err != nil || len(list.Files) == 0 || list.Since == nil || list.Since.ID != ps[0].ID {
		t.Errorf("Files() = %d files since %v, %v; want the last session's files since the newest packet", len(list.Files), list.Since, err)
	}
	if _, err := safefile.ReadFile(filepath.Join(st.Dir(), ".gitignore"), 1<<10); err != nil {
		t.Errorf("the store has no .gitignore: %v", err)
	}
}

func lines(t *testing.T, dir string, args ...string) int {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return len(strings.Fields(string(out)))
}
