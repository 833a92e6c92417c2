package delivery

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/baton-agent/baton"
)

// Feed follows deliveries' event logs for many readers at once (the
// server's live views): one reader of the database per followed
// delivery, woken as soon as this process commits events and polling for
// events committed by workers elsewhere, and a shared tail of recent
// events that every follower reads at its own pace. A follower that falls
// behind the tail, or resumes from an older event, reads the database
// instead, so nothing is skipped and no follower can hold up another.
type Feed struct {
	svc  *Service
	poll time.Duration

	once   sync.Once
	remove func()

	mu     sync.Mutex
	topics map[string]*topic
}

// Feed defaults.
const (
	// DefaultFeedPoll is how often a followed delivery's log is read for
	// events written by other processes.
	DefaultFeedPoll = time.Second
	// feedTail is how many recent events a followed delivery keeps in
	// memory; feedPage how many one database read returns.
	feedTail = 2048
	feedPage = 1000
)

// NewFeed returns a feed over s's event logs that polls every poll
// (DefaultFeedPoll when 0) for events other processes write.
func NewFeed(s *Service, poll time.Duration) *Feed {
	if poll <= 0 {
		poll = DefaultFeedPoll
	}
	return &Feed{svc: s, poll: poll, topics: map[string]*topic{}}
}

// Close stops listening to the service. Followers end on their own
// contexts.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remove != nil {
		f.remove()
		f.remove = nil
	}
}

// topic is one followed delivery.
type topic struct {
	id   string
	refs int
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	start   int64 // the tail holds events from start on
	tail    []baton.DeliveryEvent
	changed chan struct{} // closed when the tail grows
}

// Follow calls each with the events of the delivery with id after seq
// after, in order and in batches, then with each batch as it is
// committed, until ctx ends (nil) or each returns an error (that error).
// While nothing happens for heartbeat (when > 0), each is called with no
// events. each must not keep or change the slice.
func (f *Feed) Follow(ctx context.Context, id string, after int64, heartbeat time.Duration, each func([]baton.DeliveryEvent) error) error {
	t, err := f.join(ctx, id)
	if err != nil {
		return err
	}
	defer f.leave(t)
	var beat <-chan time.Time
	if heartbeat > 0 {
		tk := time.NewTicker(heartbeat)
		defer tk.Stop()
		beat = tk.C
	}
	last := after
	for {
		t.mu.Lock()
		tail, start, changed := t.tail, t.start, t.changed
		t.mu.Unlock()
		var evs []baton.DeliveryEvent
		if last+1 >= start {
			i, _ := slices.BinarySearchFunc(tail, last+1, func(e baton.DeliveryEvent, seq int64) int { return int(e.Seq - seq) })
			evs = tail[i:]
		} else {
			evs, err = f.svc.Events(ctx, id, last, feedPage)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if len(evs) > 0 && evs[len(evs)-1].Seq >= start-1 {
				// Caught up with the tail: read the rest from memory.
				evs = slices.DeleteFunc(evs, func(e baton.DeliveryEvent) bool { return e.Seq >= start })
			}
		}
		if len(evs) > 0 {
			if err := each(evs); err != nil {
				return err
			}
			last = evs[len(evs)-1].Seq
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-beat:
			if err := each(nil); err != nil {
				return err
			}
		}
	}
}

// join returns the topic of id, starting it for the first follower.
func (f *Feed) join(ctx context.Context, id string) (*topic, error) {
	f.once.Do(func() {
		f.mu.Lock()
		f.remove = f.svc.OnEvents(f.wake)
		f.mu.Unlock()
	})
	f.mu.Lock()
	t := f.topics[id]
	if t != nil {
		t.refs++
		f.mu.Unlock()
		return t, nil
	}
	f.mu.Unlock()
	last, err := f.svc.Store().LastEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.topics[id]; t != nil { // another follower started it meanwhile
		t.refs++
		return t, nil
	}
	t = &topic{id: id, refs: 1, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		start: last + 1, changed: make(chan struct{})}
	f.topics[id] = t
	go f.read(t)
	return t, nil
}

// leave drops a follower; the last one stops the topic's reader.
func (f *Feed) leave(t *topic) {
	f.mu.Lock()
	t.refs--
	last := t.refs == 0
	if last {
		delete(f.topics, t.id)
	}
	f.mu.Unlock()
	if last {
		close(t.stop)
		<-t.done
	}
}

// wake is the service's listener: events of id committed here.
func (f *Feed) wake(id string) {
	f.mu.Lock()
	t := f.topics[id]
	f.mu.Unlock()
	if t != nil {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// read appends new events of t's delivery to its tail whenever woken or
// polled, and tells the followers.
func (f *Feed) read(t *topic) {
	defer close(t.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tk := time.NewTicker(f.poll)
	defer tk.Stop()
	cursor := t.start - 1
	for {
		evs, err := f.svc.Events(ctx, t.id, cursor, feedPage)
		if err == nil && len(evs) > 0 {
			cursor = evs[len(evs)-1].Seq
			t.mu.Lock()
			t.tail = append(t.tail, evs...)
			if n := len(t.tail); n > feedTail {
				t.tail = slices.Clone(t.tail[n-feedTail:]) // followers may hold the old slice
				t.start = t.tail[0].Seq
			}
			close(t.changed)
			t.changed = make(chan struct{})
			t.mu.Unlock()
			if len(evs) == feedPage {
				continue // more are waiting
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		case <-tk.C:
		}
	}
}
