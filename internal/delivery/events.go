package delivery

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
)

// A delivery's event log is what a person watching it sees: every phase
// change and its agents' output, numbered per delivery and stored with
// the delivery, so a reader that reconnects (or a server that restarted)
// resumes after the last number it saw. Phase events are written in the
// transaction of the change; agent output is written as it arrives by an
// outputRecorder.

// phaseEvents are the events of a change's phase log entries, in plain
// words (PhaseWords).
func phaseEvents(log []baton.PhaseLogEntry) []baton.DeliveryEvent {
	evs := make([]baton.DeliveryEvent, 0, len(log))
	for _, e := range log {
		evs = append(evs, baton.DeliveryEvent{Kind: baton.EventPhase, Phase: e.Phase, Status: e.Status, Text: PhaseWords(e), At: e.StartedAt})
	}
	return evs
}

// PhaseWords says what a phase log entry records as a person would say
// it, with the words of the dashboard's buttons: "Plan is waiting for a
// person to start it.", "alice started plan.", "Review passed: looks
// right.", "alice canceled implement: wrong approach." Workers are not
// named (their ids mean nothing to a reader); people are.
func PhaseWords(e baton.PhaseLogEntry) string {
	p := string(e.Phase)
	P := strings.ToUpper(p[:min(1, len(p))]) + p[min(1, len(p)):]
	with := func(s, note string) string {
		if note = strings.TrimSpace(note); note != "" {
			return s + ": " + note
		}
		return s
	}
	switch {
	case e.Action == "create" && e.Phase == baton.PhaseIntake:
		return "Created by " + e.Actor + "."
	case e.Phase == baton.PhaseClose:
		if e.Decision == DecisionClosed {
			return with("Closed by "+e.Actor, e.Reason) + "."
		}
		return "Delivered."
	case e.Decision == DecisionCanceled:
		return with(e.Actor+" canceled "+p, e.Reason) + "."
	case e.Status == baton.StatusRunning:
		return P + " started."
	case e.Status == baton.StatusPending:
		var who string
		switch e.Decision {
		case DecisionStarted:
			return with(e.Actor+" started "+p, e.Reason) + "."
		case "":
		default:
			who = decisionWords(e)
			who = strings.ToUpper(who[:1]) + who[1:] + ". "
		}
		switch {
		case e.Waits:
			return who + P + " is waiting for a person to start it."
		case e.Action == string(ActLose) || e.Action == string(ActRelease):
			return with(P+" is queued again", e.Note) + "."
		}
		return who + P + " is queued for a worker."
	case e.Status == baton.StatusSkipped:
		return with(P+" skipped", e.Note) + "."
	case e.Status == baton.StatusFailed:
		return with(P+" failed", e.Note) + "."
	case e.Status == baton.StatusBlocked:
		return with(P+" is blocked for a person to decide", e.Note) + "."
	case e.Verdict == baton.VerdictPass:
		return with(P+" passed", e.Note) + "."
	case e.Verdict == baton.VerdictNotPass:
		return with(P+" did not pass", e.Note) + "."
	case e.Status == baton.StatusSucceeded:
		return with(P+" succeeded", e.Note) + "."
	}
	return with(P+" "+string(e.Status), e.Note) + "."
}

// Events returns the events of the delivery with id after seq, oldest
// first, at most limit (<= 0: all).
func (s *Service) Events(ctx context.Context, id string, after int64, limit int) ([]baton.DeliveryEvent, error) {
	return s.Store().Events(ctx, id, after, limit)
}

// listeners are told, in this process, when a delivery's events commit.
type listeners struct {
	mu  sync.Mutex
	fns map[int]func(deliveryID string)
	n   int
}

// OnEvents calls fn (which must not block) with a delivery's id each time
// this process commits events of it. Workers elsewhere are not seen:
// followers also poll. remove stops the calls.
func (s *Service) OnEvents(fn func(deliveryID string)) (remove func()) {
	l := &s.listeners
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fns == nil {
		l.fns = map[int]func(string){}
	}
	l.n++
	k := l.n
	l.fns[k] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.fns, k)
	}
}

// notify tells the listeners that events of id committed.
func (s *Service) notify(id string) {
	l := &s.listeners
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.fns {
		fn(id)
	}
}

// DefaultLiveBacklog bounds the agent output waiting to be written when
// the database falls behind (Service.LiveBacklog); beyond it, output is
// counted and dropped (the raw logs keep everything).
const DefaultLiveBacklog = 4096

// The live output stored per agent run: its first MaxRunOutput messages
// or MaxRunOutputBytes of text, whichever comes first, then the last
// runOutputTail messages of the rest, written when the run ends after a
// note saying what was left out. An agent that floods its output (a
// thirty-second loop printed 420,000 lines) fills the database no more
// than one that works; the run's raw logs keep the output itself, each
// stream capped too (agentrun.DefaultMaxLogBytes).
const (
	MaxRunOutput      = 5000
	MaxRunOutputBytes = 2 << 20
	runOutputTail     = 100
)

