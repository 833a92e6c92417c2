package frontmatter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// writer emits frontmatter lines in a fixed, line-oriented style: plain
// scalars where YAML reads them back unchanged, JSON-quoted strings
// otherwise, and JSON arrays for lists.
type writer struct{ b *bytes.Buffer }

func (w writer) str(key, v string) {
	w.b.WriteString(key)
	w.b.WriteString(": ")
	w.b.WriteString(quote(v))
	w.b.WriteByte('\n')
}

func (w writer) optStr(key, v string) {
	if v != "" {
		w.str(key, v)
	}
}

func (w writer) time(key string, t time.Time) { w.str(key, baton.FormatTime(t)) }

func (w writer) int(key string, n int) {
	w.b.WriteString(key)
	w.b.WriteString(": ")
	w.b.WriteString(strconv.Itoa(n))
	w.b.WriteByte('\n')
}

func (w writer) null(key string) {
	w.b.WriteString(key)
	w.b.WriteString(": null\n")
}

func (w writer) list(key string, vs []string) {
	w.b.WriteString(key)
	w.b.WriteString(": [")
	for i, v := range vs {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.WriteString(jsonString(v))
	}
	w.b.WriteString("]\n")
}

// json writes v as one line of JSON, which YAML reads as a flow value.
func (w writer) json(key string, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	w.b.WriteString(key)
	w.b.WriteString(": ")
	w.b.WriteString(yamlPrintable(strings.TrimRight(b.String(), "\n")))
	w.b.WriteByte('\n')
}

func (w writer) extra(fs []baton.Field) {
	for _, f := range fs {
		w.b.WriteString(f.Raw)
		if !strings.HasSuffix(f.Raw, "\n") {
			w.b.WriteByte('\n')
		}
	}
}

// quote returns v as a YAML scalar that reads back as exactly v.
func quote(v string) string {
	if plainSafe(v) {
		return v
	}
	return jsonString(v)
}

func jsonString(v string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	return yamlPrintable(strings.TrimSuffix(b.String(), "\n"))
}

// yamlPrintable escapes, in JSON text, the characters JSON leaves as
// they are but YAML refuses to read (DEL, the C1 controls, U+FFFE and
// U+FFFF) or reads as a line break (NEL, U+0085). They occur only inside strings, where \uXXXX means
// the same to both.
func yamlPrintable(s string) string {
	printable := func(r rune) bool {
		return !(r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff)
	}
	if strings.IndexFunc(s, func(r rune) bool { return !printable(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if printable(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// PlainSafe reports whether v is written unquoted: then the frontmatter
// line holds v itself, and a quick reader may take it as it is.
func PlainSafe(v string) bool { return plainSafe(v) }

// plainSafe reports whether v can be written unquoted: it starts with a
// letter, digit, '/' or '.', uses only a conservative character set, and
// has none of YAML's special spellings.
func plainSafe(v string) bool {
	if v == "" || v[len(v)-1] == ' ' || v[len(v)-1] == ':' {
		return false
	}
	switch strings.ToLower(v) {
	case "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n":
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '/' || c == '.' || c == '_':
		case i > 0 && strings.IndexByte(" -+=,()@", c) >= 0:
		case i > 0 && c == ':':
			if i+1 < len(v) && v[i+1] == ' ' {
				return false
			}
		default:
			return false
		}
	}
	return !strings.Contains(v, " #")
}

// Field decoders. Each names the key in its error.

func decodeString(e Entry) (string, error) {
	n := e.Node
	switch {
	case n.Kind == ScalarNode && n.Tag == tagNull:
		return "", nil
	case n.Kind == ScalarNode:
		return n.Value, nil
	}
	return "", fieldError(e, "want a string")
}

func decodeOptString(e Entry) (*string, error) {
	if e.Node.Kind == ScalarNode && e.Node.Tag == tagNull {
		return nil, nil
	}
	s, err := decodeString(e)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

func decodeInt(e Entry) (int, error) {
	n := e.Node
	if n.Kind == ScalarNode && n.Tag == tagNull {
		return 0, nil
	}
	if n.Kind != ScalarNode {
		return 0, fieldError(e, "want a whole number")
	}
	i, err := strconv.Atoi(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, fieldError(e, fmt.Sprintf("want a whole number, got %q", n.Value))
	}
	return i, nil
}

func decodeTime(e Entry) (time.Time, error) {
	s, err := decodeString(e)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, fieldError(e, fmt.Sprintf("want an ISO 8601 UTC time such as 2026-01-02T15:04:05Z, got %q", s))
	}
	return t.UTC(), nil
}

func decodeInt64(e Entry) (int64, error) {
	n := e.Node
	if n.Kind == ScalarNode && n.Tag == tagNull {
		return 0, nil
	}
	if n.Kind != ScalarNode {
		return 0, fieldError(e, "want a whole number")
	}
	i, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64)
	if err != nil {
		return 0, fieldError(e, fmt.Sprintf("want a whole number, got %q", n.Value))
	}
	return i, nil
}

func decodeFloat(e Entry) (float64, error) {
	n := e.Node
	if n.Kind == ScalarNode && n.Tag == tagNull {
		return 0, nil
	}
	if n.Kind != ScalarNode {
		return 0, fieldError(e, "want a number")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fieldError(e, fmt.Sprintf("want a number, got %q", n.Value))
	}
	return f, nil
}

// decodeDuration reads a Go duration ("5m0s", "90s"); null or "" is 0.
func decodeDuration(e Entry) (time.Duration, error) {
	s, err := decodeString(e)
	if err != nil || strings.TrimSpace(s) == "" {
		return 0, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fieldError(e, fmt.Sprintf("want a duration such as 90s or 1h30m, got %q", s))
	}
	return d, nil
}

func decodeOptTime(e Entry) (time.Time, error) {
	if s, err := decodeString(e); err != nil || strings.TrimSpace(s) == "" {
		return time.Time{}, err
	}
	return decodeTime(e)
}

// decodeJSON reads a structured value (baton writes it as one line of
// JSON, which is a YAML flow collection too) into v, which must be a
// pointer. Null leaves v as it is.
func decodeJSON(e Entry, v any) error {
	n := e.Node
	if n.Kind == ScalarNode && n.Tag == tagNull {
		return nil
	}
	if n.Kind == ScalarNode {
		return fieldError(e, "want a JSON list or object")
	}
	b, err := n.jsonValue()
	if err != nil {
		return fieldError(e, err.Error())
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fieldError(e, err.Error())
	}
	return nil
}

// decodeList accepts a YAML or JSON sequence of strings, a string holding a
// JSON array (the seed's "JSON array string"), or null.
func decodeList(e Entry) ([]string, error) {
	n := e.Node
	switch n.Kind {
	case SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != ScalarNode {
				return nil, fieldError(e, "want a list of strings")
			}
			out = append(out, c.Value)
		}
		return out, nil
	case ScalarNode:
		if n.Tag == tagNull || strings.TrimSpace(n.Value) == "" {
			return nil, nil
		}
		var out []string
		if err := json.Unmarshal([]byte(n.Value), &out); err != nil {
			return nil, fieldError(e, "want a JSON array of strings")
		}
		return out, nil
	}
	return nil, fieldError(e, "want a list of strings")
}

func fieldError(e Entry, msg string) error {
	return &SyntaxError{Line: e.Node.Line + 1, Msg: e.Key + ": " + msg}
}
