package testenv

import (
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
