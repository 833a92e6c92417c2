package agentrun

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// liveView serialises writes to Spec.Live from the stdout and stderr
// readers. A nil *liveView is quiet.
type liveView struct {
	mu sync.Mutex
	w  io.Writer
}

func newLiveView(w io.Writer) *liveView {
	if w == nil {
		return nil
	}
	return &liveView{w: w}
}

// text prints assistant text, ending it with a newline.
func (l *liveView) text(s string) {
	if l == nil || strings.TrimSpace(s) == "" {
		return
	}
	s = strings.TrimRight(s, "\n")
	l.write(s + "\n")
}

// tool prints one line for a tool call: "→ name: detail".
func (l *liveView) tool(name, detail string) {
	if l == nil {
		return
	}
	line := "→ " + name
	if detail != "" {
		line += ": " + oneLine(detail, 160)
	}
	l.write(line + "\n")
}

// note prints one line such as an error or a notice.
func (l *liveView) note(prefix, s string) {
	if l == nil {
		return
	}
	l.write(prefix + " " + oneLine(s, 300) + "\n")
}

func (l *liveView) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s) // a broken live view must not fail the run
}

// oneLine folds whitespace runs into single spaces and cuts s to max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// toolDetail picks the most telling field of a tool's JSON input.
func toolDetail(input json.RawMessage) string {
	if len(input) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return string(input)
	}
	for _, k := range []string{"command", "file_path", "path", "notebook_path", "pattern", "url", "query", "description", "prompt"} {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	if len(m) == 0 {
		return ""
	}
	return string(input)
}
