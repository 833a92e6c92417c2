package cli

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/baton-agent/baton"
)

// logHandler writes records for a person watching a terminal, one line
// each: the local time of day, the level when it is a warning or an
// error, the message, then the attributes as key=value ("09:34:00  http
// request_id=4f1c method=GET path=/api/deliveries status=500
// duration_ms=1.2"). An attribute whose value (4 bytes or more) the
// message already says verbatim ("3f2a9c plan → review/pending" with
// delivery=3f2a9c) is not repeated. Values that are empty or hold
// spaces, quotes, '=' or anything unprintable are quoted, so text from
// a request (a path with an escape sequence in it) can neither split a
// line nor drive the terminal.
type logHandler struct {
	mu *sync.Mutex
	w  io.Writer
	// attrs are those given by WithAttrs, each with the group prefix it
	// was given under; group is the prefix of keys still to come ("g.").
	attrs []groupedAttr
	group string
}

type groupedAttr struct {
	prefix string
	a      slog.Attr
}

func newLogHandler(w io.Writer) slog.Handler { return &logHandler{mu: &sync.Mutex{}, w: w} }

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	var b strings.Builder
	b.WriteString(t.Local().Format(time.TimeOnly))
	b.WriteString("  ")
	if r.Level >= slog.LevelWarn {
		b.WriteString(r.Level.String())
		b.WriteByte(' ')
	}
	// A message can quote what baton read (an agent's stderr in an
	// error): it reaches the terminal on one line, without controls.
	b.WriteString(strings.Join(strings.Fields(baton.StripControls(r.Message)), " "))
	for _, ga := range h.attrs {
		writeAttr(&b, ga.prefix, ga.a, r.Message)
	}
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.group, a, r.Message)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]groupedAttr(nil), h.attrs...)
	for _, a := range as {
		n.attrs = append(n.attrs, groupedAttr{h.group, a})
	}
	return &n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.group += name + "."
	return &n
}

// writeAttr appends " key=value" for a, or one pair per member of a
// group; a value the message already contains is left out.
func writeAttr(b *strings.Builder, prefix string, a slog.Attr, msg string) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, m := range v.Group() {
			writeAttr(b, p, m, msg)
		}
		return
	}
	if a.Key == "" {
		return
	}
	var s string
	switch v.Kind() {
	case slog.KindDuration:
		s = v.Duration().String()
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339Nano)
	default:
		s = v.String()
	}
	if len(s) >= 4 && strings.Contains(msg, s) {
		return
	}
	b.WriteString(" " + quoteKey(prefix+a.Key) + "=" + quoteValue(s))
}

func quoteKey(k string) string {
	if needsQuote(k) {
		return strconv.Quote(k)
	}
	return k
}

func quoteValue(s string) string {
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return s
}

// needsQuote reports whether s cannot stand bare in key=value text.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if r == ' ' || r == '"' || r == '=' || r == '\\' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}
