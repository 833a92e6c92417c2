package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// What a harness reports of its model's usage, and where (read from the
// real harnesses' transcripts, cmd/baton/*_real_test.go):
//
//	Claude Code: every assistant line carries its API message's usage; the
//	  lines of one message (one per content block) repeat it:
//	  {"type":"assistant","timestamp":…,"message":{"id":"msg_…","model":…,"usage":{"input_tokens":…,
//	  "cache_creation_input_tokens":…,"cache_read_input_tokens":…,"output_tokens":…}}}
//	Codex CLI rollout: running totals for the thread, and the model once a turn:
//	  {"type":"event_msg","timestamp":…,"payload":{"type":"token_count","info":{"total_token_usage":
//	  {"input_tokens":…,"cached_input_tokens":…,"cache_write_input_tokens":…,"output_tokens":…}}}}
//	  {"type":"turn_context","payload":{"model":"gpt-5.5",…}}
//	pi: every assistant message carries its usage and the cost pi priced it at:
//	  {"type":"message","timestamp":…,"message":{"role":"assistant","model":…,"usage":{"input":…,
//	  "output":…,"cacheRead":…,"cacheWrite":…,"cost":{"total":…}}}}
//	Factory Droid: nothing in the transcript; the session's running totals
//	  are in <transcript without .jsonl>.settings.json:
//	  {"model":…,"tokenUsage":{"inputTokens":…,"outputTokens":…,"cacheCreationTokens":…,"cacheReadTokens":…}}
//
// Input counts exclude cached reads and cache writes in every harness's
// convention but OpenAI's, whose input_tokens includes them: baton.Tokens
// normalises that.

// Usage is what a session spent in the part of its transcript read.
type Usage struct {
	// ByModel are the tokens per model ("" when the harness did not say).
	ByModel map[string]baton.Tokens
	// Recorded is the cost the harness priced the usage at itself, per
	// model, where it does (pi).
	Recorded map[string]float64
	// Tools are the tool calls in the part read, each a digest of its
	// name and input (baton.Digest), distinct, at most MaxTools; Read
	// says the transcript was there to read, so no tool call means none
	// was made.
	Tools []string
	Read  bool
}

// MaxTools bounds Usage.Tools.
const MaxTools = 256

func (u *Usage) tool(name string, input []byte) {
	if len(u.Tools) >= MaxTools {
		return
	}
	var c bytes.Buffer
	if json.Compact(&c, input) != nil {
		c.Reset()
		c.Write(input)
	}
	d := baton.Digest(name, c.String())
	for _, t := range u.Tools {
		if t == d {
			return
		}
	}
	u.Tools = append(u.Tools, d)
}

// Total is every model's tokens together.
func (u Usage) Total() baton.Tokens {
	var t baton.Tokens
	for _, m := range u.ByModel {
		t = t.Add(m)
	}
	return t
}

func (u *Usage) add(model string, t baton.Tokens, cost float64, costKnown bool) {
	if u.ByModel == nil {
		u.ByModel = map[string]baton.Tokens{}
	}
	u.ByModel[model] = u.ByModel[model].Add(t)
	if costKnown {
		if u.Recorded == nil {
			u.Recorded = map[string]float64{}
		}
		u.Recorded[model] += cost
	}
}

// Limits of a usage read.
const (
	// DefaultMaxUsageRead bounds the bytes one read takes: a stop reads what
	// is new since the last, and what is over this waits for the next.
	DefaultMaxUsageRead = 64 << 20
	// MaxUsageLine bounds one line; longer lines (a tool's huge output)
	// are skipped: usage lines are small.
	MaxUsageLine = 8 << 20
	// maxCount bounds one reported count, so no transcript can overflow a
	// sum.
	maxCount = 1 << 40
)

// UsageOptions tune a read. Zero values pick the defaults.
type UsageOptions struct {
	MaxRead int64 // 0: DefaultMaxUsageRead
	MaxLine int   // 0: MaxUsageLine
	// Droid reads the running totals beside a Droid transcript instead of
	// the transcript.
	Droid bool
	// Now stamps a restart of the cursor (a transcript that shrank).
	Now   time.Time
	chunk int // read size; tests use tiny ones
}

