package cli

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logHandler writes records for a person watching a terminal, one line
// each: the local time of day and the message ("09:34:00  3f2a9c plan →
// review/pending"). The records' messages are written for people and
// already say what their attributes hold; the attributes are for machine
// handlers (JSON logs of a server) and are left out here.
type logHandler struct {
	mu *sync.Mutex
	w  io.Writer
}

func newLogHandler(w io.Writer) slog.Handler { return &logHandler{mu: &sync.Mutex{}, w: w} }

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	line := t.Local().Format(time.TimeOnly) + "  " + r.Message + "\n"
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line)
	return err
}

func (h *logHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logHandler) WithGroup(string) slog.Handler      { return h }
