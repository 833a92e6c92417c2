package agentrun

import (
	"errors"
	"strings"
)

// SplitArgs splits s into arguments the way a POSIX shell splits words,
// without running one: blanks separate arguments, single quotes keep
// everything literally, double quotes keep everything but \" \\ \$ \` and
// an escaped newline, and a backslash outside quotes escapes the next
// character. Nothing is expanded: $HOME, ~ and * stay as written.
func SplitArgs(s string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		i       int
		quoting byte // 0, '\'' or '"'
	)
	for i < len(s) {
		c := s[i]
		switch quoting {
		case '\'':
			if c == '\'' {
				quoting = 0
			} else {
				cur.WriteByte(c)
			}
			i++
		case '"':
			switch {
			case c == '"':
				quoting = 0
				i++
			case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
				if s[i+1] != '\n' { // backslash-newline is a line continuation
					cur.WriteByte(s[i+1])
				}
				i += 2
			default:
				cur.WriteByte(c)
				i++
			}
		default:
			switch c {
			case ' ', '\t', '\n', '\r':
				if inWord {
					args = append(args, cur.String())
					cur.Reset()
					inWord = false
				}
				i++
			case '\'', '"':
				quoting = c
				inWord = true
				i++
			case '\\':
				if i+1 >= len(s) {
					return nil, errors.New("trailing backslash")
				}
				if s[i+1] != '\n' {
					cur.WriteByte(s[i+1])
					inWord = true
				}
				i += 2
			default:
				cur.WriteByte(c)
				inWord = true
				i++
			}
		}
	}
	if quoting != 0 {
		return nil, errors.New("unterminated " + string(quoting) + " quote")
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// QuoteArgs is the inverse of SplitArgs: it joins args so that SplitArgs
// returns them unchanged. Use it to build a "command:" agent from a path.
func QuoteArgs(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, needsQuote) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String()
}

func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:=,+@%", r)
}
