package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

// A state file as ralph-loop's setup script writes it; the prompt holds a
// "---" line that ralph itself used to drop.
const ralphStateFile = `---
active: true
iteration: 4
session_id: 5b1c0a2e-1111-4222-8333-944445555666
max_iterations: 10
completion_promise: "ALL TESTS PASS"
started_at: "2026-11-22T08:00:00Z"
---

Make the test suite pass.
---
Fix one failure per iteration.
`

func TestMigrateRalph(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.write(".claude/ralph-loop.local.md", ralphStateFile)
	r := e.ok("src", "", "migrate", "ralph")
	id := e.foreground()
	if id == "" || !strings.Contains(r.stdout, "as loop "+id+" (active, iteration 4/10, promises ALL TESTS PASS)") {
		t.Fatalf("migrate ralph = %q, foreground %q", r.stdout, id)
	}
	l := e.loop(id)
	if l.Prompt != "Make the test suite pass.\n---\nFix one failure per iteration." || l.SessionID != "5b1c0a2e-1111-4222-8333-944445555666" || l.Iteration != 4 || l.MaxIterations != 10 {
		t.Errorf("imported loop = %+v", l)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".claude/ralph-loop.local.md.baton-imported")); err != nil {
		t.Errorf("state file not renamed: %v", err)
	}
	// The imported loop runs: the stop from its session continues it.
	if o := e.stop("5b1c0a2e-1111-4222-8333-944445555666", e.dir, ptr("<promise>ALL TESTS PASS</promise>"), false); !strings.Contains(o.SystemMessage, "done (ALL TESTS PASS) at iteration 4/10") {
		t.Errorf("stop after import = %+v", o)
	}

	// Inactive, unbounded, no promise; --keep leaves the file.
	e2 := newEnv(t)
	e2.gitRepo()
	e2.write("state.md", "---\nactive: false\niteration: 1\nsession_id: \nmax_iterations: 0\ncompletion_promise: null\n---\n\nkeep going\n")
	e2.ok("", "", "migrate", "ralph", "--file", "state.md", "--keep")
	ls, _, _ := e2.store().FindLoops(fsFilter())
	if len(ls) != 1 || ls[0].Status != baton.LoopPaused || ls[0].MaxIterations != 0 || len(ls[0].CompletionPromises) != 0 || e2.foreground() != "" {
		t.Errorf("paused import = %+v", ls)
	}
	if _, err := os.Stat(filepath.Join(e2.dir, "state.md")); err != nil {
		t.Error("--keep removed the file")
	}
	for _, bad := range []string{"no frontmatter", "---\niteration: many\n---\nx\n", "---\nactive: true\n---\n\n"} {
		e2.write("bad.md", bad)
		if r := e2.run("", "", "migrate", "ralph", "--file", "bad.md"); r.code != ExitUsage {
			t.Errorf("migrate ralph %q = exit %d, %s", bad, r.code, r.stderr)
		}
	}
	if r := e2.run("", "", "migrate", "ralph"); r.code != ExitError || !strings.Contains(r.stderr, "no ralph-loop state") {
		t.Errorf("missing state file = exit %d, %s", r.code, r.stderr)
	}
}

func TestMigrateFactoryCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := t.TempDir()
	e.vars["HOME"] = home
	cmds := filepath.Join(home, ".factory", "commands")
	if err := os.MkdirAll(cmds, 0o755); err != nil {
		t.Fatal(err)
	}
	old := "---\ndescription: my handoff\n---\nWrite a handoff to ~/.handoffs/$ARGUMENTS.md\n"
	if err := os.WriteFile(filepath.Join(cmds, "handoff.md"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.ok("", "", "migrate", "factory-commands", "--dry-run")
	if b, _ := os.ReadFile(filepath.Join(cmds, "handoff.md")); string(b) != old || !strings.Contains(r.stdout, "dry run") {
		t.Fatalf("dry run wrote: %s", r.stdout)
	}
	e.ok("", "", "migrate", "factory-commands")
	backup, _ := os.ReadFile(filepath.Join(cmds, "handoff.md.baton-backup-20261122T093400Z"))
	if string(backup) != old {
		t.Errorf("backup = %q", backup)
	}
	for _, n := range []string{"handoff.md", "pickup.md"} {
		b, err := os.ReadFile(filepath.Join(cmds, n))
		if err != nil || !strings.Contains(string(b), "baton-managed") || !strings.Contains(string(b), "/opt/baton/bin/baton") {
			t.Errorf("%s = %q, %v", n, b, err)
		}
	}
	if r := e.ok("", "", "migrate", "factory-commands"); strings.Count(r.stdout, "unchanged") != 2 {
		t.Errorf("second migrate = %q", r.stdout)
	}
}

func TestInstallCommandJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["HOME"] = t.TempDir()
	r := e.ok("sub", "", "install", "droid", "--dry-run", "--json")
	if !strings.HasPrefix(r.stdout, "{\n  \"schema_version\": 1,") || !strings.Contains(r.stdout, `"dry_run": true`) || !strings.Contains(r.stdout, e.dir+"/.factory/hooks.json") {
		t.Errorf("install --dry-run --json = %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".factory")); !os.IsNotExist(err) {
		t.Error("dry run wrote files")
	}
	e.ok("", "", "install", "droid")
	r = e.ok("", "", "install", "droid")
	if !strings.Contains(r.stdout, "nothing to change") {
		t.Errorf("second install = %s", r.stdout)
	}
	// The project's hooks call baton from PATH, and there is none:
	// installed and broken, so doctor exits 1.
	r = e.run("", "", "doctor", "--no-probe", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"harness": "droid",
      "scope": "project"`) || !strings.Contains(r.stdout, `"broken": [`) || !strings.Contains(r.stdout, "calls baton from PATH, and there is none") {
		t.Errorf("doctor --json = %d %s", r.code, r.stdout)
	}
	e.ok("", "", "uninstall", "droid")
	if _, err := os.Stat(filepath.Join(e.dir, ".factory/hooks.json")); !os.IsNotExist(err) {
		t.Error("uninstall left hooks.json")
	}
	if r := e.run("", "", "install", "cursor"); r.code != ExitUsage {
		t.Errorf("install cursor = exit %d", r.code)
	}
	if r := e.run("", "", "install", "claude", "--scope", "global"); r.code != ExitUsage {
		t.Errorf("--scope global = exit %d", r.code)
	}
}

func fsFilter() fsstore.LoopFilter { return fsstore.LoopFilter{} }
