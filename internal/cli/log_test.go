package cli

import (
	"bytes"
	"log/slog"
	"testing"
	"time"
)

// The worker's records reach a person as "time  message", one line each.
func TestLogHandlerLine(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newLogHandler(&b)).With("worker", "w1")
	log.Info("3f2a9c plan → review/pending", "delivery", "3f2a9c", "phase", "plan")
	log.Debug("not for people")
	got := b.String()
	if len(got) < 10 || got[8:] != "  3f2a9c plan → review/pending\n" {
		t.Fatalf("line = %q, want \"HH:MM:SS  3f2a9c plan → review/pending\\n\"", got)
	}
	if _, err := time.Parse(time.TimeOnly, got[:8]); err != nil {
		t.Errorf("line %q does not start with the time of day: %v", got, err)
	}
}
