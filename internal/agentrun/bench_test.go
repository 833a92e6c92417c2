package agentrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// claudeStream builds a stream-json transcript of about size bytes shaped
// like a real coding session: assistant text and tool calls, and tool
// results that carry file contents and command output (most of the bytes).
func claudeStream(tb testing.TB, size int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	line := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	line(map[string]any{"type": "system", "subtype": "init", "session_id": "s", "model": "claude-sonnet-4-5", "tools": []string{"Bash", "Read", "Edit"}})
	file := strings.Repeat("func f() { return strings.TrimSpace(x) }\n", 800) // ~33 KB
	output := strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.01s\n", 250)        // ~8 KB
	for i := 0; buf.Len() < size; i++ {
		id := fmt.Sprintf("msg_%d", i)
		line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "session_id": "s", "message": map[string]any{
			"id": id, "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []any{map[string]any{"type": "text", "text": "Let me look at the next file and run the tests."}},
			"usage":   map[string]any{"input_tokens": 3, "output_tokens": 40, "cache_read_input_tokens": 20000}}})
		line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "session_id": "s", "message": map[string]any{
			"id": id, "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t" + id, "name": "Read", "input": map[string]any{"file_path": "/repo/pkg/file.go"}}}}})
		line(map[string]any{"type": "user", "session_id": "s", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t" + id, "content": file}}}})
		line(map[string]any{"type": "assistant", "parent_tool_use_id": nil, "session_id": "s", "message": map[string]any{
			"id": id + "b", "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "u" + id, "name": "Bash", "input": map[string]any{"command": "go test ./...", "description": "Run tests"}}}}})
		line(map[string]any{"type": "user", "session_id": "s", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "u" + id, "content": output}}}})
	}
	line(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "done", "session_id": "s", "num_turns": 100, "total_cost_usd": 1.5,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 2}})
	return buf.Bytes()
}

// BenchmarkClaudeStream parses a 50 MB stream-json transcript with the live
// view on, as Run does.
func BenchmarkClaudeStream(b *testing.B) {
	data := claudeStream(b, 50<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var live bytes.Buffer
		res, found, err := decodeStream(bytes.NewReader(data), newDecoder(kindClaude, newLiveView(&live)))
		if err != nil || !found || res.FinalText != "done" {
			b.Fatalf("decode = %q, %v, %v", res.FinalText, found, err)
		}
	}
}

// BenchmarkCodexEvents parses a 50 MB codex exec --json stream whose bulk
// is command output.
func BenchmarkCodexEvents(b *testing.B) {
	var buf bytes.Buffer
	output := strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.01s\n", 1000)
	buf.WriteString(`{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"turn.started"}` + "\n")
	for i := 0; buf.Len() < 50<<20; i++ {
		fmt.Fprintf(&buf, `{"type":"item.started","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'go test ./...'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`+"\n", i)
		b, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]any{"id": fmt.Sprintf("item_%d", i), "type": "command_execution", "command": "bash -lc 'go test ./...'", "aggregated_output": output, "exit_code": 0, "status": "completed"}})
		buf.Write(append(b, '\n'))
		fmt.Fprintf(&buf, `{"type":"item.completed","item":{"id":"m%d","type":"agent_message","text":"Tests pass so far."}}`+"\n", i)
	}
	buf.WriteString(`{"type":"item.completed","item":{"id":"z","type":"agent_message","text":"done"}}` + "\n")
	buf.WriteString(`{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}` + "\n")
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, found, err := decodeStream(bytes.NewReader(data), newDecoder(kindCodex, newLiveView(&bytes.Buffer{})))
		if err != nil || !found || res.FinalText != "done" {
			b.Fatalf("decode = %q, %v, %v", res.FinalText, found, err)
		}
	}
}
