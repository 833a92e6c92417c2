package fsstore

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/baton-agent/baton"
)

// decodeRelevantFile decodes one relevant-files line. Lines as baton
// writes them (flat object, no escapes) take a fast path that allocates
// only the path; anything else goes through encoding/json, so the result
// is always what encoding/json would give.
func decodeRelevantFile(line []byte, e *logEntry) error {
	if fastRelevantFile(line, e) {
		return nil
	}
	*e = logEntry{}
	return json.Unmarshal(line, e)
}

// fastRelevantFile parses {"key":value,...} with string values free of
// backslashes and numeric confidence, count and weight. It reports false,
// leaving e in an unspecified state, for anything it does not handle.
func fastRelevantFile(b []byte, e *logEntry) bool {
	*e = logEntry{}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || bytes.IndexByte(b, '\\') >= 0 {
		return false
	}
	b = b[1 : len(b)-1]
	seen := 0
	for len(b) > 0 {
		key, rest, ok := fastString(b)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		b = rest[1:]
		var bit int
		switch string(key) {
		case "timestamp":
			bit = 1
			v, r, ok := fastString(b)
			if !ok {
				return false
			}
			// time.Time's own JSON decoding, for exactly its strictness.
			if err := e.Timestamp.UnmarshalJSON(b[:len(v)+2]); err != nil {
				return false
			}
			b = r
		case "file_path":
			bit = 2
			v, r, ok := fastString(b)
			if !ok {
				return false
			}
			e.FilePath, b = string(v), r
		case "source":
			bit = 4
			v, r, ok := fastString(b)
			if !ok {
				return false
			}
			switch string(v) {
			case string(baton.FromTool):
				e.Source = baton.FromTool
			case string(baton.FromUser):
				e.Source = baton.FromUser
			default:
				e.Source = baton.FileSource(v)
			}
			b = r
		case "packet_id":
			bit = 8
			v, r, ok := fastString(b)
			if !ok {
				return false
			}
			e.PacketID, b = string(v), r
		case "confidence", "weight":
			bit = 16
			if key[0] == 'w' {
				bit = 32
			}
			num, rest, ok := fastNumber(b)
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil {
				return false
			}
			if bit == 16 {
				e.Confidence = f
			} else {
				e.Weight = f
			}
			b = rest
		case "count":
			bit = 64
			num, rest, ok := fastNumber(b)
			if !ok {
				return false
			}
			n, err := strconv.Atoi(string(num)) // a fraction or exponent: encoding/json refuses it too
			if err != nil {
				return false
			}
			e.Count, b = n, rest
		case "first":
			bit = 128
			v, r, ok := fastString(b)
			if !ok {
				return false
			}
			if err := e.First.UnmarshalJSON(b[:len(v)+2]); err != nil {
				return false
			}
			b = r
		default:
			return false
		}
		if seen&bit != 0 {
			return false // duplicate key: let encoding/json decide
		}
		seen |= bit
		if len(b) == 0 {
			break
		}
		if b[0] != ',' || len(b) == 1 {
			return false
		}
		b = b[1:]
	}
	return true
}

// fastNumber reads a JSON number at the start of b, up to the next comma,
// and returns it and the rest.
func fastNumber(b []byte) (num, rest []byte, ok bool) {
	i := 0
	for i < len(b) && b[i] != ',' {
		i++
	}
	num = b[:i]
	if len(num) == 0 || !(num[0] == '-' || (num[0] >= '0' && num[0] <= '9')) || !json.Valid(num) {
		return nil, nil, false
	}
	return num, b[i:], true
}

// fastString reads a JSON string without escapes or control characters at
// the start of b and returns its content and the rest.
func fastString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = b[1 : 1+end]
	ascii := true
	for _, c := range s {
		if c < 0x20 {
			return nil, nil, false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(s) {
		return nil, nil, false // encoding/json would replace invalid bytes
	}
	return s, b[2+end:], true
}