// ReadUsage reads what the session whose transcript is path spent since
// cur, and returns it with the cursor for the next read. It reads forward
// from cur.Offset, whole lines only (a line still being written waits for
// the next read), at most MaxRead bytes; lines stamped before cur.Since
// are not counted. A cursor at another path starts that path from its
// beginning. A missing transcript spends nothing.
func ReadUsage(path string, cur baton.UsageCursor, opts UsageOptions) (Usage, baton.UsageCursor, error) {
	if opts.MaxRead <= 0 {
		opts.MaxRead = DefaultMaxUsageRead
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = MaxUsageLine
	}
	if opts.chunk <= 0 {
		opts.chunk = 256 << 10
	}
	if cur.Path != path {
		// Another transcript (a rebound loop, a first read): start it from
		// its beginning; Since keeps what came before the loop out.
		since := cur.Since
		cur = baton.UsageCursor{Path: path, Since: since}
	}
	if opts.Droid {
		u, next, err := readDroidUsage(path, cur)
		if err != nil {
			return u, next, err
		}
		// Droid's tool calls are in its transcript, its usage beside it:
		// the transcript is read from the cursor for the calls alone.
		t, tcur, err := readTranscript(path, next, opts)
		next.Offset, next.SkipLine = tcur.Offset, tcur.SkipLine
		u.Tools, u.Read = t.Tools, t.Read
		return u, next, err
	}
	return readTranscript(path, cur, opts)
}

// readTranscript reads the usage and tool calls of the transcript at path
// from cur.
func readTranscript(path string, cur baton.UsageCursor, opts UsageOptions) (Usage, baton.UsageCursor, error) {
	f, err := safefile.OpenRegularFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Usage{}, cur, nil
	} else if err != nil {
		return Usage{}, cur, fmt.Errorf("open transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Usage{}, cur, fmt.Errorf("stat transcript %s: %w", path, err)
	}
	if fi.Size() < cur.Offset {
		// Rewritten shorter: start again, counting only what is new now.
		cur = baton.UsageCursor{Path: path, Since: opts.Now.UTC()}
	}
	u, next, err := readUsageFrom(f, fi.Size(), cur, opts)
	u.Read = err == nil
	return u, next, err
}

// readUsageFrom is ReadUsage over r, whose size is size.
func readUsageFrom(r io.ReaderAt, size int64, cur baton.UsageCursor, opts UsageOptions) (Usage, baton.UsageCursor, error) {
	var u Usage
	st := usageState{cur: cur}
	end := min(size, cur.Offset+opts.MaxRead)
	pos := cur.Offset
	skipping := cur.SkipLine // inside a line over MaxLine, dropped to its end
	var buf []byte
	// Read to end, and past it while no line has ended yet: each read
	// moves on by at least one line (or one over-long line's part).
	for pos < size && (pos < end || st.cur.Offset == cur.Offset && st.cur.SkipLine == cur.SkipLine) {
		chunk := make([]byte, min(int64(opts.chunk), size-pos))
		if _, err := r.ReadAt(chunk, pos); err != nil && !errors.Is(err, io.EOF) {
			return Usage{}, cur, fmt.Errorf("read transcript: %w", err)
		}
		pos += int64(len(chunk))
		buf = append(buf, chunk...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			if !skipping {
				st.line(&u, buf[:i])
			}
			skipping = false
			buf = buf[i+1:]
			st.cur.Offset, st.cur.SkipLine = pos-int64(len(buf)), false
		}
		if len(buf) > opts.MaxLine || skipping && len(buf) > 0 {
			// Too long to be a usage line: drop it up to its end, here or in
			// a later read.
			skipping, buf = true, buf[:0]
			st.cur.Offset, st.cur.SkipLine = pos, true
		}
	}
	return u, st.cur, nil
}

// usageState carries a read's cursor from line to line.
type usageState struct {
	cur baton.UsageCursor
}

// usageLine is the part of a transcript line that says what was spent.
type usageLine struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Message   *struct {
		ID      string      `json:"id"`
		Role    string      `json:"role"`
		Model   string      `json:"model"`
		Usage   *usageBlock `json:"usage"`
		Content toolBlocks  `json:"content"`
	} `json:"message"`
	Payload *struct {
		Type  string `json:"type"`
		Model string `json:"model"`
		Info  *struct {
			Total *openAITokens `json:"total_token_usage"`
		} `json:"info"`
		// A Codex tool call: function_call (arguments), custom_tool_call
		// (input), local_shell_call (action).
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Input     json.RawMessage `json:"input"`
		Action    json.RawMessage `json:"action"`
	} `json:"payload"`
}

