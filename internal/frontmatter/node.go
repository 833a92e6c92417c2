package frontmatter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The frontmatter is the line-oriented subset of YAML the seed's formats
// use ("no complex nesting"), read by a parser of exactly that subset: a
// hook reads a loop or a packet on every call, and a general YAML library
// costs every process its initialisation and its pages. What is outside
// the subset is refused with the line it is on, never read another way:
// FuzzFrontAgreesWithYAML checks that what is read here is what a YAML
// library reads.
//
// The subset, one top-level entry per "key: value" line at column 0:
//
//   - keys are words of letters, digits, '_', '-' and '.';
//   - a value is empty or null (null), a plain scalar on one line, a
//     double-quoted string with JSON's escapes, a single-quoted string,
//     or a flow sequence or mapping on one line ("[...]", "{...}") whose
//     items are such scalars or flow collections, mappings keyed by
//     quoted strings;
//   - an empty value may be followed by a block sequence of scalars, one
//     "- item" line each at one indentation;
//   - "# comment" lines, blank lines, and a " # comment" after a value.
//
// No anchors, aliases, tags, block scalars, multi-line scalars, tabs or
// control characters.

// NodeKind says what a Node holds.
type NodeKind uint8

const (
	ScalarNode NodeKind = iota + 1
	SequenceNode
	MappingNode
)

// Resolved tags of a scalar, as YAML's core schema names them.
const (
	tagNull  = "!!null"
	tagBool  = "!!bool"
	tagInt   = "!!int"
	tagFloat = "!!float"
	tagStr   = "!!str"
)

// Node is one value of the frontmatter.
type Node struct {
	Kind NodeKind
	// Tag is a scalar's resolved type: "!!null", "!!bool", "!!int",
	// "!!float" or "!!str". Top-level plain scalars resolve to "!!null" or
	// "!!str" only: the decoders read their text.
	Tag   string
	Value string // a scalar's text, quotes and escapes resolved
	Line  int    // 1-based line within the frontmatter
	// Content holds a sequence's items, or a mapping's keys and values
	// alternating.
	Content []*Node
}

// maxKey bounds a key's length, a flow map's quoted key's too (YAML reads
// no implicit key over 1024 characters).
const maxKey = 128

// maxFlowDepth bounds the nesting of flow collections.
const maxFlowDepth = 16

