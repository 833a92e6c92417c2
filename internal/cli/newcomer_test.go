package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An explicit root that does not exist is an error, from --root or
// BATON_ROOT, for init and for every command that would create the store;
// nothing is created.
func TestExplicitRootMustExist(t *testing.T) {
	e := newEnv(t)
	missing := filepath.Join(e.dir, "nonexistent")
	for _, c := range []struct {
		name string
		vars map[string]string
		args []string
	}{
		{"env, handoff", map[string]string{"BATON_ROOT": missing}, []string{"handoff", "x"}},
		{"flag, handoff", nil, []string{"--root", missing, "handoff", "x"}},
		{"flag, init", nil, []string{"--root", missing, "init"}},
		{"flag, files add", nil, []string{"--root", missing, "files", "add", "a.go"}},
		{"env, loop start", map[string]string{"BATON_ROOT": missing}, []string{"loop", "start", "go on"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.vars = c.vars
			if e.vars == nil {
				e.vars = map[string]string{}
			}
			r := e.run("", "", c.args...)
			if r.code != 1 || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, "does not exist") {
				t.Errorf("baton %v = %d\nstderr: %s", c.args, r.code, r.stderr)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("baton %v created %s", c.args, missing)
			}
		})
	}
	e.vars = map[string]string{}
	// An existing directory is still fine, git or not.
	e.ok("", "", "--root", e.dir, "init")
}

// files add refuses a path that does not exist unless told it is still to
// be written; files refuses a negative --limit.
func TestFilesAddChecksPaths(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	r := e.run("", "", "files", "add", "nonexistent.go")
	if r.code != 1 || !strings.Contains(r.stderr, "nonexistent.go does not exist") || !strings.Contains(r.stderr, "--missing-ok") {
		t.Errorf("files add nonexistent.go = %d\nstderr: %s", r.code, r.stderr)
	}
	if out := e.ok("", "", "files", "--all").stdout; strings.Contains(out, "nonexistent.go") {
		t.Errorf("a refused path was recorded:\n%s", out)
	}
	e.ok("", "", "files", "add", "--missing-ok", "planned.go")
	e.ok("", "", "files", "add", "README.md")
	if out := e.ok("", "", "files", "--all").stdout; !strings.Contains(out, "planned.go") || !strings.Contains(out, "README.md") {
		t.Errorf("files --all lacks the recorded paths:\n%s", out)
	}
	r = e.run("", "", "files", "--limit", "-1")
	if r.code != 2 || !strings.Contains(r.stderr, "--limit -1") {
		t.Errorf("files --limit -1 = %d\nstderr: %s", r.code, r.stderr)
	}
}
