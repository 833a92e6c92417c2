package agentrun

import (
	"fmt"
	"io"
	"os"
)

// cappedLog writes a stream to a file up to limit bytes, then counts what
// it drops and says so in a note when closed. A nil *cappedLog discards.
// Write errors are kept for Close: losing a log must not stop the agent.
type cappedLog struct {
	f       *os.File
	limit   int64
	written int64
	dropped int64
	jsonl   bool // the note is a JSON line, so JSONL readers can skip it
	err     error
}

func createLog(path string, limit int64, jsonl bool) (*cappedLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &cappedLog{f: f, limit: limit, jsonl: jsonl}, nil
}

func (l *cappedLog) write(p []byte) {
	if l == nil {
		return
	}
	room := l.limit - l.written
	if room < int64(len(p)) {
		if room < 0 {
			room = 0
		}
		l.dropped += int64(len(p)) - room
		p = p[:room]
	}
	if len(p) == 0 {
		return
	}
	n, err := l.f.Write(p)
	l.written += int64(n)
	if err != nil && l.err == nil {
		l.err = err
	}
}

// Close writes the truncation note, if anything was dropped, and closes
// the file.
func (l *cappedLog) Close() error {
	if l == nil {
		return nil
	}
	if l.dropped > 0 {
		var note string
		if l.jsonl {
			note = fmt.Sprintf("\n{\"type\":\"baton_log_truncated\",\"limit_bytes\":%d,\"dropped_bytes\":%d}\n", l.limit, l.dropped)
		} else {
			note = fmt.Sprintf("\n[baton: log truncated at %d bytes; %d more bytes dropped]\n", l.limit, l.dropped)
		}
		if _, err := io.WriteString(l.f, note); err != nil && l.err == nil {
			l.err = err
		}
	}
	if err := l.f.Close(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}