// toolBlocks are the tool calls of a message's content: Claude Code's
// and Droid's tool_use (input), pi's toolCall (arguments). A content that
// is a string (a user's plain message) has none.
type toolBlocks []toolBlock

type toolBlock struct {
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Arguments json.RawMessage `json:"arguments"`
}

func (t *toolBlocks) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var all []toolBlock
	if err := json.Unmarshal(b, &all); err != nil {
		return nil // not blocks of a shape baton knows: no tool calls
	}
	for _, blk := range all {
		if blk.Type == "tool_use" || blk.Type == "toolCall" {
			*t = append(*t, blk)
		}
	}
	return nil
}

// usageBlock is a message's usage as Claude Code or pi writes it.
type usageBlock struct {
	// Claude Code (the Anthropic API's names).
	InputTokens   *float64 `json:"input_tokens"`
	CacheCreation float64  `json:"cache_creation_input_tokens"`
	CacheRead     float64  `json:"cache_read_input_tokens"`
	OutputTokens  float64  `json:"output_tokens"`
	// pi.
	Input        *float64 `json:"input"`
	Output       float64  `json:"output"`
	PiCacheRead  float64  `json:"cacheRead"`
	PiCacheWrite float64  `json:"cacheWrite"`
	Cost         *struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// openAITokens is a Codex running total: input includes cached input.
type openAITokens struct {
	Input      float64 `json:"input_tokens"`
	Cached     float64 `json:"cached_input_tokens"`
	CacheWrite float64 `json:"cache_write_input_tokens"`
	Output     float64 `json:"output_tokens"`
}

func (o openAITokens) tokens() baton.Tokens {
	in, cached, write := count(o.Input), count(o.Cached), count(o.CacheWrite)
	return baton.Tokens{Input: max(in-cached-write, 0), CacheRead: cached, CacheWrite: write, Output: count(o.Output)}
}

// count reads a reported number as a count: whole, not negative, bounded.
func count(f float64) int64 {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f > maxCount {
		return maxCount
	}
	return int64(f)
}

// cost reads a reported cost: not negative, finite, bounded.
func cost(f float64) float64 {
	if math.IsNaN(f) || f <= 0 || math.IsInf(f, 0) {
		return 0
	}
	return min(f, 1e9)
}

var (
	markUsage       = []byte(`"usage"`)
	markTokenCount  = []byte(`"token_count"`)
	markTurnContext = []byte(`"turn_context"`)
	// Tool calls: Claude Code's carry "usage" too; Droid's, pi's and
	// Codex's may not.
	markToolMarks = [][]byte{[]byte(`"tool_use"`), []byte(`"toolCall"`), []byte(`"function_call"`), []byte(`"custom_tool_call"`), []byte(`"local_shell_call"`)}
)

// hasMark reports whether line may be one the usage reader decodes.
func hasMark(line []byte) bool {
	if bytes.Contains(line, markUsage) || bytes.Contains(line, markTokenCount) || bytes.Contains(line, markTurnContext) {
		return true
	}
	for _, m := range markToolMarks {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

// line adds what one line spent to u and moves the cursor's state.
func (st *usageState) line(u *Usage, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	if !hasMark(line) {
		return // the cheap skip: most lines are text, tool output and bookkeeping
	}
	var l usageLine
	if json.Unmarshal(line, &l) != nil {
		return
	}
	before := false
	if ts, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil && !st.cur.Since.IsZero() && ts.Before(st.cur.Since) {
		before = true // the session's work before the loop: not the loop's
	}
	if !before {
		st.tools(u, &l)
	}
	switch {
	case l.Type == "turn_context" && l.Payload != nil:
		if l.Payload.Model != "" {
			st.cur.Model = boundModel(l.Payload.Model)
		}
	case l.Type == "event_msg" && l.Payload != nil && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Total != nil:
		total := l.Payload.Info.Total.tokens()
		delta := total
		if prev := st.cur.Totals; prev != nil {
			delta = sub(total, *prev)
			if delta.Input < 0 || delta.CacheRead < 0 || delta.CacheWrite < 0 || delta.Output < 0 {
				delta = total // the totals restarted: all of it is new
			}
		}
		st.cur.Totals = &total
		if !before {
			u.add(st.cur.Model, delta, 0, false)
		}
	case l.Message != nil && l.Message.Usage != nil && l.Message.Role == "assistant" && l.Type == "message":
		// pi.
		b := l.Message.Usage
		if b.Input == nil || before {
			return
		}
		t := baton.Tokens{Input: count(*b.Input), CacheRead: count(b.PiCacheRead), CacheWrite: count(b.PiCacheWrite), Output: count(b.Output)}
		var c float64
		if b.Cost != nil {
			c = cost(b.Cost.Total)
		}
		u.add(boundModel(l.Message.Model), t, c, b.Cost != nil)
	case l.Type == "assistant" && l.Message != nil && l.Message.Usage != nil:
		// Claude Code: the lines of one message repeat its usage, the later
		// ones at least as large; what a line adds is what it reports beyond
		// what the message's earlier lines did.
		b := l.Message.Usage
		if b.InputTokens == nil || l.Message.Model == "<synthetic>" {
			return
		}
		t := baton.Tokens{Input: count(*b.InputTokens), CacheRead: count(b.CacheRead), CacheWrite: count(b.CacheCreation), Output: count(b.OutputTokens)}
		delta := t
		id := boundModel(l.Message.ID)
		if id != "" && id == st.cur.LastID && st.cur.Totals != nil {
			seen := *st.cur.Totals
			delta = baton.Tokens{Input: max(t.Input-seen.Input, 0), CacheRead: max(t.CacheRead-seen.CacheRead, 0),
				CacheWrite: max(t.CacheWrite-seen.CacheWrite, 0), Output: max(t.Output-seen.Output, 0)}
			t = baton.Tokens{Input: max(t.Input, seen.Input), CacheRead: max(t.CacheRead, seen.CacheRead),
				CacheWrite: max(t.CacheWrite, seen.CacheWrite), Output: max(t.Output, seen.Output)}
		}
		st.cur.LastID, st.cur.Totals = id, &t
		if id == "" {
			st.cur.Totals = nil
		}
		if !before && delta != (baton.Tokens{}) {
			u.add(boundModel(l.Message.Model), delta, 0, false)
		}
	}
}

// tools adds the tool calls of one decoded line to u.
func (st *usageState) tools(u *Usage, l *usageLine) {
	if m := l.Message; m != nil && m.Role == "assistant" {
		for _, b := range m.Content {
			in := b.Input
			if b.Type == "toolCall" {
				in = b.Arguments
			}
			u.tool(b.Name, in)
		}
	}
	if p := l.Payload; p != nil && l.Type == "response_item" {
		switch p.Type {
		case "function_call":
			u.tool(p.Name, p.Arguments)
		case "custom_tool_call":
			u.tool(p.Name, p.Input)
		case "local_shell_call":
			u.tool("local_shell", p.Action)
		}
	}
}

func sub(a, b baton.Tokens) baton.Tokens {
	return baton.Tokens{Input: a.Input - b.Input, CacheRead: a.CacheRead - b.CacheRead, CacheWrite: a.CacheWrite - b.CacheWrite, Output: a.Output - b.Output}
}

// boundModel keeps a model name (or message id) from a transcript short
// and printable: it is stored in the loop file.
func boundModel(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return -1
		}
		return r
	}, s)
	if len(s) > 100 {
		s = baton.Truncate(s, 100, "")
	}
	return s
}

