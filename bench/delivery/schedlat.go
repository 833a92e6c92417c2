package main

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatency is how long this process's goroutines waited, runnable,
// for a P to run on: the time a worker loses when its Ps are all held
// (by system calls, or by other goroutines).
type schedLatency struct {
	total  time.Duration
	over1  uint64 // waits of a millisecond or more
	counts []uint64
	bounds []float64
}

func readSchedLatency() schedLatency {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	h := s[0].Value.Float64Histogram()
	return schedLatency{counts: append([]uint64(nil), h.Counts...), bounds: append([]float64(nil), h.Buckets...)}
}

// since is the waits between before and l, each counted at its
// bucket's lower bound (so the total is a floor).
func (l schedLatency) since(before schedLatency) schedLatency {
	var out schedLatency
	for i, c := range l.counts {
		n := c - before.counts[i]
		lo := l.bounds[i]
		if math.IsInf(lo, -1) {
			lo = 0
		}
		out.total += time.Duration(float64(n) * lo * float64(time.Second))
		if lo >= 0.001 {
			out.over1 += n
		}
	}
	return out
}
