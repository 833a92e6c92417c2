package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// DefaultHeartbeat is how often an idle event stream gets a comment, so
// proxies keep it open and clients notice a dead server.
const DefaultHeartbeat = 15 * time.Second

func (s *Server) heartbeat() time.Duration {
	if s.Heartbeat <= 0 {
		return DefaultHeartbeat
	}
	return s.Heartbeat
}

// appendEvent appends one server-sent event named event with v as its
// JSON data, and its id unless id is 0.
func appendEvent(buf []byte, id int64, event string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return buf, err
	}
	if id != 0 {
		buf = fmt.Appendf(buf, "id: %d\n", id)
	}
	return fmt.Appendf(buf, "event: %s\ndata: %s\n\n", event, b), nil
}

// startStream answers 200 as an event stream whose client reconnects
// after retry, and sends that at once.
func startStream(w http.ResponseWriter, retry time.Duration) (http.Flusher, error) {
	fl, ok := w.(http.Flusher)
	if !ok {
		return nil, baton.Errorf(baton.Internal, "streaming is not supported by this connection")
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds())
	fl.Flush()
	return fl, nil
}

// deliveryEvents streams a delivery's event log as Server-Sent Events:
// "id: <seq>", "event: <kind>", "data: <event JSON>". A client that
// reconnects with Last-Event-ID (or ?after=N) gets only what came after;
// the log lives in the database, so this holds across server restarts.
// Heartbeats are comments.
func (s *Server) deliveryEvents(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Deliveries.Resolve(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	after := int64(0)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			return baton.Errorf(baton.Invalid, "bad Last-Event-ID %q: want the id of the last event seen", baton.Truncate(last, 40, "…"))
		}
		after = n
	}
	// A closed delivery's stream ends after its last event: a client
	// that has seen it is told, with 204, not to reconnect.
	if d.Phase == baton.PhaseClose {
		last, err := s.Deliveries.LastEvent(r.Context(), d.ID)
		if err != nil {
			return err
		}
		if after >= last {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	// Reconnect after a second when the connection drops.
	fl, err := startStream(w, time.Second)
	if err != nil {
		return err
	}
	beat := s.heartbeat()
	var buf []byte
	err = s.Feed.Follow(r.Context(), d.ID, after, beat, func(evs []baton.DeliveryEvent) error {
		buf = buf[:0]
		if len(evs) == 0 {
			buf = append(buf, ": heartbeat\n\n"...)
		}
		closed := false
		for _, e := range evs {
			var err error
			if buf, err = appendEvent(buf, e.Seq, string(e.Kind), toEvent(e)); err != nil {
				return err
			}
			closed = closed || e.Kind == baton.EventPhase && e.Phase == baton.PhaseClose
		}
		if err := s.write(w, fl, buf); err != nil {
			return err // the client left
		}
		if closed {
			return errStreamEnded
		}
		return nil
	})
	if errors.Is(err, errStreamEnded) {
		return nil
	}
	if err != nil && r.Context().Err() == nil {
		s.log(r).Warn("event stream ended", "delivery", d.ID, "err", err)
	}
	return nil
}

// errStreamEnded ends a closed delivery's stream after its close.
var errStreamEnded = errors.New("the delivery is closed")

// eventJSON is one event of a stream.
type eventJSON struct {
	Seq    int64     `json:"seq"`
	Kind   string    `json:"kind"`
	Run    int       `json:"run,omitempty"`
	Phase  string    `json:"phase,omitempty"`
	Status string    `json:"status,omitempty"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

func toEvent(e baton.DeliveryEvent) eventJSON {
	return eventJSON{Seq: e.Seq, Kind: string(e.Kind), Run: e.Run, Phase: string(e.Phase), Status: string(e.Status), Text: e.Text, At: e.At}
}
