package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func messages(t *testing.T, file string) []Message {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []Message
	next, err := ScanMessages(bytes.NewReader(b), int64(len(b)), 0, 1<<30, func(m Message) error { out = append(out, m); return nil })
	if err != nil || next != int64(len(b)) {
		t.Fatalf("ScanMessages(%s) = %d, %v; want the whole file (%d)", file, next, err, len(b))
	}
	return out
}

// The messages of each harness's real transcript: prompts and replies,
// not tool calls, tool results or hook bookkeeping.
func TestScanMessages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file string
		want []string
	}{
		{"testdata/usage_claude.jsonl", []string{"user: Write a greeting to hello.txt", "assistant: I wrote hello.txt.", "assistant: The greeting is written.\n<promise>DONE</promise>"}},
		{"testdata/usage_pi.jsonl", []string{"user: Write a greeting to hello.txt", "assistant: I wrote hello.txt."}},
	} {
		var got []string
		for _, m := range messages(t, tt.file) {
			got = append(got, m.Role+": "+m.Text)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s messages = %q, want %q", tt.file, got, tt.want)
		}
	}
	var codex []string
	for _, m := range messages(t, "testdata/usage_codex.jsonl") {
		if m.Role == "assistant" {
			codex = append(codex, m.Text)
		}
	}
	if strings.Join(codex, "|") != "Looking at the greeting.|The greeting is right.\n<promise>DONE</promise>" {
		t.Errorf("codex assistant messages = %q", codex)
	}
}

// A message written in any harness's shape reads back as its text.
func FuzzMessageOf(f *testing.F) {
	f.Add("Fix the login bug", uint8(0))
	f.Add("  <promise>DONE</promise>\n", uint8(3))
	f.Fuzz(func(t *testing.T, text string, shape uint8) {
		q, _ := json.Marshal(text)
		lines := []string{
			fmt.Sprintf(`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":%s}]}}`, q),
			fmt.Sprintf(`{"type":"user","message":{"role":"user","content":%s}}`, q),
			fmt.Sprintf(`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":%s}]}}`, q),
			fmt.Sprintf(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":%s}]}}`, q),
		}
		line := lines[int(shape)%len(lines)]
		m, ok := MessageOf([]byte(line))
		// What the line holds: JSON writes each invalid byte as U+FFFD.
		var held string
		if err := json.Unmarshal(q, &held); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSpace(held)
		if len(want) > MaxMessageText {
			return // cut to a bound, checked below
		}
		for _, mark := range toolOutputMarks {
			if bytes.Contains([]byte(line), mark) {
				return // skipped on purpose: tool output's marks
			}
		}
		switch {
		case want == "" && ok:
			t.Fatalf("an empty message was read from %s", line)
		case want != "" && (!ok || m.Text != want):
			t.Fatalf("MessageOf(%s) = %q, %v; want %q", line, m.Text, ok, want)
		}
	})
}
