package baton

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Truncate returns s cut to at most n bytes on a UTF-8 boundary, with
// marker appended when it cut. Every place that shortens text for a
// person or a model cuts this way, so no message ends in half a
// character; the marker says what kind of cut it was ("…" in messages,
// "\n[truncated]" in prompts).
func Truncate(s string, n int, marker string) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + marker
}

// StripControls returns s fit for a terminal: escape sequences are
// removed whole (CSI such as "\x1b[2J", OSC such as "\x1b]0;title\x07",
// DCS, SOS, PM and APC strings, and two-character escapes such as
// "\x1bc"), every other C0 and C1 control character is dropped except
// newline and tab, and bytes that are not UTF-8 become U+FFFD. Printable
// text is kept as it is. The CLI passes text it did not write itself
// (agent output, issue titles, reject reasons, API callers' names)
// through it before a terminal shows it, so such text can neither retitle
// the window, clear the screen, move the cursor nor hide what follows.
//
// A control string (OSC, DCS, ...) ends at BEL, ST (ESC \ or U+009C), the
// next ESC, or the end of its line, so an unterminated one hides at most
// the rest of its line; a CSI ends at its final byte, or where a byte
// cannot belong to it.
func StripControls(s string) string {
	if plainText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == 0x1b:
			i = skipEscape(s, i)
		case r == 0x9b: // CSI
			i = skipCSI(s, i)
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i = skipControlString(s, i)
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			// another control character: dropped
		default:
			b.WriteRune(r) // an invalid byte arrives as utf8.RuneError
		}
	}
	return b.String()
}

// plainText reports whether s is valid UTF-8 with no control character
// other than newline and tab: the common case, returned as it is.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f: // a C1 control in UTF-8
			return false
		}
	}
	return utf8.ValidString(s)
}

// skipEscape returns where the escape sequence whose ESC ends before i
// ends.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch c := s[i]; {
	case c == '[':
		return skipCSI(s, i+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipControlString(s, i+1)
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte: "\x1b(B"
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
			i++
		}
		return i
	case c >= 0x30 && c <= 0x7e: // "\x1b7", "\x1bc", "\x1bM"
		return i + 1
	}
	return i // a lone ESC: what follows is read on its own
}

// skipCSI returns where the control sequence whose parameters start at i
// ends: parameter bytes, intermediate bytes, one final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipControlString returns where the control string starting at i ends:
// after BEL or ST, or before the next ESC or newline.
func skipControlString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0x1b || s[i] == '\n':
			return i
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c: // ST as a C1 control
			return i + 2
		}
		i++
	}
	return i
}

// Caps on the free text a request hands baton, in bytes. They are domain
// rules, checked by the core (delivery.Service, intake.Service), so the
// CLI, the HTTP API and the MCP server refuse the same things: a summary
// is the request itself and may be long; a reason is a paragraph or two;
// the rest are names, URLs and paths.
const (
	MaxSummary = 64 << 10 // a delivery's summary
	MaxReason  = 4 << 10  // a decision's note: a reject reason, why a delivery is closed
	MaxURL     = 2 << 10  // an issue URL, a source's API URL
	MaxPath    = 4 << 10  // a local repository's path (PATH_MAX), an agent
	MaxName    = 256      // a repository name, a label, an actor
	MaxSecret  = 1 << 10  // a webhook secret
)

// CheckSize returns Invalid, naming what and both sizes, when s is
// longer than max bytes.
func CheckSize(what, s string, max int) error {
	if len(s) <= max {
		return nil
	}
	return Errorf(Invalid, "%s is %s, over the limit of %s: shorten it", what, byteSize(len(s)), byteSize(max))
}

// byteSize says n bytes for a person: "4 KiB (4096 bytes)" when n is a
// whole number of KiB, else "70001 bytes".
func byteSize(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// HiddenRune names r when it is a character a reader of code cannot see,
// or one that reorders what they see: the bidirectional controls of the
// "Trojan Source" attacks (CVE-2021-42574: embeddings, overrides,
// isolates and their ends, the directional marks) and zero-width
// characters (spaces, joiners, the word joiner, invisible operators, a
// byte-order mark inside text). Code review pages mark them, as forges
// do, since the code then does something other than it reads.
func HiddenRune(r rune) (name string, ok bool) {
	switch r {
	case '\u061C':
		return "ARABIC LETTER MARK", true
	case '\u200B':
		return "ZERO WIDTH SPACE", true
	case '\u200C':
		return "ZERO WIDTH NON-JOINER", true
	case '\u200D':
		return "ZERO WIDTH JOINER", true
	case '\u200E':
		return "LEFT-TO-RIGHT MARK", true
	case '\u200F':
		return "RIGHT-TO-LEFT MARK", true
	case '\u202A':
		return "LEFT-TO-RIGHT EMBEDDING", true
	case '\u202B':
		return "RIGHT-TO-LEFT EMBEDDING", true
	case '\u202C':
		return "POP DIRECTIONAL FORMATTING", true
	case '\u202D':
		return "LEFT-TO-RIGHT OVERRIDE", true
	case '\u202E':
		return "RIGHT-TO-LEFT OVERRIDE", true
	case '\u2060':
		return "WORD JOINER", true
	case '\u2061':
		return "FUNCTION APPLICATION", true
	case '\u2062':
		return "INVISIBLE TIMES", true
	case '\u2063':
		return "INVISIBLE SEPARATOR", true
	case '\u2064':
		return "INVISIBLE PLUS", true
	case '\u2066':
		return "LEFT-TO-RIGHT ISOLATE", true
	case '\u2067':
		return "RIGHT-TO-LEFT ISOLATE", true
	case '\u2068':
		return "FIRST STRONG ISOLATE", true
	case '\u2069':
		return "POP DIRECTIONAL ISOLATE", true
	case '\uFEFF':
		return "ZERO WIDTH NO-BREAK SPACE", true
	}
	return "", false
}

// HiddenChars counts the characters of s that HiddenRune names.
func HiddenChars(s string) int {
	n := 0
	for _, r := range s {
		if _, ok := HiddenRune(r); ok {
			n++
		}
	}
	return n
}
