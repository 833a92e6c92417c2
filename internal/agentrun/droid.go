package agentrun

import (
	"github.com/baton-agent/baton/internal/proc"

	"bytes"
	"encoding/json"
	"strings"
)

// droidDecoder reads droid exec -o stream-json: events as they happen
// (message, tool_call, tool_result), then a completion with the final
// text and usage. It also reads -o json, one result object printed
// compact or indented, possibly after stray text, in case ExtraArgs asks
// for that format.
type droidDecoder struct {
	live      *liveView
	scan      *objectScanner
	result    *droidObject
	lastText  string
	sessionID string
	model     string
	tools     toolTally
	calls     map[string]toolCall // pending tool calls, by id
	unknown   int
}

type droidObject struct {
	Type      string  `json:"type"`
	Subtype   string  `json:"subtype"`
	IsError   bool    `json:"is_error"`
	Result    *string `json:"result"`
	SessionID string  `json:"session_id"`
	NumTurns  int     `json:"num_turns"`
	Model     string  `json:"model"`

	TotalCostUSD *float64          `json:"total_cost_usd"`
	CostUSD      *float64          `json:"cost_usd"`
	Usage        *claudeUsage      `json:"usage"`
	Errors       []json.RawMessage `json:"errors"`

	// type "error"
	Message string `json:"message"`
	// stream-json events
	ID              string          `json:"id"`
	Role            string          `json:"role"`
	Text            string          `json:"text"`
	ToolName        string          `json:"toolName"`
	Parameters      json.RawMessage `json:"parameters"`
	ToolIsError     bool            `json:"isError"`
	ToolError       *droidToolError `json:"error"`
	Value           json.RawMessage `json:"value"`
	FinalText       *string         `json:"finalText"`
	CompletionTurns int             `json:"numTurns"`
}

// droidToolError is a failed tool_result's error.
type droidToolError struct {
	Message string `json:"message"`
}

func (d *droidDecoder) tooLong()      { d.unknown++ }
func (d *droidDecoder) junk()         { d.unknown++ }
func (d *droidDecoder) line(b []byte) { d.scan.feed(b) }

func (d *droidDecoder) object(b []byte) {
	var o droidObject
	if err := unmarshalTolerant(b, &o); err != nil {
		d.unknown++
		return
	}
	if o.SessionID != "" {
		d.sessionID = o.SessionID
	}
	switch o.Type {
	case "result":
		d.result = &o
		if o.IsError {
			msg := o.Subtype
			if o.Result != nil && *o.Result != "" {
				msg = *o.Result
			}
			d.live.note("✗", msg)
		} else if o.Result != nil {
			d.live.text(*o.Result)
		}
	case "completion":
		text := ""
		if o.FinalText != nil {
			text = *o.FinalText
		}
		d.result = &droidObject{Type: "result", Result: &text, SessionID: o.SessionID, NumTurns: o.CompletionTurns, Usage: o.Usage}
		if text != d.lastText {
			d.live.text(text)
		}
	case "error":
		// stream-json reports where it failed first ("400 …"), then the
		// CLI's own "Exec failed": both are kept.
		msg := o.Message
		if msg == "" && o.Result != nil {
			msg = *o.Result
		}
		var errs []json.RawMessage
		if d.result != nil && d.result.IsError {
			errs = d.result.Errors
		}
		d.result = &droidObject{Type: "result", IsError: true, Errors: append(errs, mustJSONString(msg)), SessionID: o.SessionID}
		d.live.note("✗", msg)
	case "system":
		if o.Model != "" {
			d.model = o.Model
		}
	case "message":
		if o.Role == "assistant" {
			d.lastText = o.Text
			d.live.text(o.Text)
		}
	case "tool_call":
		detail := toolDetail(o.Parameters)
		d.live.tool(o.ToolName, detail)
		d.tools.call()
		if d.calls == nil {
			d.calls = map[string]toolCall{}
		}
		if o.ID != "" && len(d.calls) < maxPendingCalls {
			d.calls[o.ID] = toolCall{o.ToolName, detail}
		}
	case "tool_result":
		c, ok := d.calls[o.ID]
		delete(d.calls, o.ID)
		if !o.ToolIsError {
			return
		}
		if !ok {
			c.name = "tool"
		}
		why := resultText(o.Value)
		if o.ToolError != nil && o.ToolError.Message != "" {
			why = o.ToolError.Message
		}
		d.tools.fail(d.live, c.name, c.detail, why)
	default:
		d.unknown++
	}
}

func mustJSONString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

func (d *droidDecoder) finish(r *Result) bool {
	d.scan.end()
	r.SessionID = d.sessionID
	r.Model = d.model
	r.UnknownEvents = d.unknown
	d.tools.finish(r)
	res := d.result
	if res == nil {
		r.FinalText = d.lastText
		return false
	}
	if res.Result != nil {
		r.FinalText = *res.Result
	}
	if res.Model != "" {
		r.Model = res.Model
	}
	r.NumTurns = res.NumTurns
	switch {
	case res.TotalCostUSD != nil:
		r.CostUSD = *res.TotalCostUSD
	case res.CostUSD != nil:
		r.CostUSD = *res.CostUSD
	}
	if u := res.Usage; u != nil {
		r.InputTokens = u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
		r.OutputTokens = u.OutputTokens
		r.CacheReadTokens = u.CacheReadTokens
	}
	r.IsError = res.IsError
	r.Errors = errorTexts(res.Errors)
	if r.IsError && len(r.Errors) == 0 {
		msg := strings.TrimSpace(r.FinalText)
		if msg == "" {
			msg = res.Subtype
		}
		if msg != "" {
			r.Errors = []string{oneLine(msg, 500)}
		}
	}
	return true
}

// commandDecoder reads a command agent's stdout: the final message is a
// JSON object that ends the output, else the whole output (its last
// maxFinalTextBytes).
type commandDecoder struct {
	live    *liveView
	scan    *objectScanner
	text    proc.Tail
	last    []byte // the last object seen
	lastEnd bool   // nothing but blank lines followed it
	any     bool   // stdout had non-blank content
	// session is the last session_id an object named: a command agent
	// that has sessions says so, and is resumed with it (Spec.Resume).
	session string
}

func (d *commandDecoder) tooLong() {
	d.lastEnd = false
	d.any = true
	d.text.Write([]byte("[baton: line too long, dropped]\n"))
}

func (d *commandDecoder) line(b []byte) {
	d.text.Write(b)
	d.text.Write([]byte{'\n'})
	if len(bytes.TrimSpace(b)) > 0 {
		d.any = true
		d.live.text(string(b))
	}
	d.scan.feed(b)
}

func (d *commandDecoder) object(b []byte) {
	d.last = append(d.last[:0], b...)
	d.lastEnd = true
	if bytes.Contains(b, []byte(`"session_id"`)) {
		var o struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(b, &o) == nil && validSession(o.SessionID) {
			d.session = o.SessionID
		}
	}
}

func (d *commandDecoder) junk() { d.lastEnd = false }

func (d *commandDecoder) finish(r *Result) bool {
	d.scan.end()
	r.SessionID = d.session
	if d.lastEnd && len(d.last) > 0 {
		r.FinalText = string(d.last)
		r.Structured = append(json.RawMessage(nil), d.last...)
		return true
	}
	b, cut := d.text.Bytes()
	s := strings.TrimSpace(string(b))
	if cut {
		s = "[baton: output truncated to its last bytes]\n" + s
	}
	r.FinalText = s
	return d.any
}
