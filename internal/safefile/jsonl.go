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
	return AppendJSONLBeneath(ctx, Root{}, path, records...)
}

// AppendJSONLBeneath is AppendJSONL beneath r (see Root).
func AppendJSONLBeneath[T any](ctx context.Context, r Root, path string, records ...T) error {
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
	unlock, err := r.Lock(ctx, path)
	if err != nil {
		return err
	}
	defer unlock()
	dirfd, name, done, err := r.at(path)
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	f, err := openFileAt(dirfd, name, path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	done()
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
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

// ErrSkipLine, returned by a ScanLines decoder, passes over a line the
// caller does not want without counting it as corrupt.
var ErrSkipLine = errors.New("line skipped")

// MaxLineLen bounds one JSONL line; longer lines are skipped and counted
// as corrupt.
const MaxLineLen = 1 << 20

// ScanJSONL streams path line by line, decoding each into a T and calling
// fn. A missing file is an empty log; anything but a regular file (a
// symlink, a FIFO, a device) is refused. Lines that do not decode (a torn
// last line, a stray edit, a line over MaxLineLen) are skipped and
// counted, never fatal. fn may stop the scan early by returning io.EOF.
func ScanJSONL[T any](path string, fn func(T) error) (ScanStats, error) {
	return ScanLines(path, 0, func(line []byte, v *T) error { return json.Unmarshal(line, v) }, fn)
}

// ScanJSONLTail is ScanJSONL over the last tail bytes of path only.
func ScanJSONLTail[T any](path string, tail int64, fn func(T) error) (ScanStats, error) {
	return ScanLines(path, tail, func(line []byte, v *T) error { return json.Unmarshal(line, v) }, fn)
}

// ScanLines is ScanJSONL with the line decoder given, for logs that have a
// faster decoder than encoding/json. When tail > 0 only the last tail
// bytes are read (from the first whole line in them): the newest records
// of a log that only grows, in bounded time whatever its size.
func ScanLines[T any](path string, tail int64, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	return ScanLinesBeneath(Root{}, path, tail, decode, fn)
}

// ScanJSONLBeneath is ScanJSONL beneath r (see Root).
func ScanJSONLBeneath[T any](r Root, path string, fn func(T) error) (ScanStats, error) {
	return ScanLinesBeneath(r, path, 0, func(line []byte, v *T) error { return json.Unmarshal(line, v) }, fn)
}

// ScanLinesBeneath is ScanLines beneath r (see Root).
func ScanLinesBeneath[T any](r Root, path string, tail int64, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	f, err := r.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ScanStats{}, nil
	} else if err != nil {
		return ScanStats{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	return ScanFile(f, 0, tail, decode, fn)
}

// ScanFile is ScanLines over a file the caller opened (with OpenRegular),
// from byte offset from, which must start a line; tail, when > 0, reads
// only the last tail bytes instead. A caller that read an offset from the
// file itself scans that same file, even if another process has replaced
// the path since.
func ScanFile[T any](f *os.File, from, tail int64, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	var st ScanStats
	path := f.Name()
	r := bufio.NewReaderSize(f, 256<<10)
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	if tail > 0 {
		if fi, err := f.Stat(); err == nil && fi.Size() > tail {
			// Start after the last newline before the tail, so a line that
			// begins exactly at the tail is kept and a cut one is not.
			if _, err := f.Seek(fi.Size()-tail-1, io.SeekStart); err != nil {
				return st, fmt.Errorf("read %s: %w", path, err)
			}
			if err := skipLine(r); err != nil {
				return st, nil // no line starts in the tail
			}
		}
	}
	return scanReader(r, path, st, decode, fn)
}

// ScanFileRange is ScanFile over the bytes [from, to) of f, both line
// starts: what a caller that keeps where it stopped reads of a log that
// only grows, without the line a writer may be appending past to.
func ScanFileRange[T any](f *os.File, from, to int64, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, max(to-from, 0)), 256<<10)
	return scanReader(r, f.Name(), ScanStats{}, decode, fn)
}

// scanReader decodes the lines r gives, as ScanFile describes.
func scanReader[T any](r *bufio.Reader, path string, st ScanStats, decode func([]byte, *T) error, fn func(T) error) (ScanStats, error) {
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= MaxLineLen {
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
			if jerr := decode(line, &v); jerr == ErrSkipLine {
			} else if jerr != nil {
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
