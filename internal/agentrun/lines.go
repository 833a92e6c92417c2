package agentrun

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader splits a stream into lines of any length. bufio.Scanner's
// 64 KiB default token limit is too small for stream-json, where one line
// can carry a whole file; lines longer than max are reported as too long
// instead of being held in memory. raw, when set, sees every byte read
// (with newlines) as it arrives, so logs keep even the lines that are
// dropped.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	raw func([]byte)
}

func newLineReader(r io.Reader, max int, raw func([]byte)) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), max: max, raw: raw}
}

// next returns the next line without its "\n" or "\r\n". The slice is valid
// until the following call. tooLong reports a line longer than max, whose
// content is not returned. A last line without a newline is returned
// normally; err is io.EOF only once no bytes are left.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	size := 0
	for {
		frag, err := lr.r.ReadSlice('\n')
		size += len(frag)
		if len(frag) > 0 && lr.raw != nil {
			lr.raw(frag)
		}
		if err == nil && len(lr.buf) == 0 && !tooLong {
			// The whole line is in bufio's buffer: no copy.
			if len(frag) > lr.max+2 {
				return nil, true, nil
			}
			return trimEOL(frag), false, nil
		}
		if !tooLong {
			if len(lr.buf)+len(frag) > lr.max+2 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, frag...)
			}
		}
		switch {
		case err == nil:
			return trimEOL(lr.buf), tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if size == 0 {
				return nil, false, io.EOF
			}
			return trimEOL(lr.buf), tooLong, nil
		default:
			if size == 0 {
				return nil, false, err
			}
			// Hand over what was read; the error comes back on the next call.
			return trimEOL(lr.buf), tooLong, nil
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// each calls fn for every line of r until EOF or a read error, counting
// lines too long to hold via tooLong. It returns the read error, nil at EOF.
func eachLine(lr *lineReader, fn func([]byte), tooLong func()) error {
	for {
		line, long, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if long {
			if tooLong != nil {
				tooLong()
			}
			continue
		}
		fn(line)
	}
}