// parseFront reads the frontmatter into ordered entries, each keeping its
// raw lines (from its key line to the next key line, comments included).
func parseFront(front string) ([]Entry, error) {
	if !utf8.ValidString(front) {
		return nil, &SyntaxError{Msg: "frontmatter is not valid UTF-8"}
	}
	lines := strings.SplitAfter(front, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var entries []Entry
	start := -1 // line index of the current entry's key
	seqIndent := -1
	var seen map[string]bool
	finish := func(end int) {
		if start >= 0 {
			entries[len(entries)-1].Raw = strings.Join(lines[start:end], "")
		}
	}
	for i, raw := range lines {
		line := strings.TrimSuffix(raw, "\n")
		n := i + 1
		if err := checkChars(line, n); err != nil {
			return nil, err
		}
		t := strings.TrimLeft(line, " ")
		if t == "" || t[0] == '#' {
			continue
		}
		indent := len(line) - len(t)
		if t[0] == '-' && (len(t) == 1 || t[1] == ' ') {
			// A block sequence item: it belongs to the entry above, whose
			// value was empty.
			if start < 0 {
				return nil, &SyntaxError{Line: n + 1, Msg: "frontmatter must be key: value lines"}
			}
			e := &entries[len(entries)-1]
			if e.Node.Kind == ScalarNode && e.Node.Tag == tagNull && e.Node.Value == "" && len(e.Node.Content) == 0 && seqIndent < 0 {
				e.Node = &Node{Kind: SequenceNode, Line: n}
				seqIndent = indent
			}
			if e.Node.Kind != SequenceNode || indent != seqIndent {
				return nil, subsetError(n, "a list item belongs under a key with no value, all at one indentation")
			}
			item, err := blockScalar(strings.TrimLeft(t[1:], " "), n, false)
			if err != nil {
				return nil, err
			}
			if item.Tag == tagNull && item.Value == "" && strings.TrimSpace(t[1:]) == "" {
				return nil, subsetError(n, "an empty list item")
			}
			e.Node.Content = append(e.Node.Content, item)
			continue
		}
		if indent > 0 {
			return nil, subsetError(n, "an indented line that is not a list item (a value is one line: write a list or map as one line of JSON)")
		}
		if strings.HasPrefix(line, "...") || strings.HasPrefix(line, "---") {
			return nil, subsetError(n, "a document marker inside the frontmatter")
		}
		key, rest, ok := cutKey(line)
		if !ok {
			return nil, &SyntaxError{Line: n + 1, Msg: "frontmatter must be key: value lines (a key is a word of up to 128 letters, digits, _, - and ., starting with a letter, digit or _)"}
		}
		if seen[key] {
			return nil, &SyntaxError{Line: n + 1, Msg: fmt.Sprintf("key %q appears twice", key)}
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		seen[key] = true
		v, err := blockScalar(strings.TrimLeft(rest, " "), n, true)
		if err != nil {
			return nil, err
		}
		finish(i)
		entries = append(entries, Entry{Key: key, Node: v})
		start, seqIndent = i, -1
	}
	finish(len(lines))
	return entries, nil
}

func subsetError(line int, what string) error {
	return &SyntaxError{Line: line + 1, Msg: "frontmatter is outside the YAML baton reads: " + what}
}

// checkChars refuses what YAML refuses to read, and tabs.
func checkChars(line string, n int) error {
	for _, r := range line {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff || r == 0xfffe || r == 0xffff {
			return subsetError(n, fmt.Sprintf("character %U (write it as a \\u escape inside double quotes)", r))
		}
	}
	return nil
}

// cutKey splits "key: rest" or "key:" at column 0.
func cutKey(line string) (key, rest string, ok bool) {
	i := 0
	for i < len(line) && isKeyByte(line[i], i == 0) {
		i++
	}
	if i == 0 || i > maxKey || i == len(line) || line[i] != ':' {
		return "", "", false
	}
	if i+1 < len(line) && line[i+1] != ' ' {
		return "", "", false
	}
	return line[:i], line[i+1:], true
}

func isKeyByte(c byte, first bool) bool {
	if first && (c == '-' || c == '.') {
		return false
	}
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// blockScalar reads the value after "key: " or "- ": null, a plain or
// quoted scalar, or a one-line flow collection, then an optional comment.
func blockScalar(s string, n int, top bool) (*Node, error) {
	if s == "" || s[0] == '#' {
		return &Node{Kind: ScalarNode, Tag: tagNull, Line: n}, nil
	}
	var v *Node
	var rest string
	var err error
	switch s[0] {
	case '"', '\'':
		v, rest, err = quoted(s, n)
	case '[', '{':
		p := flowParser{s: s, line: n}
		v, err = p.value(0)
		rest = p.s[p.i:]
	default:
		return plain(s, n, top)
	}
	if err != nil {
		return nil, err
	}
	if err := trailing(rest, n); err != nil {
		return nil, err
	}
	return v, nil
}

// trailing accepts spaces and a comment after a value.
func trailing(rest string, n int) error {
	t := strings.TrimLeft(rest, " ")
	if t == "" || (t[0] == '#' && len(t) < len(rest)) {
		return nil
	}
	return subsetError(n, fmt.Sprintf("%q after a value", t))
}

// plain reads a plain scalar in block context: one line, up to a " #"
// comment, trailing spaces trimmed.
func plain(s string, n int, top bool) (*Node, error) {
	if strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", s[0]) >= 0 && !(s[0] == '-' && len(s) > 1 && s[1] != ' ') {
		return nil, subsetError(n, fmt.Sprintf("a value starting with %q (quote it)", s[0]))
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " ")
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") {
		return nil, subsetError(n, "a plain value holding \": \" or ending with \":\" (quote it)")
	}
	tag := resolvePlain(s)
	if top && tag != tagNull {
		tag = tagStr
	}
	if tag == "" {
		return nil, subsetError(n, fmt.Sprintf("the value %q, which YAML may read as a number or a boolean (quote it)", s))
	}
	return &Node{Kind: ScalarNode, Tag: tag, Value: s, Line: n}, nil
}

// resolvePlain gives a plain scalar's type in YAML's core schema, or ""
// for a spelling whose reading differs between YAML's versions or
// libraries (0x1F, 012, 1_000, .inf, yes, on, ...), which the subset
// leaves out.
func resolvePlain(s string) string {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return tagNull
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return tagBool
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off", "null", "true", "false", ".inf", "-.inf", "+.inf", ".nan":
		return ""
	}
	if c := s[0]; !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.') {
		return tagStr
	}
	if isJSONNumber(s) {
		if !strings.ContainsAny(s, ".eE") {
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return tagInt
			}
			return ""
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return tagFloat
		}
		return ""
	}
	return ""
}

// isJSONNumber reports whether s is a number as JSON spells it.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}

// quoted reads a quoted scalar at the start of s and returns the rest of
// the line after its closing quote.
func quoted(s string, n int) (*Node, string, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == q:
			return &Node{Kind: ScalarNode, Tag: tagStr, Value: b.String(), Line: n}, s[i+1:], nil
		case c == '\\' && q == '"':
			r, size, ok := escape(s[i:])
			if !ok {
				return nil, "", subsetError(n, "an escape other than JSON's in a double-quoted string")
			}
			b.WriteRune(r)
			i += size
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil, "", subsetError(n, "a quoted string not closed on its line")
}