// maxSettings bounds Droid's settings file.
const maxSettings = 1 << 20

// droidSettings is the part of Droid's <session>.settings.json baton reads.
type droidSettings struct {
	Model      string `json:"model"`
	TokenUsage *struct {
		Input      float64 `json:"inputTokens"`
		Output     float64 `json:"outputTokens"`
		CacheWrite float64 `json:"cacheCreationTokens"`
		CacheRead  float64 `json:"cacheReadTokens"`
	} `json:"tokenUsage"`
}

// readDroidUsage reads the running totals Droid keeps beside its
// transcript and counts what they grew by since cur. On the first read of
// a session that began before cur.Since, the totals so far are the
// session's work before the loop: they become the baseline.
func readDroidUsage(path string, cur baton.UsageCursor) (Usage, baton.UsageCursor, error) {
	p := strings.TrimSuffix(path, ".jsonl") + ".settings.json"
	f, err := safefile.OpenRegularFollow(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Usage{}, cur, nil
	} else if err != nil {
		return Usage{}, cur, fmt.Errorf("open %s: %w", p, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSettings+1))
	f.Close()
	if err != nil {
		return Usage{}, cur, fmt.Errorf("read %s: %w", p, err)
	}
	if len(b) > maxSettings {
		return Usage{}, cur, fmt.Errorf("%s is over %d bytes", p, maxSettings)
	}
	var s droidSettings
	if err := json.Unmarshal(b, &s); err != nil || s.TokenUsage == nil {
		return Usage{}, cur, nil // not written yet, or being written
	}
	total := baton.Tokens{Input: count(s.TokenUsage.Input), CacheRead: count(s.TokenUsage.CacheRead), CacheWrite: count(s.TokenUsage.CacheWrite), Output: count(s.TokenUsage.Output)}
	var u Usage
	delta := total
	switch {
	case cur.Totals != nil:
		delta = sub(total, *cur.Totals)
		if delta.Input < 0 || delta.CacheRead < 0 || delta.CacheWrite < 0 || delta.Output < 0 {
			delta = total
		}
	case !cur.Since.IsZero() && sessionStartedBefore(path, cur.Since):
		delta = baton.Tokens{}
	}
	cur.Totals, cur.Droid = &total, true
	cur.Model = boundModel(s.Model)
	if delta != (baton.Tokens{}) {
		u.add(cur.Model, delta, 0, false)
	}
	return u, cur, nil
}

