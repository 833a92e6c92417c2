package agentrun

import (
	"github.com/baton-agent/baton/internal/proc"

	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// decoder turns one agent's stdout, line by line, into a Result.
type decoder interface {
	// line takes one stdout line without its end of line. The slice is
	// only valid during the call.
	line(b []byte)
	// tooLong records a line that was too long to hold and was skipped.
	tooLong()
	// finish copies what was gathered into r and reports whether the
	// output held a result (or final message).
	finish(r *Result) bool
}

func newDecoder(k kind, live *liveView) decoder {
	switch k {
	case kindClaude:
		return &claudeDecoder{live: live}
	case kindCodex:
		return &codexDecoder{live: live, seen: map[string]bool{}}
	case kindPi:
		return &piDecoder{live: live}
	case kindDroid:
		d := &droidDecoder{live: live}
		d.scan = newObjectScanner(maxLineBytes, d.object, d.junk)
		return d
	default:
		d := &commandDecoder{live: live, text: proc.Tail{Max: maxFinalTextBytes}}
		d.scan = newObjectScanner(maxLineBytes, d.object, d.junk)
		return d
	}
}

// sniffType returns the value of a leading "type" key without decoding
// the line, so lines of types a decoder ignores (claude's tool results can
// be megabytes) are skipped cheaply. ok is false when the line does not
// start that way; the caller then decodes it fully.
func sniffType(line []byte) (string, bool) {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return "", false
	}
	rest := line[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// unmarshalTolerant decodes line into v. A field of an unexpected type is
// not fatal (the rest is still decoded), since agent CLIs change shapes
// between versions; only malformed JSON is.
func unmarshalTolerant(line []byte, v any) error {
	err := json.Unmarshal(line, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return nil
	}
	return err
}

// errorTexts turns an errors[] array whose entries are strings or objects
// into strings.
func errorTexts(raw []json.RawMessage) []string {
	var out []string
	for _, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
			continue
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(r, &obj) == nil && obj.Message != "" {
			out = append(out, obj.Message)
			continue
		}
		out = append(out, string(r))
	}
	return out
}

// extractJSON returns text as JSON when it is a JSON value, after trimming
// space and one surrounding ``` fence (agents like to add one).
func extractJSON(text string) (json.RawMessage, bool) {
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		body := strings.TrimSuffix(s[3:], "```")
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			lang := strings.TrimSpace(body[:i])
			if lang == "" || strings.EqualFold(lang, "json") {
				s = strings.TrimSpace(body[i+1:])
			}
		}
	}
	if s == "" || (s[0] != '{' && s[0] != '[') || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}
