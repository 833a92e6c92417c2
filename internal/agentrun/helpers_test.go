package agentrun

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with the file at path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

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
	UnknownEvents   int             `json:"unknown_events,omitempty"`
}

func reportOf(r *Result, found bool) report {
	return report{
		Found: found, FinalText: r.FinalText, Structured: r.Structured, SessionID: r.SessionID,
		Model: r.Model, CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheReadTokens: r.CacheReadTokens, NumTurns: r.NumTurns, IsError: r.IsError, Errors: r.Errors,
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
