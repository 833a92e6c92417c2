package prompt

import (
	"testing"

	"github.com/baton-agent/baton"
)

func TestParseBudget(t *testing.T) {
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
		got, err := ParseBudget(tt.bytes, tt.tokens)
		if code := baton.ErrorCode(err); code != tt.code {
			t.Errorf("ParseBudget(%d, %d) error %v, want code %q", tt.bytes, tt.tokens, err, tt.code)
			continue
		}
		if err != nil {
			continue
		}
		if got.BudgetBytes != tt.wantBytes || got.BudgetTokens != tt.tokens || (got.Tokens != nil) != tt.wantCounter {
			t.Errorf("ParseBudget(%d, %d) = %+v, want %d bytes, %d tokens, counter %v", tt.bytes, tt.tokens, got, tt.wantBytes, tt.tokens, tt.wantCounter)
		}
	}
}

// FuzzParseBudget checks the rule on every pair: negative numbers are
// Invalid, others kept as given, and a counter exactly when tokens count.
func FuzzParseBudget(f *testing.F) {
	for _, c := range [][2]int{{0, 0}, {-1, 0}, {0, -1}, {40_000, 10}, {1 << 40, 0}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, bytes, tokens int) {
		got, err := ParseBudget(bytes, tokens)
		if bad := bytes < 0 || tokens < 0; bad != (err != nil) {
			t.Fatalf("ParseBudget(%d, %d) error %v, want an error: %v", bytes, tokens, err, bad)
		}
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseBudget(%d, %d) error %v is not Invalid", bytes, tokens, err)
			}
			return
		}
		if got.BudgetBytes != bytes || got.BudgetTokens != tokens || (got.Tokens != nil) != (tokens > 0) {
			t.Fatalf("ParseBudget(%d, %d) = %+v", bytes, tokens, got)
		}
	})
}
