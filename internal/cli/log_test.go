package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// at is a fixed record time and how the handler prints it.
var at = time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)

func stamp() string { return at.Local().Format(time.TimeOnly) }

// The worker's records reach a person as "time  message", one line each,
// without repeating what the message already says.
func TestLogHandlerLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	log := slog.New(newLogHandler(&b)).With("worker", "w1")
	log.Info("3f2a9c plan → review/pending", "delivery", "3f2a9c", "phase", "plan")
	log.Debug("not for people")
	got := b.String()
	if len(got) < 10 || got[8:] != "  3f2a9c plan → review/pending worker=w1\n" {
		t.Fatalf("line = %q, want \"HH:MM:SS  3f2a9c plan → review/pending worker=w1\\n\"", got)
	}
	if _, err := time.Parse(time.TimeOnly, got[:8]); err != nil {
		t.Errorf("line %q does not start with the time of day: %v", got, err)
	}
}

// The server's request line says what was asked and how it went, so a
// 500's "the server log has the details" is true in text format too:
// method, path, status, duration and request id, and the error's cause.
func TestLogHandlerRequestLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	h := newLogHandler(&b)
	log := slog.New(h).With("request_id", "4f1c2a9e0b7d6c5a")
	emit := func(level slog.Level, msg string, attrs ...any) {
		r := slog.NewRecord(at, level, msg, 0)
		r.Add(attrs...)
		if err := log.Handler().Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	emit(slog.LevelError, "request failed", "err", errors.New("insert delivery 3f2a9c: disk I/O error"))
	emit(slog.LevelInfo, "http", "method", "POST", "path", "/api/deliveries", "route", "POST /api/deliveries", "status", 500,
		"duration_ms", 1.25, "remote", "127.0.0.1")
	emit(slog.LevelInfo, "http", "method", "GET", "path", "/x\x1b]0;pwned\x07 y", "status", 404, "took", 1500*time.Millisecond,
		slog.Group("tls", "version", "1.3"), "empty", "")
	emit(slog.LevelError, "3f2a9c plan: agent failed: stderr:\x1b[2J boom\n  at line 2", "delivery", "3f2a9c")
	want := stamp() + `  ERROR request failed request_id=4f1c2a9e0b7d6c5a err="insert delivery 3f2a9c: disk I/O error"` + "\n" +
		stamp() + `  http request_id=4f1c2a9e0b7d6c5a method=POST path=/api/deliveries route="POST /api/deliveries" status=500 duration_ms=1.25 remote=127.0.0.1` + "\n" +
		stamp() + `  http request_id=4f1c2a9e0b7d6c5a method=GET path="/x\x1b]0;pwned\a y" status=404 took=1.5s tls.version=1.3 empty=""` + "\n" +
		stamp() + `  ERROR 3f2a9c plan: agent failed: stderr: boom at line 2 request_id=4f1c2a9e0b7d6c5a` + "\n"
	if got := b.String(); got != want {
		t.Errorf("log =\n%s\nwant\n%s", got, want)
	}
}
