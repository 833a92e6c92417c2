// Package transcript reads the last assistant message from a harness's
// session transcript (JSONL), from the end of the file backwards, so a
// 100 MB transcript costs what its last few lines cost.
//
// Two line shapes are understood:
//
//	Claude Code: {"type":"assistant","isSidechain":false,"message":{"id":"msg_…","role":"assistant","content":[{"type":"text","text":"…"},…]}}
//	Factory Droid: {"type":"message","id":"…","message":{"role":"assistant","content":[…]}}
//	Codex CLI rollout: {"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"…"}]}}
//
// Claude splits one API message over several lines that share message.id
// (often one content block per line, the last one frequently a tool_use),
// so the text of the last assistant message is gathered from all adjacent
// lines with that id. Sidechain (subagent) and meta lines are skipped.
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/baton-agent/baton/internal/safefile"
)

// Limits of a backwards read.
const (
	// DefaultMaxScan bounds how many bytes from the end are read before
	// giving up: a transcript whose last assistant text is further back
	// than this has none worth continuing from.
	DefaultMaxScan = 64 << 20
	// MaxLine bounds one line; longer lines (huge tool output) are skipped.
	MaxLine = 32 << 20
	// firstChunk is the first read size; reads double while a line is
	// longer than what has been read, so a long line costs O(its length).
	firstChunk = 64 << 10
)

// Options tune a read. Zero values pick the defaults.
type Options struct {
	MaxScan int64 // bytes from the end; 0 = DefaultMaxScan
	MaxLine int   // 0 = MaxLine
	chunk   int   // first read size; tests use tiny chunks
}

// LastAssistantText returns the text of the last assistant message in the
// transcript at path, its text blocks joined by newlines in file order.
// ok is false when no assistant text was found (a missing file, a
// transcript that lags the turn): callers must read that as "unknown",
// never as an empty message.
func LastAssistantText(path string, opts Options) (text string, ok bool, err error) {
	// The path comes from a payload: it may name a FIFO (open(2) would
	// wait for a writer forever) or a device. Open without blocking and
	// read only a regular file.
	f, err := safefile.OpenRegularFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, fmt.Errorf("open transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("stat transcript %s: %w", path, err)
	}
	return LastAssistantTextFrom(f, fi.Size(), opts)
}

// LastAssistantTextFrom is LastAssistantText over the first size bytes of r.
func LastAssistantTextFrom(r io.ReaderAt, size int64, opts Options) (string, bool, error) {
	if opts.MaxScan <= 0 {
		opts.MaxScan = DefaultMaxScan
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = MaxLine
	}
	if opts.chunk <= 0 {
		opts.chunk = firstChunk
	}
	bl := &backLines{r: r, pos: size, opts: opts}
	var g gatherer
	for {
		line, more, err := bl.next()
		if err != nil {
			return "", false, err
		}
		if !more {
			break
		}
		if g.add(line) {
			break
		}
	}
	return g.result()
}

// gatherer collects the last assistant message from lines fed newest
// first. add reports when the message is complete.
type gatherer struct {
	found bool
	key   string
	texts []string // newest first
}

var assistantMark = []byte(`"assistant"`)

func (g *gatherer) add(line []byte) (done bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return false
	}
	if !g.found && !bytes.Contains(line, assistantMark) {
		return false // cheap skip of tool results, progress and bookkeeping lines
	}
	var l rawLine
	if json.Unmarshal(line, &l) != nil {
		return false // a torn or foreign line
	}
	l.normalize()
	if l.IsSidechain || l.IsMeta {
		return false
	}
	if !l.assistant() {
		// A user turn (a prompt or tool results) ends the message; other
		// records (system, summaries, snapshots) are skipped.
		return g.found && l.user()
	}
	key := l.key()
	if g.found {
		if key == "" || key != g.key {
			return true // an earlier message
		}
		g.texts = append(g.texts, l.texts()...)
		return false
	}
	ts := l.texts()
	if len(ts) == 0 {
		return false // tool use only: the text is further back
	}
	g.found, g.key, g.texts = true, key, ts
	return key == "" // nothing to gather without an id
}

