package agentrun

import (
	"bytes"
	"encoding/json"
)

// objectScanner finds top-level JSON objects in line-oriented output that
// may also hold plain text: compact objects one per line (JSONL) and
// pretty-printed objects spanning lines (droid -o json). An object must
// start a line (after blanks); everything else is junk. It never holds
// more than max bytes.
type objectScanner struct {
	max      int
	buf      []byte // the open multi-line object so far
	open     bool
	depth    int
	inString bool
	escaped  bool
	onObject func(obj []byte) // a syntactically valid object; obj is only valid during the call
	onJunk   func()           // a line (or part of one) that is not an object
}

func newObjectScanner(max int, onObject func([]byte), onJunk func()) *objectScanner {
	return &objectScanner{max: max, onObject: onObject, onJunk: onJunk}
}

// feed takes one line without its end of line.
func (s *objectScanner) feed(line []byte) {
	if s.open {
		// A complete object alone on a line at column 0 cannot be the inside
		// of a pretty-printed object (its lines are indented): the open
		// object was broken, so drop it and take this one.
		if len(line) > 0 && line[0] == '{' && json.Valid(line) {
			s.abandon()
			s.onObject(line)
			return
		}
		s.scan(line)
		return
	}
	t := bytes.TrimLeft(line, " \t")
	if len(t) == 0 {
		return
	}
	if t[0] != '{' {
		s.onJunk()
		return
	}
	s.open, s.depth, s.inString, s.escaped = true, 0, false, false
	s.buf = s.buf[:0]
	s.scan(t)
}

// scan continues the open object with line.
func (s *objectScanner) scan(line []byte) {
	for i, c := range line {
		switch {
		case s.escaped:
			s.escaped = false
		case s.inString:
			switch c {
			case '\\':
				s.escaped = true
			case '"':
				s.inString = false
			}
		case c == '"':
			s.inString = true
		case c == '{' || c == '[':
			s.depth++
		case c == '}' || c == ']':
			s.depth--
			if s.depth == 0 {
				s.close(line[:i+1], line[i+1:])
				return
			}
		}
	}
	if s.inString {
		// JSON strings cannot hold a raw newline: not an object after all.
		s.abandon()
		return
	}
	if len(s.buf)+len(line)+1 > s.max {
		s.abandon()
		return
	}
	s.buf = append(s.buf, line...)
	s.buf = append(s.buf, '\n')
}

// close ends the open object with last; rest is what followed it on the
// line.
func (s *objectScanner) close(last, rest []byte) {
	obj := last
	if len(s.buf) > 0 {
		if len(s.buf)+len(last) > s.max {
			s.abandon()
			return
		}
		s.buf = append(s.buf, last...)
		obj = s.buf
	}
	s.open = false
	// Text after the closing brace means the line was not an object after
	// all ("{} is empty"): one junk line, not an object and junk.
	if len(bytes.TrimSpace(rest)) == 0 && json.Valid(obj) {
		s.onObject(obj)
	} else {
		s.onJunk()
	}
	s.buf = s.buf[:0]
}

func (s *objectScanner) abandon() {
	s.open = false
	s.buf = s.buf[:0]
	s.onJunk()
}

// end reports an object left open at the end of the output as junk.
func (s *objectScanner) end() {
	if s.open {
		s.abandon()
	}
}
