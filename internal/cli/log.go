package cli

import (
	"io"
	"log/slog"
	"time"
)

// newLogHandler writes records for a person at a terminal: the local time
// of day, the message, then the record's attributes as key=value.
func newLogHandler(w io.Writer) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.String(slog.TimeKey, a.Value.Time().Local().Format(time.TimeOnly))
			}
			return a
		},
	})
}