// escape decodes the JSON escape at the start of s (which YAML reads the
// same), but for "\/", which YAML does not know, and surrogates.
func escape(s string) (r rune, size int, ok bool) {
	if len(s) < 2 {
		return 0, 0, false
	}
	switch s[1] {
	case '"', '\\':
		return rune(s[1]), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		if len(s) < 6 {
			return 0, 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 32)
		if err != nil || (v >= 0xd800 && v <= 0xdfff) {
			return 0, 0, false
		}
		return rune(v), 6, true
	}
	return 0, 0, false
}

// flowParser reads one flow collection on one line.
type flowParser struct {
	s    string
	i    int
	line int
}

func (p *flowParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *flowParser) value(depth int) (*Node, error) {
	if depth > maxFlowDepth {
		return nil, subsetError(p.line, fmt.Sprintf("lists or maps nested over %d deep", maxFlowDepth))
	}
	p.space()
	if p.i == len(p.s) {
		return nil, subsetError(p.line, "a list or map not closed on its line")
	}
	switch c := p.s[p.i]; c {
	case '[', '{':
		return p.collection(depth)
	case '"', '\'':
		v, rest, err := quoted(p.s[p.i:], p.line)
		if err != nil {
			return nil, err
		}
		p.i = len(p.s) - len(rest)
		return v, nil
	}
	j := p.i
	for j < len(p.s) && isFlowPlainByte(p.s[j]) {
		j++
	}
	word := p.s[p.i:j]
	if word == "" || !(word[0] >= 'a' && word[0] <= 'z' || word[0] >= 'A' && word[0] <= 'Z' || word[0] == '_' || word[0] == '/' || word[0] == '-' || word[0] >= '0' && word[0] <= '9') {
		return nil, subsetError(p.line, fmt.Sprintf("%q inside a list or map", p.s[p.i:]))
	}
	tag := resolvePlain(word)
	if tag == "" || (tag == tagStr && (word[0] == '-' || word[0] >= '0' && word[0] <= '9')) {
		return nil, subsetError(p.line, fmt.Sprintf("the value %q inside a list or map (quote it)", word))
	}
	p.i = j
	return &Node{Kind: ScalarNode, Tag: tag, Value: word, Line: p.line}, nil
}

// isFlowPlainByte is what an unquoted word in a flow collection may hold.
func isFlowPlainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' || c == '+'
}

func (p *flowParser) collection(depth int) (*Node, error) {
	open := p.s[p.i]
	closer, kind := byte(']'), SequenceNode
	if open == '{' {
		closer, kind = '}', MappingNode
	}
	node := &Node{Kind: kind, Line: p.line}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == closer {
		p.i++
		return node, nil
	}
	var keys map[string]bool
	for {
		if kind == MappingNode {
			p.space()
			if p.i == len(p.s) || p.s[p.i] != '"' {
				return nil, subsetError(p.line, "a map key that is not a double-quoted string")
			}
			from := p.i
			k, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if p.i-from > maxKey {
				return nil, subsetError(p.line, fmt.Sprintf("a map key over %d characters", maxKey))
			}
			if keys[k.Value] {
				return nil, subsetError(p.line, fmt.Sprintf("the map key %q twice", k.Value))
			}
			if keys == nil {
				keys = make(map[string]bool)
			}
			keys[k.Value] = true
			p.space()
			if p.i == len(p.s) || p.s[p.i] != ':' {
				return nil, subsetError(p.line, "a map key without \":\"")
			}
			p.i++
			node.Content = append(node.Content, k)
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		node.Content = append(node.Content, v)
		p.space()
		if p.i == len(p.s) {
			return nil, subsetError(p.line, "a list or map not closed on its line")
		}
		switch p.s[p.i] {
		case closer:
			p.i++
			return node, nil
		case ',':
			p.i++
			p.space()
			if p.i < len(p.s) && p.s[p.i] == closer {
				return nil, subsetError(p.line, "a comma before a closing bracket")
			}
		default:
			return nil, subsetError(p.line, fmt.Sprintf("%q inside a list or map", p.s[p.i:]))
		}
	}
}

// generic returns what n holds as Go values a JSON encoder takes: nil,
// bool, int64, float64, string, []any, map[string]any.
func (n *Node) generic() (any, error) {
	switch n.Kind {
	case SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := c.generic()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := n.Content[i+1].generic()
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	}
	switch n.Tag {
	case tagNull:
		return nil, nil
	case tagBool:
		return strings.ToLower(n.Value) == "true", nil
	case tagInt:
		return strconv.ParseInt(n.Value, 10, 64)
	case tagFloat:
		return strconv.ParseFloat(n.Value, 64)
	}
	return n.Value, nil
}

// jsonValue is n as JSON text.
func (n *Node) jsonValue() ([]byte, error) {
	g, err := n.generic()
	if err != nil {
		return nil, err
	}
	return json.Marshal(g)
}
