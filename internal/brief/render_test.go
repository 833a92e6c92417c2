package brief

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton/internal/prompt"
)

func TestCutText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"short", 10, "short", false},
		{"line one\nline two\nline three", 20, "line one\nline two", true},
		{"no breaks at all here", 10, "no breaks", true},
		{"日本語のテキスト", 7, "日本", true}, // 7 bytes end inside the third character
		{"a\n" + strings.Repeat("x", 30), 20, "a\nxxxxxxxxxxxxxxxxxx", true},
	}
	for _, tt := range tests {
		got, cut := cutText(tt.in, tt.limit)
		if got != tt.want || cut != tt.cut {
			t.Errorf("cutText(%q, %d) = %q, %v, want %q, %v", tt.in, tt.limit, got, cut, tt.want, tt.cut)
		}
		if !utf8.ValidString(got) || len(got) > tt.limit && cut {
			t.Errorf("cutText(%q, %d) = %q: invalid or too long", tt.in, tt.limit, got)
		}
	}
}

func TestKB(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{51200: "50KB", 2100: "2.1KB", 1024: "1KB", 900: "900 bytes"} {
		if got := kb(n); got != want {
			t.Errorf("kb(%d) = %q, want %q", n, got, want)
		}
	}
}

// fitLargest finds the largest size that keeps every section whole, to
// within its step, and falls back to Build's own cut when nothing fits.
func TestFitLargest(t *testing.T) {
	t.Parallel()
	secs := func(n int64) []prompt.Section {
		return []prompt.Section{
			{Key: "head", Body: "head", Bookend: true},
			{Key: "grow", Body: strings.Repeat("x", int(n)), Required: true},
			{Key: "tools", Body: "tools", DropRank: 1},
		}
	}
	builds := 0
	build := func(budget int) func(int64) (*prompt.Pack, error) {
		return func(n int64) (*prompt.Pack, error) {
			builds++
			return prompt.Build(secs(n), prompt.Options{BudgetBytes: budget})
		}
	}
	// "head\n\n" + x*n + "\n\ntools\n" = n + 14 bytes.
	tests := []struct {
		budget    int
		limit     int64
		step      int64
		wantN     int64
		wantKept  bool
		maxBuilds int
	}{
		{1000, 500, 1, 500, true, 1},
		{114, 500, 1, 100, true, 12},
		{114, 500, 50, 63, true, 6},
	}
	for _, tt := range tests {
		builds = 0
		p, n, err := fitLargest(tt.limit, tt.step, build(tt.budget))
		if err != nil {
			t.Fatalf("fitLargest(budget %d) error: %v", tt.budget, err)
		}
		if tt.step == 1 && n != tt.wantN || tt.step > 1 && (n > 100 || n < 100-tt.step) || allKept(p) != tt.wantKept {
			t.Errorf("fitLargest(budget %d, step %d) = n %d, all kept %v; want n %d, %v", tt.budget, tt.step, n, allKept(p), tt.wantN, tt.wantKept)
		}
		if builds > tt.maxBuilds {
			t.Errorf("fitLargest(budget %d, step %d) built %d packs, want at most %d", tt.budget, tt.step, builds, tt.maxBuilds)
		}
	}
	// Too small for the sections that must stay: Build's error.
	if _, _, err := fitLargest(500, 1, build(10)); err == nil {
		t.Errorf("fitLargest(budget 10) = nil error, want Build's")
	}
}
