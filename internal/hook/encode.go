package hook

import (
	"bytes"
	"encoding/json"
)

// stopOutput is the Stop answer shared by Claude Code, Codex and Droid.
type stopOutput struct {
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
}

// EncodeClaudeStyle renders r the way Claude Code, Codex and Droid read
// it: session-start context as plain text (the robust path on all three),
// a Stop decision as one JSON object (or nothing to allow), and nothing
// for other events (Droid would show it to the user).
func EncodeClaudeStyle(e Event, r Result) []byte {
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
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(o)
		return b.Bytes()
	}
	return nil
}
