// Package gittest gives tests real git repositories with a fixed identity
// and no user or system configuration, so commits are reproducible and a
// developer's ~/.gitconfig (signing, hooks paths, default branch) never
// changes a test's outcome.
package gittest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Env is the environment tests give git: a fixed identity and dates,
// and no user or system configuration.
func Env() []string {
	return []string{
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=2026-11-22T09:00:00Z", "GIT_COMMITTER_DATE=2026-11-22T09:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	}
}

// Main runs a package's tests with Env in the process environment, for
// packages whose code under test runs git itself (the CLI, the delivery
// pipeline): set once, before any test, it lets those tests run in
// parallel, which a per-test t.Setenv forbids. A package calls it from
// TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }
//
// The test binary is also the box's init (sandbox.Main): baton's git in
// a worktree, as the agents and checks such tests start, runs boxed.
func Main(m *testing.M) int {
	sandbox.Main(egress.Hooks())
	for _, kv := range Env() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
	}
	return m.Run()
}

// Git runs git with args in dir, with Env, and returns its trimmed
// output, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(Output(t, dir, args...))
}

// Output is Git with the output as git printed it.
func Output(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}
