package proc

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Tail keeps the last Max bytes written to it, in amortised constant time
// per byte: where test runners, compilers and agents sum up.
type Tail struct {
	Max     int
	buf     []byte
	dropped bool
}

// Write never fails.
func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.Max {
		t.dropped = t.dropped || len(t.buf) > 0 || len(p) > t.Max
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return n, nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.Max {
		k := copy(t.buf, t.buf[len(t.buf)-t.Max:])
		t.buf = t.buf[:k]
		t.dropped = true
	}
	return n, nil
}

// Bytes returns the last Max bytes, starting on a UTF-8 rune boundary, and
// whether anything before them was dropped.
func (t *Tail) Bytes() ([]byte, bool) {
	b := t.buf
	dropped := t.dropped
	if len(b) > t.Max {
		b = b[len(b)-t.Max:]
		dropped = true
	}
	if dropped {
		for n := 0; n < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); n++ {
			b = b[1:]
		}
	}
	return b, dropped
}

// Text returns the tail as valid UTF-8, starting on a line when earlier
// output was dropped, and whether it was.
func (t *Tail) Text() (string, bool) {
	b, dropped := t.Bytes()
	if dropped {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), dropped
}
