package agentrun

import (
	"bytes"
	"encoding/json"
	"strings"
)

// claudeDecoder reads claude -p --output-format stream-json: a system/init
// line, assistant and user lines, and a final result line.
type claudeDecoder struct {
	live      *liveView
	sessionID string
	model     string
	// lastText is the text of the last main-agent assistant message, kept
	// for a stream that ends without a result line. Text blocks of one API
	// message arrive on several lines sharing message.id; they are joined.
	lastText   string
	lastTextID string
	result     *claudeEvent
	tools      toolTally
	// calls names the tool calls whose results are pending, by
	// tool_use id, for a failed result to say what failed.
	calls   map[string]toolCall
	unknown int
}

// toolCall is one tool call as the live view names it.
type toolCall struct{ name, detail string }

// maxPendingCalls bounds claudeDecoder.calls: results come back soon after
// their calls, and an agent that never sends them must not grow it.
const maxPendingCalls = 4096

type claudeEvent struct {
	Type            string  `json:"type"`
	Subtype         string  `json:"subtype"`
	SessionID       string  `json:"session_id"`
	Model           string  `json:"model"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	Message         *struct {
		ID      string        `json:"id"`
		Model   string        `json:"model"`
		Content []claudeBlock `json:"content"`
	} `json:"message"`

	// result lines
	IsError          bool                        `json:"is_error"`
	Result           *string                     `json:"result"`
	StructuredOutput json.RawMessage             `json:"structured_output"`
	TotalCostUSD     *float64                    `json:"total_cost_usd"`
	CostUSD          *float64                    `json:"cost_usd"` // older CLIs
	NumTurns         int                         `json:"num_turns"`
	Usage            *claudeUsage                `json:"usage"`
	ModelUsage       map[string]claudeModelUsage `json:"modelUsage"`
	Errors           []json.RawMessage           `json:"errors"`
}

type claudeBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result blocks (in user lines)
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

type claudeUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
}

type claudeModelUsage struct {
	InputTokens         int64 `json:"inputTokens"`
	OutputTokens        int64 `json:"outputTokens"`
	CacheReadTokens     int64 `json:"cacheReadInputTokens"`
	CacheCreationTokens int64 `json:"cacheCreationInputTokens"`
}

func (d *claudeDecoder) tooLong() { d.unknown++ }

func (d *claudeDecoder) line(b []byte) {
	if len(b) == 0 {
		return
	}
	if t, ok := sniffType(b); ok {
		switch t {
		case "user":
			// Tool results can be megabytes: only a failed one is read.
			if !bytes.Contains(b, []byte(`"is_error":true`)) {
				return
			}
		case "stream_event", "rate_limit_event":
			return // partial deltas, rate-limit notices: nothing to keep
		case "system", "assistant", "result":
		default:
			d.unknown++
			return
		}
	}
	var ev claudeEvent
	if err := unmarshalTolerant(b, &ev); err != nil {
		d.unknown++
		return
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			if ev.SessionID != "" {
				d.sessionID = ev.SessionID
			}
			if ev.Model != "" {
				d.model = ev.Model
			}
		}
		if ev.Subtype == "api_retry" {
			d.live.note("!", "API request failed; claude is retrying")
		}
	case "assistant":
		d.assistant(&ev)
	case "user":
		d.results(&ev)
	case "result":
		d.result = &ev
		if ev.IsError {
			why := append([]string{ev.Subtype}, errorTexts(ev.Errors)...)
			if len(ev.Errors) == 0 && ev.Result != nil {
				why = []string{*ev.Result} // API errors come back as text
			}
			d.live.note("✗", strings.Join(why, ": "))
		}
	case "stream_event", "rate_limit_event":
	default:
		d.unknown++
	}
}

// results records the failed tool results of a user line.
func (d *claudeDecoder) results(ev *claudeEvent) {
	if ev.Message == nil {
		return
	}
	for _, blk := range ev.Message.Content {
		if blk.Type != "tool_result" || !blk.IsError {
			continue
		}
		c, ok := d.calls[blk.ToolUseID]
		if !ok {
			c.name = "tool"
		}
		delete(d.calls, blk.ToolUseID)
		d.tools.fail(d.live, c.name, c.detail, resultText(blk.Content))
	}
}

// resultText is a tool result's text: a string, or its text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, " ")
}

func (d *claudeDecoder) assistant(ev *claudeEvent) {
	if ev.Message == nil {
		return
	}
	if d.model == "" && ev.Message.Model != "" {
		d.model = ev.Message.Model
	}
	sub := ev.ParentToolUseID != nil && *ev.ParentToolUseID != ""
	var texts []string
	for _, blk := range ev.Message.Content {
		switch blk.Type {
		case "text":
			d.live.text(blk.Text)
			if blk.Text != "" {
				texts = append(texts, blk.Text)
			}
		case "tool_use":
			detail := toolDetail(blk.Input)
			d.live.tool(blk.Name, detail)
			d.tools.call()
			if d.calls == nil {
				d.calls = map[string]toolCall{}
			}
			if blk.ID != "" && len(d.calls) < maxPendingCalls {
				d.calls[blk.ID] = toolCall{blk.Name, detail}
			}
		}
	}
	if sub || len(texts) == 0 {
		return // subagent text is not the agent's answer
	}
	text := strings.Join(texts, "\n")
	if ev.Message.ID != "" && ev.Message.ID == d.lastTextID {
		d.lastText += "\n" + text
		return
	}
	d.lastText, d.lastTextID = text, ev.Message.ID
}

func (d *claudeDecoder) finish(r *Result) bool {
	r.SessionID = d.sessionID
	r.Model = d.model
	r.UnknownEvents = d.unknown
	d.tools.finish(r)
	res := d.result
	if res == nil {
		r.FinalText = d.lastText
		return false
	}
	if res.SessionID != "" {
		r.SessionID = res.SessionID
	}
	if res.Result != nil {
		r.FinalText = *res.Result
	}
	if so := res.StructuredOutput; len(so) > 0 && string(so) != "null" {
		r.Structured = append(json.RawMessage(nil), so...)
		if strings.TrimSpace(r.FinalText) == "" {
			r.FinalText = string(so)
		}
	}
	if res.Result == nil && r.FinalText == "" {
		r.FinalText = d.lastText
	}
	switch {
	case res.TotalCostUSD != nil:
		r.CostUSD = *res.TotalCostUSD
	case res.CostUSD != nil:
		r.CostUSD = *res.CostUSD
	}
	r.NumTurns = res.NumTurns
	// modelUsage includes subagents and compaction; usage covers only the
	// main loop. Either way InputTokens counts cached input too.
	if len(res.ModelUsage) > 0 {
		for _, mu := range res.ModelUsage {
			r.InputTokens += mu.InputTokens + mu.CacheReadTokens + mu.CacheCreationTokens
			r.OutputTokens += mu.OutputTokens
			r.CacheReadTokens += mu.CacheReadTokens
		}
		if r.Model == "" && len(res.ModelUsage) == 1 {
			for m := range res.ModelUsage {
				r.Model = m
			}
		}
	} else if u := res.Usage; u != nil {
		r.InputTokens = u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
		r.OutputTokens = u.OutputTokens
		r.CacheReadTokens = u.CacheReadTokens
	}
	// Error subtypes (error_max_turns, error_during_execution, ...) carry
	// errors[] and no result; an API failure can also come back as
	// is_error with subtype success and the message in result.
	r.IsError = res.IsError || strings.HasPrefix(res.Subtype, "error")
	if strings.HasPrefix(res.Subtype, "error") {
		r.Errors = append(r.Errors, res.Subtype)
	}
	r.Errors = append(r.Errors, errorTexts(res.Errors)...)
	if r.IsError && len(r.Errors) == 0 && r.FinalText != "" {
		r.Errors = []string{oneLine(r.FinalText, 500)}
	}
	return true
}
