package baton_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestParseLineNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []baton.LineNote
		err      string
	}{
		{name: "empty", in: "  \n\n"},
		{name: "one", in: "internal/auth/jwt.go:12: check the expiry",
			want: []baton.LineNote{{Path: "internal/auth/jwt.go", Line: 12, Body: "check the expiry"}}},
		{name: "continued and crlf", in: "a.go:3: first\r\n  second\r\nthird\r\n\r\ndocs/plan.md:1:\n step two is missing\n",
			want: []baton.LineNote{{Path: "a.go", Line: 3, Body: "first\nsecond\nthird"}, {Path: "docs/plan.md", Line: 1, Body: "step two is missing"}}},
		{name: "colon in path", in: "cmd/a:b.go:7: odd name",
			want: []baton.LineNote{{Path: "cmd/a:b.go", Line: 7, Body: "odd name"}}},
		{name: "colon in text", in: "a.go:2: want x: y:3: z",
			want: []baton.LineNote{{Path: "a.go", Line: 2, Body: "want x: y:3: z"}}},
		{name: "text before any note", in: "the whole thing\na.go:1: x", err: "line 1: start a note"},
		{name: "no text", in: "a.go:4:", err: "say what is wrong"},
		{name: "line zero", in: "a.go:0: x", err: "lines count from 1"},
		{name: "escapes", in: "../etc/passwd:1: x", err: "not a file of the repository"},
		{name: "absolute", in: "/etc/passwd:1: x", err: "not a file of the repository"},
		{name: "not clean", in: "a//b.go:1: x", err: "not a file of the repository"},
		{name: "control", in: "a\x1b[31m.go:1: x", err: "control character"},
		{name: "too many", in: strings.Repeat("a.go:1: x\n", baton.MaxLineNotes+1), err: "over the limit of 100"},
		{name: "too long", in: "a.go:1: " + strings.Repeat("x", baton.MaxLineNoteText+1), err: "over the limit of 16 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := baton.ParseLineNotes(tc.in)
			if tc.err != "" {
				if err == nil || baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseLineNotes(%q) = %v, %v; want Invalid %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseLineNotes(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseLineNotes: whatever parses is a valid set of notes whose
// every body is text of the input, and writing it out reads back the
// same notes.
func FuzzParseLineNotes(f *testing.F) {
	for _, s := range []string{"a.go:1: x", "a.go:3: first\n  second\nb/c.md:9: y", "x:1:2:3: z", " a.go:1: x", "a.go:1:\n\n b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		notes, err := baton.ParseLineNotes(in)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("error %v is not Invalid", err)
			}
			return
		}
		if err := baton.CheckLineNotes(notes); err != nil {
			t.Fatalf("parsed notes fail their check: %v", err)
		}
		for _, n := range notes {
			if !strings.Contains(in, n.Path+":") {
				t.Fatalf("path %q is not in the input", n.Path)
			}
			for _, l := range strings.Split(n.Body, "\n") {
				if !strings.Contains(in, l) {
					t.Fatalf("body line %q is not in the input", l)
				}
			}
		}
		again, err := baton.ParseLineNotes(baton.FormatLineNotes(notes))
		if err != nil || !reflect.DeepEqual(again, notes) && len(notes) > 0 {
			t.Fatalf("written out and read back: %#v, %v; want %#v", again, err, notes)
		}
	})
}
