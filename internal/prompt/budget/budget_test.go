package budget

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/prompt"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bytes, tokens int
		code          baton.Code
		wantBytes     int
		wantCounter   bool
	}{
		{0, 0, "", 0, false}, // the caller's default
		{40_000, 0, "", 40_000, false},
		{1, 500, "", 1, true},
		{-1, 0, baton.Invalid, 0, false},
		{100, -1, baton.Invalid, 0, false},
	}
	for _, tt := range tests {
		got, err := Parse(tt.bytes, tt.tokens)
		if code := baton.ErrorCode(err); code != tt.code {
			t.Errorf("Parse(%d, %d) error %v, want code %q", tt.bytes, tt.tokens, err, tt.code)
			continue
		}
		if err != nil {
			continue
		}
		if got.BudgetBytes != tt.wantBytes || got.BudgetTokens != tt.tokens || (got.Tokens != nil) != tt.wantCounter {
			t.Errorf("Parse(%d, %d) = %+v, want %d bytes, %d tokens, counter %v", tt.bytes, tt.tokens, got, tt.wantBytes, tt.tokens, tt.wantCounter)
		}
	}
}

// FuzzParse checks the rule on every pair: negative numbers are
// Invalid, others kept as given, and a counter exactly when tokens count.
func FuzzParse(f *testing.F) {
	for _, c := range [][2]int{{0, 0}, {-1, 0}, {0, -1}, {40_000, 10}, {1 << 40, 0}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, bytes, tokens int) {
		got, err := Parse(bytes, tokens)
		if bad := bytes < 0 || tokens < 0; bad != (err != nil) {
			t.Fatalf("Parse(%d, %d) error %v, want an error: %v", bytes, tokens, err, bad)
		}
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("Parse(%d, %d) error %v is not Invalid", bytes, tokens, err)
			}
			return
		}
		if got.BudgetBytes != bytes || got.BudgetTokens != tokens || (got.Tokens != nil) != (tokens > 0) {
			t.Fatalf("Parse(%d, %d) = %+v", bytes, tokens, got)
		}
	})
}

func TestTokenBudget(t *testing.T) {
	t.Parallel()
	enc, err := NewO200k()
	if err != nil {
		t.Fatal(err)
	}
	secs := []prompt.Section{
		{Key: "contract", Body: "You are a careful engineer.", Bookend: true},
		{Key: "goal", Heading: "## Goal", Body: strings.Repeat("Implement the tokenizer budget carefully. ", 400), Required: true},
		{Key: "out", Body: "Reply with JSON.", Bookend: true},
	}
	pack, err := prompt.Build(secs, prompt.Options{BudgetBytes: 1 << 20, BudgetTokens: 300, Tokens: enc})
	if err != nil {
		t.Fatal(err)
	}
	if n := enc.Count(pack.Text); n > 300 || n < 250 {
		t.Errorf("token-budgeted pack has %d tokens; want close to and at most 300", n)
	}
	if pack.Report.Tokens != enc.Count(pack.Text) || pack.Report.BudgetTokens != 300 {
		t.Errorf("report = %+v", pack.Report)
	}
	if _, err := prompt.Build(secs, prompt.Options{BudgetBytes: 1 << 20, BudgetTokens: 5, Tokens: enc}); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("Build(5 tokens) error = %v; want Invalid naming tokens", err)
	}
}
