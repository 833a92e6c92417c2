package baton

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LineNote is a person's comment on one line of what they judged: a
// line of a changed file as the change leaves it, or of the plan
// (docs/plan.md). A reject keeps its line notes with its reason, and
// the next run reads them where the reject was posted.
type LineNote struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Body string `json:"body"`
}

// Caps on line notes: how many one decision carries, and their text in
// all (each body counted).
const (
	MaxLineNotes    = 100
	MaxLineNoteText = 16 << 10
	maxLineNumber   = 10_000_000
)

// Where is "path:line", how a note names its line.
func (n LineNote) Where() string { return n.Path + ":" + strconv.Itoa(n.Line) }

// CheckLineNotes returns Invalid, saying which note and what to do, when
// notes break a rule: a relative, clean path (no "..", no control
// characters), a line from 1, a body that is not blank, and the caps.
func CheckLineNotes(notes []LineNote) error {
	if len(notes) > MaxLineNotes {
		return Errorf(Invalid, "%d line notes, over the limit of %d: put the rest in the reason", len(notes), MaxLineNotes)
	}
	total := 0
	for i, n := range notes {
		if err := checkNotePath(n.Path); err != nil {
			return Errorf(Invalid, "line note %d: %s", i+1, ErrorMessage(err))
		}
		if n.Line < 1 || n.Line > maxLineNumber {
			return Errorf(Invalid, "line note %d (%s): line %d is not a line of a file: lines count from 1", i+1, Truncate(n.Path, 80, "…"), n.Line)
		}
		if strings.TrimSpace(n.Body) == "" {
			return Errorf(Invalid, "line note %d (%s): say what is wrong on that line", i+1, Truncate(n.Where(), 80, "…"))
		}
		total += len(n.Body)
	}
	if total > MaxLineNoteText {
		return Errorf(Invalid, "the line notes' text is %s, over the limit of %s: shorten it", byteSize(total), byteSize(MaxLineNoteText))
	}
	return nil
}

func checkNotePath(p string) error {
	switch {
	case p == "":
		return Errorf(Invalid, "no path: write path:line: text")
	case len(p) > MaxPath:
		return Errorf(Invalid, "the path is over %d bytes", MaxPath)
	case !utf8.ValidString(p):
		return Errorf(Invalid, "the path is not UTF-8")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return Errorf(Invalid, "the path %q has a control character", Truncate(p, 80, "…"))
	case p != strings.TrimSpace(p):
		return Errorf(Invalid, "the path %q starts or ends with a space", Truncate(p, 80, "…"))
	case strings.IndexFunc(p, unicode.IsSpace) == 0:
		return Errorf(Invalid, "the path %q starts with a space", Truncate(p, 80, "…"))
	case notePath(p) != p:
		return Errorf(Invalid, "the path %q has a colon and digits in it: a note cannot name it", Truncate(p, 80, "…"))
	case path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
		return Errorf(Invalid, "the path %q is not a file of the repository: write it as the diff shows it (dir/file.go)", Truncate(p, 80, "…"))
	}
	return nil
}

// ParseLineNotes reads line notes as a person types them in one text
// field: each note starts on its own line as "path:line: text"; a line
// that does not start so (an indented one, or one with no path:line:
// in front) continues the note before it. Blank lines are dropped. The notes are checked (CheckLineNotes); an empty text is no
// notes.
func ParseLineNotes(text string) ([]LineNote, error) {
	var notes []LineNote
	for i, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line := strings.TrimRightFunc(raw, unicode.IsSpace)
		if n, ok := noteStart(line); ok {
			notes = append(notes, n)
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(notes) == 0 {
			return nil, Errorf(Invalid, "line notes, line %d: start a note with the file and line it is about: path:line: text (as internal/auth/jwt.go:12: check the expiry)", i+1)
		}
		n := &notes[len(notes)-1]
		if n.Body != "" {
			n.Body += "\n"
		}
		n.Body += strings.TrimSpace(line)
	}
	if err := CheckLineNotes(notes); err != nil {
		return nil, err
	}
	return notes, nil
}

// notePath is the path a note written for p would be read with.
func notePath(p string) string {
	n, _ := noteStart(p + ":1: x")
	return n.Path
}

// noteStart parses "path:line: text" (text may be empty, to follow on
// the next lines): the path is everything before the first ":digits:"
// and may not start with a space, so an indented line always continues.
func noteStart(line string) (LineNote, bool) {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return LineNote{}, false
	}
	for i := 0; i < len(line); i++ {
		if line[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		if j == i+1 || j >= len(line) || line[j] != ':' || i == 0 {
			continue
		}
		n, err := strconv.Atoi(line[i+1 : j])
		if err != nil {
			continue
		}
		return LineNote{Path: line[:i], Line: n, Body: strings.TrimSpace(line[j+1:])}, true
	}
	return LineNote{}, false
}

// FormatLineNotes writes notes as ParseLineNotes reads them: the first
// line of a body after its path:line:, the rest indented.
func FormatLineNotes(notes []LineNote) string {
	var b strings.Builder
	for _, n := range notes {
		lines := strings.Split(n.Body, "\n")
		fmt.Fprintf(&b, "%s: %s\n", n.Where(), strings.TrimSpace(lines[0]))
		for _, l := range lines[1:] {
			if l = strings.TrimSpace(l); l != "" {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	return b.String()
}
