// Package frontmatter reads and writes baton's markdown artifacts: a
// line-oriented YAML frontmatter between "---" lines, then "## " sections.
// The frontmatter is read by a parser of exactly the subset of YAML the
// seed's formats use (see node.go), which refuses the rest.
//
// Files baton writes round-trip byte for byte. Frontmatter keys and
// sections baton does not know survive a rewrite unchanged.
package frontmatter

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/baton-agent/baton"
)

// Entry is one top-level frontmatter key with its value node and the exact
// text it occupied (key line plus continuation lines).
type Entry struct {
	Key  string
	Node *Node
	Raw  string
}

// Document is a parsed artifact.
type Document struct {
	Front    []Entry
	Preamble string          // text between the frontmatter and the first heading
	Sections []baton.Section // "## " sections in file order
	// Body is everything after the frontmatter, for codecs that read the
	// body their own way (loops).
	Body string
}

// SyntaxError reports a malformed artifact.
type SyntaxError struct {
	Line int // 1-based, 0 when unknown
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Split separates data into the frontmatter text (between the opening and
// closing "---" lines, exclusive) and the body after the closing line.
//
// CRLF line endings (a checkout with core.autocrlf) read as LF, so an
// artifact reads the same whatever the checkout did to it; baton writes
// LF. Frontmatter over MaxFront bytes is refused: it is a few key: value
// lines, and YAML over more could cost a hook its time.
func Split(data []byte) (front, body string, err error) {
	s := LF(string(data))
	s = strings.TrimPrefix(s, "\ufeff")
	first, rest, ok := cutLine(s)
	if !ok && first == "" {
		return "", "", &SyntaxError{Line: 1, Msg: "empty file: expected a frontmatter block starting with ---"}
	}
	if strings.TrimRight(first, "\r") != "---" {
		return "", "", &SyntaxError{Line: 1, Msg: "expected the file to start with a --- line"}
	}
	var fb strings.Builder
	line := 1
	for {
		var l string
		l, rest, ok = cutLine(rest)
		line++
		if strings.TrimRight(l, "\r") == "---" && (ok || l != "") {
			return fb.String(), rest, nil
		}
		if !ok {
			return "", "", &SyntaxError{Line: line, Msg: "frontmatter is not closed by a --- line"}
		}
		if fb.Len()+len(l) >= MaxFront {
			return "", "", &SyntaxError{Line: line, Msg: fmt.Sprintf("frontmatter is over %d KiB", MaxFront>>10)}
		}
		fb.WriteString(l)
		fb.WriteByte('\n')
	}
}

// MaxFront bounds the frontmatter block.
const MaxFront = 64 << 10

// LF returns s with the carriage returns that end its lines removed
// (CRLF, or a run of CRs before LF, becomes LF); other CRs stay. It is
// idempotent, so text read, written and read again does not change.
func LF(s string) string {
	i := strings.Index(s, "\r\n")
	if i < 0 {
		return s
	}
	for i > 0 && s[i-1] == '\r' {
		i--
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		if s[i] != '\r' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '\r' {
			j++
		}
		if j == len(s) || s[j] != '\n' {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// cutLine returns the first line of s without its "\n", the rest after it,
// and whether a newline was found.
func cutLine(s string) (line, rest string, found bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// Parse reads an artifact: frontmatter entries, preamble and sections.
func Parse(data []byte) (*Document, error) {
	front, body, err := Split(data)
	if err != nil {
		return nil, err
	}
	entries, err := parseFront(front)
	if err != nil {
		return nil, err
	}
	pre, sections := parseSections(body) // Split made it LF
	return &Document{Front: entries, Preamble: pre, Sections: sections, Body: body}, nil
}

// ParseSections splits a markdown body into the text before the first
// "## " heading and the sections that follow. Headings inside fenced code
// blocks are text, not headings. CRLF line endings read as LF.
func ParseSections(body string) (preamble string, sections []baton.Section) {
	return parseSections(LF(body))
}

// parseSections is ParseSections on text already in LF form.
func parseSections(body string) (preamble string, sections []baton.Section) {
	var cur *baton.Section
	start := 0       // where the text of the current section (or preamble) starts
	var fence string // the opening fence while inside one
	flush := func(end int) {
		if cur == nil {
			preamble = body[start:end]
		} else {
			cur.Body = body[start:end]
			sections = append(sections, *cur)
		}
	}
	for pos := 0; pos < len(body); {
		line, next := body[pos:], len(body)
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], pos+i+1
		}
		trimmed := strings.TrimRight(line, "\r")
		if fence != "" {
			if closesFence(trimmed, fence) {
				fence = ""
			}
		} else if fence = opensFence(trimmed); fence == "" {
			if h, ok := heading2(trimmed); ok {
				flush(pos)
				cur = &baton.Section{Heading: h}
				start = next
			}
		}
		pos = next
	}
	flush(len(body))
	return preamble, sections
}

// heading2 reports whether line is a level-two ATX heading and returns its
// text.
func heading2(line string) (string, bool) {
	if !strings.HasPrefix(line, "##") || strings.HasPrefix(line, "###") {
		return "", false
	}
	rest := line[2:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	h := strings.TrimSpace(rest)
	// A closing sequence of #s is not part of the heading.
	if t := strings.TrimRight(h, "#"); t != h && (t == "" || strings.HasSuffix(t, " ")) {
		h = strings.TrimSpace(t)
	}
	return h, true
}

// opensFence returns the fence marker (``` or ~~~, any length >= 3) when
// line opens a fenced code block, else "".
func opensFence(line string) string {
	l := strings.TrimLeft(line, " ")
	if len(line)-len(l) > 3 {
		return ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(l) && l[n] == c {
			n++
		}
		if n >= 3 {
			if c == '`' && strings.IndexByte(l[n:], '`') >= 0 {
				return "" // an inline code span, not a fence
			}
			return l[:n]
		}
	}
	return ""
}

// closesFence reports whether line closes a block opened with fence.
func closesFence(line, fence string) bool {
	l := strings.TrimLeft(line, " ")
	if len(line)-len(l) > 3 {
		return false
	}
	n := 0
	for n < len(l) && l[n] == fence[0] {
		n++
	}
	return n >= len(fence) && strings.TrimSpace(l[n:]) == ""
}

// RenderSections writes sections as "## Heading\n" + body, in order.
func RenderSections(b *bytes.Buffer, sections []baton.Section) {
	for _, s := range sections {
		b.WriteString("## ")
		b.WriteString(s.Heading)
		b.WriteByte('\n')
		b.WriteString(s.Body)
	}
}
