package delivery

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/baton-agent/baton"
)

// Verdict is a parsed review verdict.
type Verdict struct {
	Verdict  baton.Verdict `json:"verdict"`
	Summary  string        `json:"summary"`
	Feedback string        `json:"feedback"`
}

// Limits of the search for a trailing JSON object, so a huge or hostile
// final message costs bounded work.
const (
	verdictWindow   = 64 << 10
	verdictAttempts = 512
)

// ParseVerdict reads a review verdict. structured, when set, is the
// agent CLI's structured output and wins; otherwise the final message must
// end with a JSON object (optionally in a ``` fence). A missing or
// malformed verdict is an Invalid error that says what was expected.
func ParseVerdict(final string, structured []byte) (Verdict, error) {
	if len(bytes.TrimSpace(structured)) > 0 {
		if v, err := decodeVerdict(structured); err == nil {
			return v, nil
		}
	}
	obj, ok := trailingObject(final)
	if !ok {
		return Verdict{}, baton.Errorf(baton.Invalid, `the review's final message does not end with a JSON verdict object {"verdict": "pass"|"not_pass", "summary": "...", "feedback": "..."}`)
	}
	return decodeVerdict(obj)
}

func decodeVerdict(b []byte) (Verdict, error) {
	var raw struct {
		Verdict  *string `json:"verdict"`
		Summary  *string `json:"summary"`
		Feedback *string `json:"feedback"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Verdict{}, baton.WrapError(baton.Invalid, err, "the review verdict is not a JSON object of strings")
	}
	if raw.Verdict == nil {
		return Verdict{}, baton.Errorf(baton.Invalid, `the review verdict has no "verdict" field: want "pass" or "not_pass"`)
	}
	v := Verdict{Verdict: baton.Verdict(strings.ToLower(strings.TrimSpace(*raw.Verdict)))}
	if v.Verdict != baton.VerdictPass && v.Verdict != baton.VerdictNotPass {
		return Verdict{}, baton.Errorf(baton.Invalid, "the review verdict is %q: want \"pass\" or \"not_pass\"", baton.Truncate(*raw.Verdict, 40, "…"))
	}
	if raw.Summary != nil {
		v.Summary = strings.TrimSpace(*raw.Summary)
	}
	if raw.Feedback != nil {
		v.Feedback = strings.TrimSpace(*raw.Feedback)
	}
	return v, nil
}

// trailingObject returns the JSON object that s ends with, ignoring
// trailing blanks and a closing code fence.
func trailingObject(s string) ([]byte, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	if !strings.HasSuffix(s, "}") {
		return nil, false
	}
	if len(s) > verdictWindow {
		s = s[len(s)-verdictWindow:]
	}
	end := len(s)
	for tries := 0; tries < verdictAttempts; tries++ {
		i := strings.LastIndexByte(s[:end], '{')
		if i < 0 {
			return nil, false
		}
		cand := []byte(s[i:])
		var m map[string]json.RawMessage
		if json.Unmarshal(cand, &m) == nil {
			return cand, true
		}
		end = i
	}
	return nil, false
}
