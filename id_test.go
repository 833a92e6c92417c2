package baton

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"20261122T093400Z-auth-refactor", true},
		{"a", true},
		{"A.b_c-9", true},
		{"", false},
		{"..", false},
		{"../x", false},
		{"a..b", false},
		{"/etc/passwd", false},
		{"a/b", false},
		{`a\b`, false},
		{".hidden", false},
		{"-flag", false},
		{"_x", false},
		{"a b", false},
		{"é", false},
		{"a\x00b", false},
		{strings.Repeat("a", MaxIDLen), true},
		{strings.Repeat("a", MaxIDLen+1), false},
	}
	for _, tt := range tests {
		if got := ValidID(tt.id); got != tt.want {
			t.Errorf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
	if err := CheckID("packet", "../x"); ErrorCode(err) != Invalid || !strings.Contains(err.Error(), `"../x"`) {
		t.Errorf("CheckID(../x) = %v, want an Invalid error naming the id", err)
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"Finish the auth refactor", "finish-the-auth-refactor"},
		{"  --Fix: JWT expiry (again)!! ", "fix-jwt-expiry-again"},
		{"Überprüfung der Ränder", "uberprufung-der-rander"},
		{"日本語", "packet"},
		{"", "packet"},
		{strings.Repeat("word ", 30), "word-word-word-word-word-word-word-word-word"}, // 49 bytes with a tenth word,
	}
	for _, tt := range tests {
		if got := Slug(tt.in, "packet"); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	id := TimestampID(time.Date(2026, 11, 22, 9, 34, 5, 0, time.FixedZone("CET", 3600)), "Ship it", "x")
	if id != "20261122T083405Z-ship-it" {
		t.Errorf("TimestampID = %q", id)
	}
}

// No id that ValidID accepts can leave the directory it is joined to.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"a", "../x", "a/../../b", "/abs", "a..b", ".", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidID(id) {
			return
		}
		dir := "/store/packets"
		p := filepath.Join(dir, id+".md")
		if filepath.Dir(p) != dir {
			t.Fatalf("ValidID(%q) but %s escapes %s", id, p, dir)
		}
		if strings.ContainsAny(id, "/\\\x00") || strings.Contains(id, "..") || len(id) > MaxIDLen {
			t.Fatalf("ValidID(%q) accepted a forbidden id", id)
		}
	})
}

// Every slug, joined into a timestamp id, is a valid id.
func FuzzSlug(f *testing.F) {
	for _, s := range []string{"Finish the auth refactor", "..", "/etc/passwd", "日本語", strings.Repeat("x", 500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s := Slug(text, "packet")
		if len(s) == 0 || len(s) > 48 || strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") || strings.Contains(s, "--") {
			t.Fatalf("Slug(%q) = %q: want 1..48 bytes of words joined by single hyphens", text, s)
		}
		if id := TimestampID(time.Unix(0, 0), text, "packet"); !ValidID(id) {
			t.Fatalf("TimestampID(%q) = %q is not a valid id", text, id)
		}
	})
}
