package cli

import (
	"bufio"
	"errors"
	"io"

	"github.com/baton-agent/baton"
)

// printable wraps w so that what a command prints for a person passes
// through baton.StripControls: delivery and source output carries text
// baton did not write (agent output, issue titles, reject reasons, API
// callers' names, GitHub's errors), and none of it may drive the
// terminal. JSON output is written to w itself: it escapes controls.
func printable(w io.Writer) io.Writer {
	if _, ok := w.(printableWriter); ok {
		return w
	}
	return printableWriter{w}
}

type printableWriter struct{ w io.Writer }

// Write strips each write on its own: an escape sequence split across
// two writes loses its control bytes all the same, and only its
// printable tail can show.
func (t printableWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, baton.StripControls(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// copyLines copies r to w a line at a time (lines over 64 KiB in
// pieces), so an escape sequence in a raw log reaches a printable writer
// whole.
func copyLines(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}
