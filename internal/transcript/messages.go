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
				if m, ok := MessageOf(buf[:i]); ok {
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

// messageLine is the part of a transcript line that holds a message.
type messageLine struct {
	Type        string       `json:"type"`
	Timestamp   string       `json:"timestamp"`
	IsSidechain bool         `json:"isSidechain"`
	IsMeta      bool         `json:"isMeta"`
	Message     *messageBody `json:"message"`
	Payload     *codexRecord `json:"payload"`
}

type messageBody struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// MessageOf reads one transcript line as a message; ok is false for
// anything else (tool calls and results, bookkeeping, torn lines).
func MessageOf(line []byte) (Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, false
	}
	for _, mark := range toolOutputMarks {
		if bytes.Contains(line, mark) {
			return Message{}, false
		}
	}
	var l messageLine
	if json.Unmarshal(line, &l) != nil || l.IsSidechain || l.IsMeta {
		return Message{}, false
	}
	var role string
	var content json.RawMessage
	switch {
	case l.Message != nil && (l.Type == "user" || l.Type == "assistant" || l.Type == "message"):
		role, content = l.Message.Role, l.Message.Content
	case l.Type == "response_item" && l.Payload != nil && l.Payload.Type == "message":
		role, content = l.Payload.Role, l.Payload.Content
	default:
		return Message{}, false
	}
	if role != "user" && role != "assistant" {
		return Message{}, false
	}
	text := strings.TrimSpace(strings.Join(textBlocks(content, "text", "output_text", "input_text"), "\n"))
	if text == "" {
		return Message{}, false
	}
	if len(text) > MaxMessageText {
		text = strings.ToValidUTF8(text[:MaxMessageText], "")
	}
	m := Message{Role: role, Text: text}
	if ts, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil {
		m.At = ts.UTC()
	}
	return m, true
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