func (g *gatherer) result() (string, bool, error) {
	if !g.found {
		return "", false, nil
	}
	// texts holds lines newest first, and each line's blocks in order.
	var parts []string
	for i := len(g.texts) - 1; i >= 0; i-- {
		parts = append(parts, g.texts[i])
	}
	return strings.Join(parts, "\n"), true, nil
}

// rawLine is the part of a transcript line the reader needs.
type rawLine struct {
	Type        string       `json:"type"`
	ID          string       `json:"id"`
	Timestamp   string       `json:"timestamp"`
	IsSidechain bool         `json:"isSidechain"`
	IsMeta      bool         `json:"isMeta"`
	Message     *rawMessage  `json:"message"`
	Payload     *codexRecord `json:"payload"`
}

type rawMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// codexRecord is the payload of a Codex rollout line.
type codexRecord struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// normalize reads a Codex rollout message as the Droid-shaped line it
// amounts to: one message per line, with no id.
func (l *rawLine) normalize() {
	if l.Type == "response_item" && l.Payload != nil && l.Payload.Type == "message" && l.Message == nil {
		l.Type = "message"
		l.Message = &rawMessage{Role: l.Payload.Role, Content: l.Payload.Content}
	}
}

func (l *rawLine) role() string {
	if l.Message != nil && l.Message.Role != "" {
		return l.Message.Role
	}
	return l.Type
}

func (l *rawLine) assistant() bool {
	return l.Message != nil && (l.Type == "assistant" || l.Type == "message") && l.role() == "assistant"
}

func (l *rawLine) user() bool {
	return (l.Type == "user" || l.Type == "message") && l.role() == "user"
}

func (l *rawLine) key() string {
	if l.Message.ID != "" {
		return l.Message.ID
	}
	return l.ID
}

// texts returns the line's text blocks, newest first to match the
// gatherer's order; content may be a plain string too.
func (l *rawLine) texts() []string {
	out := textBlocks(l.Message.Content, "text", "output_text")
	slices.Reverse(out)
	return out
}

// backLines yields the lines of r[0:pos] from the last to the first.
type backLines struct {
	r       io.ReaderAt
	pos     int64  // bytes before pos are not read yet
	buf     []byte // read bytes [pos, pos+len(buf)) not yet yielded
	scanned int64
	skip    bool // the current line is over MaxLine: drop it
	opts    Options
}

// next returns the next line back; more is false at the start of the
// file or at the scan limit.
func (b *backLines) next() (line []byte, more bool, err error) {
	for {
		if i := bytes.LastIndexByte(b.buf, '\n'); i >= 0 {
			line, b.buf = b.buf[i+1:], b.buf[:i]
			if b.skip {
				b.skip = false
				continue
			}
			return line, true, nil
		}
		if b.pos == 0 || b.scanned >= b.opts.MaxScan {
			if b.buf == nil {
				return nil, false, nil
			}
			line, b.buf = b.buf, nil
			if b.skip || b.pos > 0 {
				// Over-long, or cut by the scan limit: not a whole line.
				return nil, false, nil
			}
			return line, true, nil
		}
		if len(b.buf) > b.opts.MaxLine {
			b.skip, b.buf = true, b.buf[:0]
		}
		n := int64(max(b.opts.chunk, len(b.buf)))
		n = min(n, b.pos, max(b.opts.MaxScan-b.scanned, 1))
		nb := make([]byte, int(n)+len(b.buf))
		if _, err := b.r.ReadAt(nb[:n], b.pos-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, fmt.Errorf("read transcript: %w", err)
		}
		copy(nb[n:], b.buf)
		b.buf = nb
		b.pos -= n
		b.scanned += n
	}
}
