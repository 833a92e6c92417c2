package baton

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in     string
		n      int
		marker string
		want   string
	}{
		{"short", 10, "…", "short"},
		{"exactly", 7, "…", "exactly"},
		{"abcdef", 3, "…", "abc…"},
		{"héllo", 2, "…", "h…"}, // é is two bytes: never split it
		{"日本語", 4, "\n[truncated]", "日\n[truncated]"},
		{"abc", 0, "…", "…"},
		{"abc", -1, "…", "…"},
	} {
		if got := Truncate(tt.in, tt.n, tt.marker); got != tt.want {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", tt.in, tt.n, tt.marker, got, tt.want)
		}
	}
}

// FuzzTruncate checks the cut against a reference that walks runes: the
// result is the longest whole-rune prefix of at most n bytes, plus the
// marker exactly when something was cut.
func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld", "日本語テキスト", "\xff\xfe bad utf8"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 64
		got := Truncate(s, n, "…")
		if len(s) <= n {
			if got != s {
				t.Fatalf("Truncate(%q, %d) = %q, want it unchanged", s, n, got)
			}
			return
		}
		want := ""
		for i := 0; i < len(s); {
			_, size := utf8.DecodeRuneInString(s[i:])
			if !utf8.RuneStart(s[i]) {
				size = 1
			}
			// The reference cuts only where a new rune starts.
			j := i + size
			for j < len(s) && !utf8.RuneStart(s[j]) {
				j++
			}
			if j > n {
				break
			}
			want, i = s[:j], j
		}
		if got != want+"…" || !strings.HasSuffix(got, "…") {
			t.Fatalf("Truncate(%q, %d) = %q, want %q", s, n, got, want+"…")
		}
	})
}
