package baton

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxIDLen bounds every id, so an id is always a sane file name.
const MaxIDLen = 128

// ValidID reports whether id may name a stored artifact: it matches
// [A-Za-z0-9][A-Za-z0-9._-]*, holds no "..", and is at most MaxIDLen bytes.
// Such an id can never name a path outside its directory.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLen || strings.Contains(id, "..") {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckID returns an Invalid error naming kind when id is not ValidID.
func CheckID(kind, id string) error {
	if ValidID(id) {
		return nil
	}
	return Errorf(Invalid, "invalid %s id %q: ids are letters, digits, '.', '_' and '-', start with a letter or digit, and never contain '..'", kind, id)
}

// maxSlugLen keeps generated ids readable in listings.
const maxSlugLen = 48

// Slug turns free text into a lowercase ASCII slug of letters, digits and
// single hyphens, at most 48 bytes, cut at a word boundary where it can be.
// Letters with diacritics lose them where that is a plain ASCII letter;
// other characters separate words. It returns fallback when nothing is left.
func Slug(text, fallback string) string {
	var b strings.Builder
	lastWordEnd := 0 // length of b at the end of the last complete word
	pendingDash := false
	for _, r := range text {
		r = foldASCII(r)
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			if b.Len() > 0 && !pendingDash {
				lastWordEnd = b.Len()
			}
			pendingDash = true
			continue
		}
		if pendingDash && b.Len() > 0 {
			b.WriteByte('-')
		}
		pendingDash = false
		b.WriteRune(r)
		if b.Len() > maxSlugLen {
			break
		}
	}
	s := b.String()
	if len(s) > maxSlugLen {
		if lastWordEnd > 0 {
			s = s[:lastWordEnd]
		} else {
			s = s[:maxSlugLen]
		}
	}
	if s == "" {
		return fallback
	}
	return s
}

// foldASCII lowercases r and maps common Latin letters with diacritics to
// their base letter, so "Überprüfung" slugs as "uberprufung".
func foldASCII(r rune) rune {
	r = unicode.ToLower(r)
	if r < utf8.RuneSelf {
		return r
	}
	if base, ok := latinFold[r]; ok {
		return base
	}
	return r
}

var latinFold = map[rune]rune{
	'à': 'a', 'á': 'a', 'â': 'a', 'ã': 'a', 'ä': 'a', 'å': 'a',
	'ç': 'c', 'è': 'e', 'é': 'e', 'ê': 'e', 'ë': 'e',
	'ì': 'i', 'í': 'i', 'î': 'i', 'ï': 'i', 'ñ': 'n',
	'ò': 'o', 'ó': 'o', 'ô': 'o', 'õ': 'o', 'ö': 'o', 'ø': 'o',
	'ù': 'u', 'ú': 'u', 'û': 'u', 'ü': 'u', 'ý': 'y', 'ÿ': 'y',
}

// IDTimeLayout is the UTC timestamp prefix of packet and loop ids.
const IDTimeLayout = "20060102T150405Z"

// TimestampID returns "<UTC yyyymmddThhmmssZ>-<slug of text>".
func TimestampID(now time.Time, text, fallback string) string {
	return now.UTC().Format(IDTimeLayout) + "-" + Slug(text, fallback)
}

// TimeLayout is how every stored timestamp is written: RFC 3339 in UTC,
// whole seconds.
const TimeLayout = time.RFC3339

// FormatTime renders t for storage.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
