package safefile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// AppendJSONL appends one JSON line per record to path. Each line is a
// single write(2) with O_APPEND under the log's lock, so concurrent
// writers never interleave or lose a line.
func AppendJSONL[T any](ctx context.Context, path string, records ...T) error {
	if len(records) == 0 {
		return nil
	}
	lines := make([][]byte, 0, len(records))
	for _, r := range records {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode %s record: %w", path, err)
		}
		lines = append(lines, append(b, '\n'))
	}
	unlock, err := Lock(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := repairTornTail(f); err != nil {
		f.Close()
		return fmt.Errorf("append %s: %w", path, err)
	}
	for _, l := range lines {
		if _, err := f.Write(l); err != nil {
			f.Close()
			return fmt.Errorf("append %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	return nil
}

// repairTornTail ends a log whose last line lost its newline (a writer
// died mid-line) with one, so the next record starts on a line of its own
// and only the torn line is lost.
func repairTornTail(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte{'\n'})
	}
	return err
}

// ScanStats reports what a JSONL scan passed over.
type ScanStats struct {
	Lines   int // lines decoded
	Corrupt int // lines that were not valid JSON, torn tail included
}

// maxLineLen bounds one JSONL line; longer lines are counted as corrupt.
const maxLineLen = 16 << 20

// ScanJSONL streams path line by line, decoding each into a T and calling
// fn. A missing file is an empty log. Lines that do not decode (a torn last
// line, a stray edit) are skipped and counted, never fatal. fn may stop the
// scan early by returning io.EOF.
func ScanJSONL[T any](path string, fn func(T) error) (ScanStats, error) {
	return ScanLines(path, func(line []byte, v *T) error { return json.Unmarshal(line, v) }, fn)
}

// ScanLines is ScanJSONL with the line decoder given, for logs that have a
// faster decoder than encoding/json.
func ScanLines[T any](path string, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	var st ScanStats
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	} else if err != nil {
		return st, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= maxLineLen {
				long = append(long, chunk...)
			} else {
				long = long[:0]
				st.Corrupt++
				if err := skipLine(r); err != nil {
					return st, nil
				}
			}
			continue
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
			long = long[:0]
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var v T
			if jerr := decode(line, &v); jerr != nil {
				st.Corrupt++
			} else {
				st.Lines++
				if ferr := fn(v); ferr != nil {
					if ferr == io.EOF {
						return st, nil
					}
					return st, ferr
				}
			}
		}
		if err == io.EOF {
			return st, nil
		} else if err != nil {
			return st, fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// skipLine discards the rest of an overlong line.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}
