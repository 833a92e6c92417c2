// Package testenv says which tests a test run includes, and where tests
// keep what they fetch once for every run. `go test ./...` is the
// everyday run and stays quick; tests that install or drive large
// outside programs (the real agent harnesses from npm, Lighthouse,
// GoReleaser and podman, several worker processes on PostgreSQL) run when
// BATON_TEST_ALL is set, which scripts/test.sh (and so CI) does.
//
// Their prerequisites are fetched before the run that times them: each
// package with heavy prerequisites has a TestPrefetch that installs them
// through the very helpers its tests call, and does nothing unless
// BATON_TEST_PREFETCH is set. scripts/test.sh runs those first
// (`go test -run '^TestPrefetch$'`), so a fresh machine spends its
// downloads there, not inside a timed test.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// AllVar is the variable that turns on every test.
const AllVar = "BATON_TEST_ALL"

// PrefetchVar is the variable that makes TestPrefetch fetch.
const PrefetchVar = "BATON_TEST_PREFETCH"

// CacheVar names the directory of what tests fetch once (CacheDir).
const CacheVar = "BATON_TEST_CACHE"

// TimingVar is the variable that makes tests hold a clock to its goal.
// A goal in time is a benchmark's figure: the suite runs on shared,
// loaded machines and must not fail because one was slow, so a test
// that measures time asserts only a ceiling no load reaches, and its
// goal only when a benchmark on a quiet machine sets this.
const TimingVar = "BATON_TEST_TIMING"

// Timing reports whether this run holds timed figures to their goals.
func Timing() bool { return os.Getenv(TimingVar) != "" }

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

// Prefetch skips t unless this run fetches the heavy tests'
// prerequisites: a TestPrefetch calls it first, then the same install
// helpers the package's tests call.
func Prefetch(t testing.TB) {
	t.Helper()
	if os.Getenv(PrefetchVar) == "" {
		t.Skipf("fetches the heavy tests' prerequisites only with %s=1 (scripts/test.sh sets it)", PrefetchVar)
	}
	Heavy(t, "fetches the heavy tests' prerequisites")
}

// CacheDir is where tests keep what they fetch once and reuse in every
// later run (npm installs, the Debian root of the worker image):
// $BATON_TEST_CACHE, else baton-test in the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache).
func CacheDir() (string, error) {
	if d := os.Getenv(CacheVar); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "baton-test"), nil
}

// Until reports whether cond holds within the time given: the one way
// tests wait for something to happen. It checks cond at once, then each
// time wake delivers, and every poll interval besides: 10 ms without
// wake, 250 ms with it (a net for changes that send no event). wake is
// an event of the code under test where it has one (a delivery's events
// committing, a server's request; Signal makes one), nil where it has
// none. Callers fail with what they waited for and the state they saw.
func Until(within time.Duration, wake <-chan struct{}, cond func() bool) bool {
	poll := 10 * time.Millisecond
	if wake != nil {
		poll = 250 * time.Millisecond
	}
	return until(within, poll, wake, cond)
}

func until(within, poll time.Duration, wake <-chan struct{}, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for !cond() {
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}

// Signal is a wake channel for Until and the function that sends on it.
// The function never blocks: signals sent while one is pending merge
// into it, so it may be called from any callback of the code under test.
func Signal() (wake <-chan struct{}, fire func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
