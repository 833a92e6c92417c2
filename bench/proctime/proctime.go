// Package proctime times whole processes the way agents and shells run
// baton: fork to exit, many runs, median and p90, with peak memory. The
// benchmark programs under bench/ share it.
package proctime

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// Run is one scenario to time.
type Run struct {
	Argv  []string
	Stdin []byte
	Dir   string
	N     int
	// Check, when set, inspects the first run's combined output and
	// returns an error if the scenario did not do what it claims.
	Check func(out []byte) error
	// AllowFail times runs that exit non-zero too (git diff --quiet says
	// "changed" that way).
	AllowFail bool
}

// Stats summarises the timed runs.
type Stats struct {
	Runs   int
	Median time.Duration
	P90    time.Duration
	Max    time.Duration
	MaxRSS int64 // bytes
}

// Measure runs r.Argv r.N times (after one untimed warm-up run) and
// returns the timings. A run that fails to start or exits non-zero is an
// error: a benchmark must not time a failure.
func Measure(r Run) (Stats, error) {
	var ds []time.Duration
	var maxRSS int64
	for i := -1; i < r.N; i++ {
		c := exec.Command(r.Argv[0], r.Argv[1:]...)
		c.Dir = r.Dir
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if r.Stdin != nil {
			c.Stdin = bytes.NewReader(r.Stdin)
		}
		start := time.Now()
		err := c.Run()
		d := time.Since(start)
		var exit *exec.ExitError
		if err != nil && !(r.AllowFail && errors.As(err, &exit)) {
			return Stats{}, fmt.Errorf("%v: %v\n%s", r.Argv, err, out.Bytes())
		}
		if i == -1 {
			if r.Check != nil {
				if err := r.Check(out.Bytes()); err != nil {
					return Stats{}, fmt.Errorf("%v: %w", r.Argv, err)
				}
			}
			continue
		}
		ds = append(ds, d)
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 > maxRSS {
			maxRSS = ru.Maxrss * 1024 // Linux reports KiB
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return Stats{Runs: len(ds), Median: ds[len(ds)/2], P90: ds[len(ds)*9/10], Max: ds[len(ds)-1], MaxRSS: maxRSS}, nil
}

// MS formats d in milliseconds with two decimals.
func MS(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// MB formats bytes in MiB with one decimal.
func MB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
