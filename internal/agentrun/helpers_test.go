package agentrun

import (
	"bytes"
	"encoding/json"
	"testing"
)

// report is the part of a Result that does not depend on timing, as JSON
// for golden files.
type report struct {
	Found           bool            `json:"found"`
	FinalText       string          `json:"final_text"`
	Structured      json.RawMessage `json:"structured,omitempty"`
	SessionID       string          `json:"session_id,omitempty"`
	Model           string          `json:"model,omitempty"`
	CostUSD         float64         `json:"cost_usd,omitempty"`
	InputTokens     int64           `json:"input_tokens,omitempty"`
	OutputTokens    int64           `json:"output_tokens,omitempty"`
	CacheReadTokens int64           `json:"cache_read_tokens,omitempty"`
	NumTurns        int             `json:"num_turns,omitempty"`
	IsError         bool            `json:"is_error,omitempty"`
	Errors          []string        `json:"errors,omitempty"`
	ToolCalls       int             `json:"tool_calls,omitempty"`
	ToolFailures    int             `json:"tool_failures,omitempty"`
	FailedTools     []string        `json:"failed_tools,omitempty"`
	UnknownEvents   int             `json:"unknown_events,omitempty"`
}

func reportOf(r *Result, found bool) report {
	return report{
		Found: found, FinalText: r.FinalText, Structured: r.Structured, SessionID: r.SessionID,
		Model: r.Model, CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, NumTurns: r.NumTurns, IsError: r.IsError, Errors: r.Errors,
		ToolCalls: r.ToolCalls, ToolFailures: r.ToolFailures, FailedTools: r.FailedTools,
		UnknownEvents: r.UnknownEvents,
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
