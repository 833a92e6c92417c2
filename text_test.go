package baton

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
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

func TestStripControls(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"héllo 日本語 ✓", "héllo 日本語 ✓"},
		{"\x1b]0;pwned\x07after", "after"},                       // OSC ended by BEL: the window title
		{"\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\", "link"}, // OSC 8 hyperlink ended by ST
		{"before\x1b[2Jafter", "beforeafter"},                    // clear the screen
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[?1049h\x1b[1;1H", ""},    // alternate screen, cursor home
		{"\x1b(Bascii", "ascii"},        // charset designation
		{"\x1bcreset", "reset"},         // full reset: two characters
		{"\x1bPdcs body\x1b\\ok", "ok"}, // DCS
		{"a\u009b2Jb", "ab"},            // C1 CSI
		{"a\u009d0;title\u009cb", "ab"}, // C1 OSC ended by C1 ST
		{"a\u0085b\u0080c", "abc"},      // other C1 controls
		{"bell\a, back\bspace, cr\r\n, del\x7f, nul\x00", "bell, backspace, cr\n, del, nul"},
		{"\x1b]0;never ends\nnext line", "\nnext line"}, // an unterminated OSC hides only its line
		{"\x1b[1;2", ""}, // a CSI cut short
		{"\x1b", ""},
		{"\x1b\x1b[2Jx", "x"},
		{"bad \xff\xfe utf8", "bad \ufffd\ufffd utf8"},
	} {
		if got := StripControls(tt.in); got != tt.want {
			t.Errorf("StripControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// control reports whether r is a character StripControls must not let
// through.
func control(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
}

// FuzzStripControls checks what any input becomes: valid UTF-8 with no
// control but newline and tab; the input's own characters in order (a
// subsequence, invalid bytes as U+FFFD), never anything added; unchanged
// when the input was plain text already; and stable when stripped again.
func FuzzStripControls(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;pwned\x07", "\x1b[2J", "a\u009b2Jb", "\x1b[31mred\x1b[0m", "\xff\x1b\x1b[", "tab\tnl\ncr\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := StripControls(s)
		if !utf8.ValidString(got) {
			t.Fatalf("StripControls(%q) = %q, not UTF-8", s, got)
		}
		if i := strings.IndexFunc(got, control); i >= 0 {
			t.Fatalf("StripControls(%q) = %q: control %q at %d", s, got, got[i:i+1], i)
		}
		in := []rune(s) // each invalid byte a U+FFFD, as StripControls reads it
		j := 0
		for _, r := range got {
			for j < len(in) && in[j] != r {
				j++
			}
			if j == len(in) {
				t.Fatalf("StripControls(%q) = %q: %q is not from the input, in order", s, got, r)
			}
			j++
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, control) && got != s {
			t.Fatalf("StripControls(%q) = %q, want plain text unchanged", s, got)
		}
		if again := StripControls(got); again != got {
			t.Fatalf("StripControls is not stable: %q, then %q", got, again)
		}
	})
}

// FuzzStripControlsKeepsText checks that a well-formed escape sequence
// between two pieces of plain text vanishes and both pieces stay whole.
func FuzzStripControlsKeepsText(f *testing.F) {
	f.Add("before", "after", "0;pwned", byte(0))
	f.Add("x", "y", "2", byte(1))
	f.Add("", "", "", byte(2))
	f.Fuzz(func(t *testing.T, a, b, body string, kind byte) {
		plain := func(s string) string {
			return strings.Map(func(r rune) rune {
				if control(r) || r == utf8.RuneError {
					return -1
				}
				return r
			}, strings.ToValidUTF8(s, ""))
		}
		a, b = plain(a), plain(b)
		var seq string
		switch kind % 4 {
		case 0: // OSC, ended by BEL
			seq = "\x1b]" + strings.ReplaceAll(plain(body), "\n", "") + "\a"
		case 1: // CSI: parameter bytes, then a final byte
			params := strings.Map(func(r rune) rune {
				if r >= 0x30 && r <= 0x3f {
					return r
				}
				return -1
			}, body)
			seq = "\x1b[" + params + "m"
		case 2: // DCS, ended by ST
			seq = "\x1bP" + strings.ReplaceAll(plain(body), "\n", "") + "\x1b\\"
		case 3: // a two-character escape
			seq = "\x1b7"
		}
		if got := StripControls(a + seq + b); got != a+b {
			t.Fatalf("StripControls(%q) = %q, want %q", a+seq+b, got, a+b)
		}
	})
}

func TestCheckSize(t *testing.T) {
	t.Parallel()
	if err := CheckSize("the summary", strings.Repeat("x", MaxSummary), MaxSummary); err != nil {
		t.Errorf("a summary of exactly the limit: %v", err)
	}
	err := CheckSize("the summary", strings.Repeat("x", MaxSummary+1), MaxSummary)
	if ErrorCode(err) != Invalid || err.Error() != "the summary is 65537 bytes, over the limit of 64 KiB (65536 bytes): shorten it" {
		t.Errorf("CheckSize(too long) = %v (%s)", err, ErrorCode(err))
	}
}