// sessionStartedBefore reports whether the transcript's first stamped line
// is older than t (reading at most its first 64 KiB).
func sessionStartedBefore(path string, t time.Time) bool {
	f, err := safefile.OpenRegularFollow(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, b)
	for _, line := range bytes.Split(b[:n], []byte("\n")) {
		var l struct {
			Timestamp string `json:"timestamp"`
		}
		if json.Unmarshal(line, &l) != nil || l.Timestamp == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, l.Timestamp)
		return err == nil && ts.Before(t)
	}
	return false
}

// StartCursor is the usage cursor of a loop started now in the session
// whose transcript is path: past the transcript's last whole line (and,
// for Droid, at its running totals), so only what the session spends
// from now on is the loop's. A transcript that cannot be read gives a
// cursor that counts from now by the lines' stamps.
func StartCursor(path string, droid bool, now time.Time) baton.UsageCursor {
	cur := baton.UsageCursor{Path: path, Since: now.UTC()}
	if droid {
		if _, c, err := readDroidUsage(path, baton.UsageCursor{Path: path}); err == nil {
			cur.Totals, cur.Model, cur.Droid = c.Totals, c.Model, c.Droid
		}
		// The transcript is read for tool calls from its end now.
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			cur.Offset = fi.Size()
		}
		return cur
	}
	f, err := safefile.OpenRegularFollow(path)
	if err != nil {
		return cur
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return cur
	}
	// The lines of the last MiB are read as a stop reads them, counting
	// nothing (all are before now) but leaving the cursor past the last
	// whole line with what a running total needs: Codex's last totals
	// and model, the Claude message last seen. A longer last line is read
	// (and skipped) from its start by the first stop.
	size := fi.Size()
	start := max(size-1<<20, 0)
	if start > 0 {
		b := make([]byte, size-start)
		n, _ := f.ReadAt(b, start)
		i := bytes.IndexByte(b[:n], '\n')
		if i < 0 {
			cur.Offset, cur.SkipLine = start, true
			return cur
		}
		start += int64(i) + 1
	}
	_, c, err := readUsageFrom(f, size, baton.UsageCursor{Path: path, Offset: start, Since: cur.Since},
		UsageOptions{MaxRead: size - start, MaxLine: MaxUsageLine, chunk: 256 << 10, Now: now})
	if err != nil {
		return cur
	}
	return c
}