// outputRecorder writes an agent run's live output into the delivery's
// event log. Each Write is one message (agentrun's Live contract): a
// tool line ("→ "), a notice ("! ", "✗ ", "? ") or assistant text. A
// goroutine writes whatever has arrived in one transaction, then looks
// again: output reaches readers as soon as the database takes it, in
// batches when it is slower than the agent.
type outputRecorder struct {
	s     *Service
	id    string
	run   int
	phase baton.Phase

	backlog int // pending messages before more are dropped

	mu      sync.Mutex
	pending []baton.DeliveryEvent
	dropped int // not stored because the database fell behind
	closed  bool
	wake    chan struct{}
	done    chan struct{}

	// The run's cap: stored counts what was taken (messages, bytes);
	// past the cap, over counts what was left out and tail keeps its
	// last runOutputTail messages (a ring starting at tailAt).
	stored, storedBytes int
	over, overBytes     int
	tail                []baton.DeliveryEvent
	tailAt              int
}

func (s *Service) recordOutput(ctx context.Context, d *baton.Delivery, run int) *outputRecorder {
	o := &outputRecorder{s: s, id: d.ID, run: run, phase: d.Phase, backlog: cmp.Or(s.LiveBacklog, DefaultLiveBacklog), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.loop(context.WithoutCancel(ctx))
	return o
}

func (o *outputRecorder) Write(p []byte) (int, error) {
	text := strings.TrimRight(string(p), "\n")
	if strings.TrimSpace(text) == "" {
		return len(p), nil
	}
	kind := baton.EventText
	switch {
	case strings.HasPrefix(text, "→ "):
		kind = baton.EventTool
	case strings.HasPrefix(text, "! "), strings.HasPrefix(text, "✗ "), strings.HasPrefix(text, "? "):
		kind = baton.EventNote
	}
	size := min(len(text), baton.MaxEventText) // what the store keeps of it
	ev := baton.DeliveryEvent{Kind: kind, Run: o.run, Phase: o.phase, Text: text, At: o.s.now()}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return len(p), nil
	}
	switch {
	case o.over > 0 || o.stored >= MaxRunOutput || o.storedBytes+size > MaxRunOutputBytes:
		if o.over == 0 {
			o.pending = append(o.pending, baton.DeliveryEvent{Kind: baton.EventNote, Run: o.run, Phase: o.phase, At: ev.At,
				Text: fmt.Sprintf("! live output capped at %d messages or %d MiB per run: the rest is counted, and its last %d messages are shown when the run ends; the run's raw logs keep the output",
					MaxRunOutput, MaxRunOutputBytes>>20, runOutputTail)})
		}
		o.over++
		o.overBytes += size
		if len(o.tail) < runOutputTail {
			o.tail = append(o.tail, ev)
		} else {
			o.tail[o.tailAt] = ev
			o.tailAt = (o.tailAt + 1) % runOutputTail
		}
	case len(o.pending) >= o.backlog:
		o.dropped++
	default:
		o.stored++
		o.storedBytes += size
		o.pending = append(o.pending, ev)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Close writes what is left and stops the recorder: past the cap, a note
// saying how much output was left out, then the last of it.
func (o *outputRecorder) Close() {
	o.mu.Lock()
	o.closed = true
	if n := len(o.tail); o.over > n {
		o.pending = append(o.pending, baton.DeliveryEvent{Kind: baton.EventNote, Run: o.run, Phase: o.phase, At: o.s.now(),
			Text: fmt.Sprintf("! %d output messages (%s) past the cap were left out of the live log; the last %d follow", o.over-n, sizeWords(o.overBytes), n)})
	}
	o.pending = append(o.pending, o.tail[o.tailAt:]...)
	o.pending = append(o.pending, o.tail[:o.tailAt]...)
	o.tail = nil
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	<-o.done
}

func (o *outputRecorder) loop(ctx context.Context) {
	defer close(o.done)
	for {
		<-o.wake
		o.mu.Lock()
		batch, dropped, closed := o.pending, o.dropped, o.closed
		o.pending, o.dropped = nil, 0
		o.mu.Unlock()
		if dropped > 0 {
			batch = append(batch, baton.DeliveryEvent{Kind: baton.EventNote, Run: o.run, Phase: o.phase, At: o.s.now(),
				Text: fmt.Sprintf("! %d output messages were not shown live (the database fell behind); the run's raw logs have them", dropped)})
		}
		if len(batch) > 0 {
			o.write(ctx, batch)
		}
		if closed {
			o.mu.Lock()
			left := len(o.pending)
			o.mu.Unlock()
			if left == 0 {
				return
			}
			select {
			case o.wake <- struct{}{}:
			default:
			}
		}
	}
}

// write stores a batch, trying again while the database is busy. Live
// output is a view: after that it is dropped rather than holding up the
// agent.
func (o *outputRecorder) write(ctx context.Context, batch []baton.DeliveryEvent) {
	for try := 0; try < 5; try++ {
		err := o.s.Queue.InTx(ctx, func(tx queue.Tx) error {
			return tx.Store().AppendEvents(ctx, o.id, batch)
		})
		if err == nil {
			o.s.notify(o.id)
			return
		}
		if baton.ErrorCode(err) != baton.Unavailable {
			return
		}
		time.Sleep(time.Duration(50<<try) * time.Millisecond)
	}
}

// sizeWords says a byte count as a person reads it: 812 bytes, 37 KiB,
// 12.4 MiB.
func sizeWords(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
