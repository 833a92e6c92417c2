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
	// Before, when set, runs untimed before each run: a write the timed
	// call must follow in the same round.
	Before func() error
}

// Stats summarises the timed runs.
type Stats struct {
	Runs   int
	Median time.Duration
	P90    time.Duration
	Max    time.Duration
	MaxRSS int64 // bytes
	// CPU is the median of user and system time: what a busy machine
	// changes far less than the wall time.
	CPU time.Duration
}

// Measure runs r.Argv r.N times (after one untimed warm-up run) and
// returns the timings. A run that fails to start or exits non-zero is an
// error: a benchmark must not time a failure.
func Measure(r Run) (Stats, error) {
	st, err := Alternate(r)
	if err != nil {
		return Stats{}, err
	}
	return st[0], nil
}

// Alternate times several runs round-robin, one of each per round, so
// that a machine that gets busier or quieter during the benchmark moves
// them all alike and their ratios hold. Each gets one untimed warm-up
// run first; the rounds are the largest N.
func Alternate(runs ...Run) ([]Stats, error) {
	rounds := 0
	for _, r := range runs {
		rounds = max(rounds, r.N)
	}
	ds := make([][]time.Duration, len(runs))
	cpus := make([][]time.Duration, len(runs))
	maxRSS := make([]int64, len(runs))
	for i := -1; i < rounds; i++ {
		for k, r := range runs {
			if i >= r.N {
				continue
			}
			if r.Before != nil {
				if err := r.Before(); err != nil {
					return nil, fmt.Errorf("before %v: %w", r.Argv, err)
				}
			}
			d, cpu, rss, out, err := once(r)
			if err != nil {
				return nil, err
			}
			if i == -1 {
				if r.Check != nil {
					if err := r.Check(out); err != nil {
						return nil, fmt.Errorf("%v: %w", r.Argv, err)
					}
				}
				continue
			}
			ds[k] = append(ds[k], d)
			cpus[k] = append(cpus[k], cpu)
			maxRSS[k] = max(maxRSS[k], rss)
		}
	}
	st := make([]Stats, len(runs))
	for k, d := range ds {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		c := cpus[k]
		sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
		st[k] = Stats{Runs: len(d), Median: d[len(d)/2], P90: d[len(d)*9/10], Max: d[len(d)-1], MaxRSS: maxRSS[k], CPU: c[len(c)/2]}
	}
	return st, nil
}

// once runs r a single time: its wall time, CPU time (user and system),
// peak RSS and output.
func once(r Run) (time.Duration, time.Duration, int64, []byte, error) {
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
		return 0, 0, 0, nil, fmt.Errorf("%v: %v\n%s", r.Argv, err, out.Bytes())
	}
	var rss int64
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // Linux reports KiB
	}
	return d, c.ProcessState.UserTime() + c.ProcessState.SystemTime(), rss, out.Bytes(), nil
}

// MS formats d in milliseconds with two decimals.
func MS(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// MB formats bytes in MiB with one decimal.
func MB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
