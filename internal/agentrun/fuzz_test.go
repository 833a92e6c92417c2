package agentrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// Fuzz targets for the four stdout readers. Each states invariants that
// hold for any output an agent (or a broken pipe) can produce:
//
//   - the reader never panics;
//   - the result does not depend on how reads split the stream;
//   - a well-formed final result printed on its own line after arbitrary
//     output is always found and wins, so no garbage before it can hide it;
//   - skipped events never outnumber lines.

// addRecorded seeds a fuzz target with the recorded streams of one agent.
func addRecorded(f *testing.F, prefix string) {
	files, _ := filepath.Glob("testdata/streams/" + prefix + "*")
	for _, p := range files {
		if strings.HasSuffix(p, ".golden") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkDecoder runs the shared invariants and returns the result for in
// followed by a newline and tail.
func checkDecoder(t *testing.T, k kind, in, tail []byte) (*Result, bool) {
	t.Helper()
	whole, found, err := decodeStream(bytes.NewReader(in), newDecoder(k, newLiveView(&bytes.Buffer{})))
	if err != nil {
		t.Fatalf("decodeStream error: %v", err)
	}
	split, found2, _ := decodeStream(iotest.HalfReader(bytes.NewReader(in)), newDecoder(k, nil))
	if diff := cmp.Diff(reportOf(whole, found), reportOf(split, found2)); diff != "" {
		t.Fatalf("result depends on read sizes for %q (-whole +split):\n%s", in, diff)
	}
	if lines := bytes.Count(in, []byte("\n")) + 1; whole.UnknownEvents > lines {
		t.Fatalf("UnknownEvents = %d for %d lines", whole.UnknownEvents, lines)
	}
	withTail := append(append(append([]byte(nil), in...), '\n'), tail...)
	res, found, err := decodeStream(bytes.NewReader(withTail), newDecoder(k, nil))
	if err != nil {
		t.Fatalf("decodeStream error: %v", err)
	}
	return res, found
}

func FuzzClaudeStream(f *testing.F) {
	addRecorded(f, "claude_")
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}` + "\n{\"type\":\"result\""))
	f.Fuzz(func(t *testing.T, in []byte) {
		tail := []byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_FZ","is_error":true,"content":"FAILED"}]}}` + "\n" +
			`{"type":"result","subtype":"success","is_error":false,"result":"FINAL","num_turns":3}`)
		res, found := checkDecoder(t, kindClaude, in, tail)
		if !found || res.FinalText != "FINAL" || res.NumTurns != 3 {
			t.Fatalf("result line after %q: found=%v FinalText=%q NumTurns=%d, want true, FINAL, 3", in, found, res.FinalText, res.NumTurns)
		}
		checkOneMoreFailure(t, kindClaude, in, res)
	})
}

func FuzzCodexEvents(f *testing.F) {
	addRecorded(f, "codex_")
	f.Add([]byte(`{"type":"item.completed","item":{"type":"agent_message"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		tail := []byte(`{"type":"item.completed","item":{"id":"zf","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"failed"}}` + "\n" +
			`{"type":"item.completed","item":{"id":"z","type":"agent_message","text":"FINAL"}}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":2,"output_tokens":1}}`)
		res, found := checkDecoder(t, kindCodex, in, tail)
		if !found || res.FinalText != "FINAL" || res.InputTokens != 7 || res.CacheReadTokens != 2 {
			t.Fatalf("final events after %q: found=%v FinalText=%q tokens=%d/%d, want true, FINAL, 7/2", in, found, res.FinalText, res.InputTokens, res.CacheReadTokens)
		}
		checkOneMoreFailure(t, kindCodex, in, res)
	})
}

// checkOneMoreFailure checks that res, the result of in followed by one
// failed tool call, counts exactly one failure more than in alone: no
// output before a failed call can hide it or make it count twice.
func checkOneMoreFailure(t *testing.T, k kind, in []byte, res *Result) {
	t.Helper()
	base, _, _ := decodeStream(bytes.NewReader(in), newDecoder(k, nil))
	if res.ToolFailures != base.ToolFailures+1 {
		t.Fatalf("a failed call after %q: %d failures, want %d", in, res.ToolFailures, base.ToolFailures+1)
	}
	if base.ToolFailures < maxFailedTools && len(res.FailedTools) != base.ToolFailures+1 {
		t.Fatalf("a failed call after %q: FailedTools %q, want it listed", in, res.FailedTools)
	}
}

func FuzzPiEvents(f *testing.F) {
	addRecorded(f, "pi_")
	f.Add([]byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text"`))
	f.Fuzz(func(t *testing.T, in []byte) {
		tail := []byte(`{"type":"tool_execution_end","toolCallId":"z","toolName":"bash","args":{"command":"false"},"result":{"content":[{"type":"text","text":"FAILED"}]},"isError":true}` + "\n" +
			`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"FINAL"}],"model":"m","usage":{"input":7,"output":1,"cacheRead":2},"stopReason":"stop"}}` + "\n" +
			`{"type":"agent_end","messages":[]}`)
		res, found := checkDecoder(t, kindPi, in, tail)
		if !found || res.FinalText != "FINAL" || res.IsError || res.Model != "m" {
			t.Fatalf("final events after %q: found=%v FinalText=%q IsError=%v Model=%q, want true, FINAL, false, m", in, found, res.FinalText, res.IsError, res.Model)
		}
		checkOneMoreFailure(t, kindPi, in, res)
	})
}

func FuzzDroidOutput(f *testing.F) {
	addRecorded(f, "droid_")
	f.Add([]byte("{\n  \"type\": \"result\",\n  \"result\": \"unterminated"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tail := []byte(`{"type":"result","subtype":"success","is_error":false,"result":"FINAL","session_id":"s"}`)
		res, found := checkDecoder(t, kindDroid, in, tail)
		if !found || res.FinalText != "FINAL" || res.IsError {
			t.Fatalf("result object after %q: found=%v FinalText=%q IsError=%v, want true, FINAL, false", in, found, res.FinalText, res.IsError)
		}
	})
}

func FuzzCommandOutput(f *testing.F) {
	addRecorded(f, "command_")
	f.Add([]byte("{\n\"a\": \"}\\\"{\"\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		plain, found, _ := decodeStream(bytes.NewReader(in), newDecoder(kindCommand, nil))
		if plain.Structured != nil && !json.Valid(plain.Structured) {
			t.Fatalf("Structured %q is not valid JSON", plain.Structured)
		}
		if found != (len(bytes.TrimSpace(in)) > 0) {
			t.Fatalf("found = %v for %q, want true exactly when output is not blank", found, in)
		}
		res, found := checkDecoder(t, kindCommand, in, []byte(`{"status":"FINAL"}`+"\n\n"))
		if !found || string(res.Structured) != `{"status":"FINAL"}` {
			t.Fatalf("object after %q: found=%v Structured=%q, want the object", in, found, res.Structured)
		}
	})
}
