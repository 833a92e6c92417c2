package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	if !Until(time.Second, nil, func() bool { return true }) {
		t.Error("Until(true) = false")
	}
	start := time.Now()
	if Until(30*time.Millisecond, nil, func() bool { return false }) {
		t.Error("Until(false) = true")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Until(false) gave up after %s, before its 30ms", d)
	}
	// Polling alone sees a change another goroutine makes.
	var n atomic.Int32
	go func() { n.Store(1) }()
	if !Until(10*time.Second, nil, func() bool { return n.Load() == 1 }) {
		t.Error("Until missed a change without a wake")
	}
}

// With a wake, a change is seen when it is signalled: here the poll
// would not come for an hour.
func TestUntilWakes(t *testing.T) {
	t.Parallel()
	wake, fire := Signal()
	var done atomic.Bool
	checked := make(chan struct{}, 1)
	go func() {
		<-checked // Until checked once and waits: change and signal
		done.Store(true)
		fire()
		fire() // never blocks while one is pending
	}()
	ok := until(time.Minute, time.Hour, wake, func() bool {
		select {
		case checked <- struct{}{}:
		default:
		}
		return done.Load()
	})
	if !ok {
		t.Fatal("until with a wake = false")
	}
}

// A test waits for something with Until, not a sleep: a sleep is either
// too short on a busy machine or too long on an idle one. A test that
// sleeps for another reason (the lateness it tests) says why in a
// comment on the line or just above it.
func TestSleepsSayWhy(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || path == mustAbs(t, "testenv_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if !strings.Contains(line, "time.Sleep(") {
				continue
			}
			said := strings.Contains(line, "//")
			for j := max(0, i-3); j < i && !said; j++ {
				said = strings.HasPrefix(strings.TrimSpace(lines[j]), "//")
			}
			if !said {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d sleeps without saying why: wait with testenv.Until, or say in a comment why it sleeps", rel, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
