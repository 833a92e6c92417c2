// Package gittest gives tests real git repositories with a fixed identity
// and no user or system configuration, so commits are reproducible and a
// developer's ~/.gitconfig (signing, hooks paths, default branch) never
// changes a test's outcome.
package gittest

import (
	"os/exec"
	"strings"
	"testing"
)

// Setenv fixes git's identity and dates and hides user and system
// configuration for the rest of the test. Tests that call it cannot run in
// parallel (t.Setenv).
func Setenv(t testing.TB) {
	t.Helper()
	for k, v := range map[string]string{
		"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
		"GIT_AUTHOR_DATE": "2026-11-22T09:00:00Z", "GIT_COMMITTER_DATE": "2026-11-22T09:00:00Z",
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
	} {
		t.Setenv(k, v)
	}
}

// Git runs git with args in dir and returns its trimmed output, failing
// the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(Output(t, dir, args...))
}

// Output is Git with the output as git printed it.
func Output(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}
