package harness

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/baton-agent/baton"
)

// Event is a hook event as baton's command line names it.
type Event string

const (
	SessionStart Event = "session-start"
	Stop         Event = "stop"
	PostToolUse  Event = "post-tool-use"
	PreCompact   Event = "pre-compact"
)

// Events lists the events baton handles, in lifecycle order.
var Events = []Event{SessionStart, PostToolUse, PreCompact, Stop}

// ParseEvent returns the event named s. Harness spellings (SessionStart,
// session_start) are accepted too.
func ParseEvent(s string) (Event, error) {
	norm := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	for _, e := range Events {
		if strings.ReplaceAll(string(e), "-", "") == norm {
			return e, nil
		}
	}
	return "", baton.Errorf(baton.Invalid, "unknown hook event %q: want session-start, stop, post-tool-use or pre-compact", s)
}

// Result is what a hook tells the harness, whatever its answer shape
// (Harness.Encode). The zero Result means "nothing to say": the stop is
// allowed, no context is added.
type Result struct {
	// Context is text for the model (session-start).
	Context string
	// Block asks the harness to keep going with Reason as the next
	// instruction (stop).
	Block  bool
	Reason string
	// SystemMessage is one line for the user.
	SystemMessage string
}

// stopOutput is the Stop answer Claude Code, Codex and Droid share.
type stopOutput struct {
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
}

// encodePlain renders r the way Claude Code, Codex and Droid read it:
// session-start context as plain text (the robust path on all three), a
// Stop decision as one JSON object (or nothing to allow), and nothing for
// other events (Droid would show it to the user).
func encodePlain(e Event, r Result) []byte {
	switch e {
	case SessionStart:
		if r.Context == "" {
			return nil
		}
		s := r.Context
		if s[len(s)-1] != '\n' {
			s += "\n"
		}
		return []byte(s)
	case Stop:
		o := stopOutput{SystemMessage: r.SystemMessage}
		if r.Block {
			o.Decision, o.Reason = "block", r.Reason
			if o.Reason == "" {
				o.Reason = "continue" // a block needs a non-blank reason
			}
		}
		if o == (stopOutput{}) {
			return nil
		}
		return encodeJSON(o)
	}
	return nil
}

// ClaudeStopPointer is the reason of Claude Code's blocking Stop: the
// loop prompt itself arrives once, as the hook's additional context.
const ClaudeStopPointer = "Not done: baton's loop continues with the prompt in this hook's additional context."

// encodeClaude is encodePlain, except for a blocking Stop: Claude Code
// repeats a Stop's reason (as the "Stop hook feedback" turn, and from
// 2.1.330 again as a "Stop hook blocking error" system message), so the
// loop prompt goes once as the hook's additional context and the reason
// only points at it. Measured with the real Claude Code against a
// scripted model (TestRealClaudeCodeSession): 2.1.330 sent a reason twice
// and the additional context once; 2.1.197 sent each once.
func encodeClaude(e Event, r Result) []byte {
	if e != Stop || !r.Block || r.Reason == "" {
		return encodePlain(e, r)
	}
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	return encodeJSON(struct {
		Decision      string   `json:"decision"`
		Reason        string   `json:"reason"`
		SystemMessage string   `json:"systemMessage,omitempty"`
		Specific      specific `json:"hookSpecificOutput"`
	}{"block", ClaudeStopPointer, r.SystemMessage, specific{"Stop", r.Reason}})
}

// piOutput is the pi extension's answer to every event:
//
//	{"schema_version":1,"context":"…"}                                        session-start
//	{"schema_version":1,"decision":"block","reason":"…","system_message":"…"}  stop: continue with reason
//	{"schema_version":1,"system_message":"…"}                                stop: allowed, with a note
//	{"schema_version":1}                                                      nothing to do
type piOutput struct {
	SchemaVersion int    `json:"schema_version"`
	Context       string `json:"context,omitempty"`
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"system_message,omitempty"`
}

func encodePi(_ Event, r Result) []byte {
	o := piOutput{SchemaVersion: 1, Context: r.Context, SystemMessage: r.SystemMessage}
	if r.Block {
		o.Decision, o.Reason = "block", r.Reason
	}
	return encodeJSON(o)
}

// encodeJSON is v as one line of JSON with <, > and & kept readable
// (<promise> in a loop prompt).
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}
