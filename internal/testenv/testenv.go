// Package testenv says which tests a test run includes. `go test ./...`
// is the everyday run and stays quick; tests that install or drive large
// outside programs (the real agent harnesses from npm, Lighthouse,
// GoReleaser and podman, several worker processes on PostgreSQL) run
// when BATON_TEST_ALL is set, which scripts/test.sh (and so CI) does.
package testenv

import (
	"os"
	"testing"
)

// AllVar is the variable that turns on every test.
const AllVar = "BATON_TEST_ALL"

// All reports whether this run includes the heavy tests.
func All() bool { return os.Getenv(AllVar) != "" }

// Heavy skips t, saying why, unless the run includes the heavy tests or
// -short is off and all is asked. what says what the test runs.
func Heavy(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: skips %s", what)
	}
	if !All() {
		t.Skipf("%s: set %s=1, or run scripts/test.sh, to include it", what, AllVar)
	}
}
