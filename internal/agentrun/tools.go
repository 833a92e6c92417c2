package agentrun

import (
	"strconv"
	"strings"
)

// maxFailedTools bounds Result.FailedTools: a run whose every call fails
// (a sandbox that refuses the CLI's own) says so in the first few.
const maxFailedTools = 10

// toolTally counts an agent's tool calls and keeps the first failures,
// for the decoders that see them.
type toolTally struct {
	calls    int
	failures int
	failed   []string
}

func (t *toolTally) call() { t.calls++ }

// fail records a failed call and shows it live as one "✗" line: name is
// the tool, detail what it was asked (a command, a path), why what the
// CLI said.
func (t *toolTally) fail(live *liveView, name, detail, why string) {
	t.failures++
	s := name + " failed"
	if detail != "" {
		s += ": " + oneLine(detail, 160)
	}
	if why != "" {
		s += " (" + oneLine(why, 200) + ")"
	}
	if len(t.failed) < maxFailedTools {
		t.failed = append(t.failed, s)
	}
	live.note("✗", s)
}

func (t *toolTally) finish(r *Result) {
	r.ToolCalls = t.calls
	r.ToolFailures = t.failures
	r.FailedTools = append([]string(nil), t.failed...)
}

// exitWhy says how a command ended, with the last line of its output.
func exitWhy(code *int, output string) string {
	why := "failed"
	if code != nil {
		why = "exit " + strconv.Itoa(*code)
	}
	if last := lastLine(output); last != "" {
		why += ": " + last
	}
	return why
}

// lastLine is the last non-blank line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}
