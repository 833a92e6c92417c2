package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLastAssistantText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		want       string
		wantOK     bool
	}{
		// The last message's text blocks are spread over lines sharing
		// message.id and end in a tool_use line; sidechain and meta lines
		// after it are skipped.
		{"claude", "testdata/claude.jsonl", "All tests pass.\n<promise>DONE</promise>", true},
		{"droid", "testdata/droid.jsonl", "Cache wired.\n<promise>DONE</promise>", true},
		{"codex rollout", "testdata/codex.jsonl", "All tests pass.\n<promise>DONE</promise>", true},
		{"missing file", "testdata/nope.jsonl", "", false},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 1, 7, 100} {
			got, ok, err := LastAssistantText(tt.file, Options{chunk: chunk})
			if err != nil || got != tt.want || ok != tt.wantOK {
				t.Errorf("%s (chunk %d): LastAssistantText() = %q, %v, %v; want %q, %v", tt.name, chunk, got, ok, err, tt.want, tt.wantOK)
			}
		}
	}
}

func write(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	user     = `{"type":"user","message":{"role":"user","content":"go"}}`
	toolOnly = `{"type":"assistant","message":{"id":"msg_9","role":"assistant","content":[{"type":"tool_use","id":"t","name":"Edit","input":{}}]}}`
)

func asst(id, text string) string {
	return `{"type":"assistant","message":{"id":"` + id + `","role":"assistant","content":[{"type":"text","text":"` + text + `"}]}}`
}

func TestLastAssistantTextEdges(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10) // lines over 64 KiB
	tests := []struct {
		name   string
		path   string
		opts   Options
		want   string
		wantOK bool
	}{
		{"lagging transcript: only the user turn", write(t, user, ""), Options{}, "", false},
		{"tool use only at the end: earlier text of the same turn", write(t, user, asst("msg_1", "earlier"), user, toolOnly), Options{}, "earlier", true},
		{"a previous message is not gathered", write(t, asst("msg_1", "old"), user, asst("msg_2", "new")), Options{}, "new", true},
		{"adjacent messages with other ids are not gathered", write(t, asst("msg_1", "old"), asst("msg_2", "new")), Options{}, "new", true},
		{"torn last line", write(t, asst("msg_1", "whole"), `{"type":"assistant","message":{"id":"msg_2","role":"assist`), Options{}, "whole", true},
		{"long text line", write(t, user, asst("msg_1", long), ""), Options{}, long, true},
		{"long tool result after the text", write(t, asst("msg_1", "before"), `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"`+long+`"}]}}`), Options{}, "before", true},
		{"over-long line skipped", write(t, asst("msg_1", "kept"), asst("msg_2", long)), Options{MaxLine: 100 << 10}, "kept", true},
		{"scan limit", write(t, asst("msg_1", "far back"), `{"type":"user","message":{"role":"user","content":"`+long+`"}}`), Options{MaxScan: 64 << 10}, "", false},
		{"no trailing newline, CRLF", write(t, strings.ReplaceAll(asst("msg_1", "crlf")+"\r\n"+user+"\r\n"+asst("msg_2", "last"), "", "")), Options{}, "last", true},
		{"string content", write(t, `{"type":"assistant","message":{"role":"assistant","content":"plain"}}`), Options{}, "plain", true},
		{"empty file", write(t), Options{}, "", false},
	}
	for _, tt := range tests {
		got, ok, err := LastAssistantText(tt.path, tt.opts)
		if err != nil || got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: LastAssistantText() = %.40q, %v, %v; want %.40q, %v", tt.name, got, ok, err, tt.want, tt.wantOK)
		}
	}
	if _, _, err := LastAssistantText(t.TempDir(), Options{}); err == nil {
		t.Error("LastAssistantText(a directory) did not fail")
	}
}

// naive reads the whole input forwards and feeds the lines newest first:
// the model the backwards reader must agree with.
func naive(data []byte) (string, bool) {
	lines := bytes.Split(data, []byte("\n"))
	var g gatherer
	for i := len(lines) - 1; i >= 0; i-- {
		if g.add(lines[i]) {
			break
		}
	}
	s, ok, _ := g.result()
	return s, ok
}

func FuzzLastAssistantText(f *testing.F) {
	for _, p := range []string{"testdata/claude.jsonl", "testdata/droid.jsonl", "testdata/codex.jsonl"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(3))
	}
	f.Add([]byte(asst("a", "x")+"\n\n"+toolOnly), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		r := bytes.NewReader(data)
		got, ok, err := LastAssistantTextFrom(r, int64(len(data)), Options{chunk: int(chunk)})
		if err != nil {
			t.Fatalf("LastAssistantTextFrom error: %v", err)
		}
		want, wantOK := naive(data)
		if got != want || ok != wantOK {
			t.Fatalf("backwards read = %q, %v; forwards = %q, %v (chunk %d)\ninput: %q", got, ok, want, wantOK, chunk, data)
		}
	})
}
