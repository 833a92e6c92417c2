package agentrun

import (
	"bytes"
	"encoding/json"
	"strings"
)

// piDecoder reads pi -p --mode json: a session line, then the agent's
// messages (message_start, message_update with each delta, message_end)
// and tool executions, agent_end (with the whole conversation again) and
// agent_settled. Only whole messages and finished tool executions are
// read; the rest is skipped without decoding.
type piDecoder struct {
	live      *liveView
	sessionID string
	model     string
	// lastText is the text of the last assistant message that had any:
	// the final message.
	lastText string
	// stopErr is the error the last assistant message stopped with; pi
	// exits 0 even then.
	stopErr string
	ended   bool // agent_end was seen
	turns   int
	usage   piUsage
	tools   toolTally
	calls   map[string]toolCall // pending tool calls, by id
	unknown int
}

type piEvent struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"` // session
	Message *piMessage      `json:"message"`
	CallID  string          `json:"toolCallId"`
	Tool    string          `json:"toolName"`
	Args    json.RawMessage `json:"args"`
	Result  *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	IsError bool `json:"isError"`
}

type piMessage struct {
	Role    string `json:"role"`
	Content []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Text      string          `json:"text"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"content"`
	Model        string   `json:"model"`
	Usage        *piUsage `json:"usage"`
	StopReason   string   `json:"stopReason"`
	ErrorMessage string   `json:"errorMessage"`
}

// piUsage is one message's usage; input excludes the cache.
type piUsage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Cost       struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

func (d *piDecoder) tooLong() { d.unknown++ }

func (d *piDecoder) line(b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	if t, ok := sniffType(b); ok {
		switch t {
		case "agent_end":
			// It repeats the whole conversation: nothing new to read.
			d.ended = true
			return
		case "message_start", "message_update", "tool_execution_start", "tool_execution_update",
			"agent_start", "turn_start", "turn_end", "entry_appended", "agent_settled":
			return
		case "session", "message_end", "tool_execution_end":
		default:
			d.unknown++
			return
		}
	}
	var ev piEvent
	if err := unmarshalTolerant(b, &ev); err != nil {
		d.unknown++
		return
	}
	switch ev.Type {
	case "session":
		if ev.ID != "" {
			d.sessionID = ev.ID
		}
	case "message_end":
		if ev.Message != nil && ev.Message.Role == "assistant" {
			d.assistant(ev.Message)
		}
	case "tool_execution_end":
		c, ok := d.calls[ev.CallID]
		delete(d.calls, ev.CallID)
		if !ev.IsError {
			return
		}
		if !ok {
			c = toolCall{ev.Tool, toolDetail(ev.Args)}
		}
		why := ""
		if ev.Result != nil {
			why = resultText(ev.Result.Content)
		}
		d.tools.fail(d.live, c.name, c.detail, why)
	case "agent_end":
		d.ended = true
	case "message_start", "message_update", "tool_execution_start", "tool_execution_update",
		"agent_start", "turn_start", "turn_end", "entry_appended", "agent_settled":
	default:
		d.unknown++
	}
}

func (d *piDecoder) assistant(m *piMessage) {
	d.turns++
	if m.Model != "" {
		d.model = m.Model
	}
	if u := m.Usage; u != nil {
		d.usage.Input += u.Input
		d.usage.Output += u.Output
		d.usage.CacheRead += u.CacheRead
		d.usage.CacheWrite += u.CacheWrite
		d.usage.Cost.Total += u.Cost.Total
	}
	var texts []string
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			d.live.text(c.Text)
			if strings.TrimSpace(c.Text) != "" {
				texts = append(texts, c.Text)
			}
		case "toolCall":
			detail := toolDetail(c.Arguments)
			d.live.tool(c.Name, detail)
			d.tools.call()
			if d.calls == nil {
				d.calls = map[string]toolCall{}
			}
			if c.ID != "" && len(d.calls) < maxPendingCalls {
				d.calls[c.ID] = toolCall{c.Name, detail}
			}
		}
	}
	if len(texts) > 0 {
		d.lastText = strings.Join(texts, "\n")
	}
	d.stopErr = ""
	if m.StopReason == "error" || m.StopReason == "aborted" {
		d.stopErr = m.ErrorMessage
		if d.stopErr == "" {
			d.stopErr = "pi stopped: " + m.StopReason
		}
		d.live.note("✗", d.stopErr)
	}
}

func (d *piDecoder) finish(r *Result) bool {
	r.SessionID = d.sessionID
	r.Model = d.model
	r.NumTurns = d.turns
	r.UnknownEvents = d.unknown
	u := d.usage
	r.InputTokens = u.Input + u.CacheRead + u.CacheWrite
	r.OutputTokens = u.Output
	r.CacheReadTokens = u.CacheRead
	r.CostUSD = u.Cost.Total
	d.tools.finish(r)
	r.FinalText = d.lastText
	if d.stopErr != "" {
		r.IsError = true
		r.Errors = []string{oneLine(d.stopErr, 500)}
	}
	return d.ended && (d.lastText != "" || d.stopErr != "")
}
