package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

// The dashboard's one stream per browser. Browsers open at most six
// HTTP/1.1 connections per server, and an event stream holds one for as
// long as its page is open: six delivery tabs each with a stream of its
// own left a seventh page waiting. So the dashboard's pages share one
// stream (static/stream.js runs it in a SharedWorker, or in the page
// itself where there are none, closed while the page is hidden), and
// that stream carries every delivery the browser's pages watch:
//
//	GET /live?watch=<id>:<after>,<id>:<after>
//
// Each event is "event: <kind>" and "data:" the event's JSON with its
// "delivery". A "pulse" event (delivery.Pulse: how many deliveries wait
// for a person, and a version that changes with any delivery) comes
// first and again whenever it changes, for the nav's count, the tab's
// title, notifications, and refreshing lists. Comments keep the
// connection alive, so a client notices a server that is gone.

// maxWatched bounds the deliveries one stream follows.
const maxWatched = 64

// pulseEvery is how often a stream looks at the pulse.
const pulseEvery = 2 * time.Second

// liveEvent is an event of the shared stream.
type liveEvent struct {
	Delivery string `json:"delivery"`
	eventJSON
}

// parseWatch reads ?watch=: ids with the last event seen of each.
func parseWatch(v string) (map[string]int64, error) {
	out := map[string]int64{}
	if v == "" {
		return out, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxWatched {
		return nil, baton.Errorf(baton.Invalid, "a stream follows at most %d deliveries", maxWatched)
	}
	for _, part := range parts {
		id, after, ok := strings.Cut(part, ":")
		n, err := strconv.ParseInt(after, 10, 64)
		if !ok || err != nil || n < 0 || !baton.ValidID(id) {
			return nil, baton.Errorf(baton.Invalid, "bad watch %q: want <delivery id>:<last event seen>, comma-separated", baton.Truncate(part, 60, "…"))
		}
		out[id] = n
	}
	return out, nil
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) error {
	watch, err := parseWatch(r.URL.Query().Get("watch"))
	if err != nil {
		return err
	}
	fl, err := startStream(w, 2*time.Second)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	beat := s.heartbeat()
	out := make(chan []byte, maxWatched) // a batch of each followed delivery in flight
	send := func(b []byte) error {
		select {
		case out <- b:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for id, after := range watch {
		d, err := s.Deliveries.Resolve(ctx, id)
		if err != nil {
			continue // nothing to follow: the page's log stays as it is
		}
		go func() {
			err := s.Feed.Follow(ctx, d.ID, after, 0, func(evs []baton.DeliveryEvent) error {
				var buf []byte
				for _, e := range evs {
					var err error
					if buf, err = appendEvent(buf, 0, string(e.Kind), liveEvent{Delivery: d.ID, eventJSON: toEvent(e)}); err != nil {
						return err
					}
				}
				return send(buf)
			})
			if err != nil && ctx.Err() == nil {
				s.log(r).Warn("live stream of a delivery ended", "delivery", d.ID, "err", err)
				cancel() // the client reconnects and resumes
			}
		}()
	}

	tick := time.NewTicker(min(pulseEvery, beat))
	defer tick.Stop()
	lastPulse, lastWrite := "", time.Now()
	pulse := func() error {
		p, err := s.sharedPulse(ctx)
		if err != nil {
			return nil // a database that does not answer now may later
		}
		b, _ := json.Marshal(p)
		if string(b) == lastPulse {
			return nil
		}
		lastPulse = string(b)
		return s.write(w, fl, fmt.Appendf(nil, "event: pulse\ndata: %s\n\n", b))
	}
	if err := pulse(); err != nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-out:
			if s.write(w, fl, b) != nil {
				return nil // the client left
			}
			lastWrite = time.Now()
		case <-tick.C:
			if pulse() != nil {
				return nil
			}
			if time.Since(lastWrite) >= beat {
				if s.write(w, fl, []byte(": heartbeat\n\n")) != nil {
					return nil
				}
				lastWrite = time.Now()
			}
		}
	}
}

func (s *Server) write(w http.ResponseWriter, fl http.Flusher, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	fl.Flush()
	return nil
}

// pulseCache shares one reading of the pulse between the streams that
// ask within a second of each other: every open stream looks every
// pulseEvery.
type pulseCache struct {
	mu   sync.Mutex
	at   time.Time
	last delivery.Pulse
}

func (s *Server) sharedPulse(ctx context.Context) (delivery.Pulse, error) {
	c := &s.pulses
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < time.Second {
		return c.last, nil
	}
	p, err := s.Deliveries.Pulse(ctx)
	if err != nil {
		return p, err
	}
	c.last, c.at = p, time.Now()
	return p, nil
}
