package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Message is one user or assistant message of a transcript, as a search
// index keeps it: its text blocks, not tool calls, tool output or
// reasoning.
type Message struct {
	Role   string // user or assistant
	Text   string
	At     time.Time // zero when the line has no stamp
	Offset int64     // where its line starts
}

// MaxMessageText bounds the text kept of one message.
const MaxMessageText = 64 << 10

// maxMessageLine bounds a line worth reading for messages: longer lines
// are tool output in practice.
const maxMessageLine = 1 << 20

// Tool results and outputs are most of a transcript's bytes and none of
// its conversation: their lines are skipped before they are decoded.
var toolOutputMarks = [][]byte{[]byte(`"tool_result"`), []byte(`"function_call_output"`), []byte(`"toolResult"`)}

// ScanMessages calls fn with each user and assistant message of the
// transcript in r from offset from, reading at most max bytes (whole
// lines; a line over 1 MiB is skipped), and returns the offset after the
// last whole line read. Claude Code, Codex, pi and Droid line shapes are
// understood; meta, sidechain and developer lines are not messages.
func ScanMessages(r io.ReaderAt, size, from, max int64, fn func(Message) error) (next int64, err error) {
	end := min(size, from+max)
	pos, next := from, from
	skipping := false
	var buf []byte
	var lastKey, lastText string
	for pos < size && (pos < end || next == from) {
		chunk := make([]byte, min(int64(256<<10), size-pos))
		if _, err := r.ReadAt(chunk, pos); err != nil && !errors.Is(err, io.EOF) {
			return next, fmt.Errorf("read transcript: %w", err)
		}
		pos += int64(len(chunk))
		buf = append(buf, chunk...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if !skipping {
				// A message repeated over its lines counts once.
				if m, key, ok := messageOf(buf[:i]); ok && (key == "" || key != lastKey || m.Text != lastText) {
					lastKey, lastText = key, m.Text
					m.Offset = pos - int64(len(buf))
					if err := fn(m); err != nil {
						return next, err
					}
				}
			}
			skipping = false
			buf = buf[i+1:]
			next = pos - int64(len(buf))
		}
		if len(buf) > maxMessageLine {
			skipping, buf = true, buf[:0]
		}
	}
	return next, nil
}

// MessageOf reads one transcript line as a message; ok is false for
// anything else (tool calls and results, bookkeeping, torn lines).
func MessageOf(line []byte) (Message, bool) {
	m, _, ok := messageOf(line)
	return m, ok
}

// messageOf is MessageOf that also returns the message's id ("" when the
// harness writes none): Claude Code writes one message over several
// lines, and may repeat its text in them.
func messageOf(line []byte) (Message, string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, "", false
	}
	for _, mark := range toolOutputMarks {
		if bytes.Contains(line, mark) {
			return Message{}, "", false
		}
	}
	var l rawLine
	if json.Unmarshal(line, &l) != nil || l.IsSidechain || l.IsMeta {
		return Message{}, "", false
	}
	l.normalize()
	if l.Message == nil || !l.assistant() && !l.user() {
		return Message{}, "", false
	}
	text := strings.TrimSpace(strings.Join(textBlocks(l.Message.Content, "text", "output_text", "input_text"), "\n"))
	if text == "" {
		return Message{}, "", false
	}
	if len(text) > MaxMessageText {
		text = strings.ToValidUTF8(text[:MaxMessageText], "")
	}
	m := Message{Role: l.role(), Text: text}
	if ts, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
		m.At = ts.UTC()
	}
	return m, l.key(), true
}

// textBlocks returns the blocks of a message's content whose type is one
// of types, in order; content may be a plain string too, its one text.
func textBlocks(c json.RawMessage, types ...string) []string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return nil
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) != nil {
			return nil
		}
		return []string{s}
	}
	var blocks []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(c, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Text != nil && slices.Contains(types, b.Type) {
			out = append(out, *b.Text)
		}
	}
	return out
}
