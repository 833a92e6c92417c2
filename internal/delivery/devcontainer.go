package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Where a repository keeps its dev container, in the order they are
// looked for.
var devcontainerPaths = []string{".devcontainer/devcontainer.json", ".devcontainer.json"}

// maxDevcontainer bounds the file: a description, not data.
const maxDevcontainer = 256 << 10

// devcontainerCommands are the lifecycle commands a set-up takes, in the
// order a dev container runs them when it is made.
var devcontainerCommands = []string{"onCreateCommand", "updateContentCommand", "postCreateCommand"}

// DevcontainerSetup reads the set-up commands of the dev container of the
// repository at top: its onCreateCommand, updateContentCommand and
// postCreateCommand, each a shell command, an argv (quoted for the shell
// here) or an object of named ones (run one after the other, by name).
// path is the file read, "" when the repository has none. The file is read
// beneath top, following no link, bounded.
func DevcontainerSetup(top string) (cmds []string, path string, err error) {
	for _, p := range devcontainerPaths {
		b, err := safefile.ReadBeneath(top, p, maxDevcontainer)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, safefile.ErrTooLarge):
			return nil, p, baton.Errorf(baton.Invalid, "%s is larger than %d KiB", p, maxDevcontainer>>10)
		case err != nil:
			return nil, p, baton.WrapError(baton.Invalid, err, "%s must be a regular file of the repository, not a link, a named pipe or a directory", p)
		}
		cmds, err := ParseDevcontainerSetup(b)
		if err != nil {
			return nil, p, baton.WrapError(baton.Invalid, err, "bad %s", p)
		}
		return cmds, p, nil
	}
	return nil, "", nil
}

// ParseDevcontainerSetup reads the set-up commands of a devcontainer.json
// (JSON with comments and trailing commas). Its other settings are not
// read.
func ParseDevcontainerSetup(b []byte) ([]string, error) {
	plain, err := stripJSONC(b)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(plain, &doc); err != nil {
		return nil, err
	}
	var cmds []string
	for _, name := range devcontainerCommands {
		raw, ok := doc[name]
		if !ok || string(raw) == "null" {
			continue
		}
		got, err := lifecycleCommand(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cmds = append(cmds, got...)
	}
	if err := CheckSetup(cmds); err != nil {
		return nil, err
	}
	return cmds, nil
}

// lifecycleCommand is one lifecycle command as shell commands: a string
// as it is, an argv quoted, an object's values by their names' order.
func lifecycleCommand(raw json.RawMessage) ([]string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		if len(argv) == 0 {
			return nil, nil
		}
		return []string{shellQuote(argv)}, nil
	}
	var named map[string]json.RawMessage
	if err := json.Unmarshal(raw, &named); err != nil {
		return nil, errors.New("want a command, an argv or an object of named commands")
	}
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		var s string
		var argv []string
		switch {
		case json.Unmarshal(named[n], &s) == nil:
			if strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		case json.Unmarshal(named[n], &argv) == nil:
			if len(argv) > 0 {
				out = append(out, shellQuote(argv))
			}
		default:
			return nil, fmt.Errorf("%q: want a command or an argv", baton.Truncate(n, 40, "…"))
		}
	}
	return out, nil
}

// shellQuote is argv as one shell command that runs exactly it.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// stripJSONC turns JSON with comments (// and /* */) and trailing commas
// into JSON: comments become spaces, a comma before a closing bracket is
// dropped. Strings are left as they are. An unterminated comment is an
// error.
func stripJSONC(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b))
	inString := false
	comma := -1 // where in out a comma waits to be kept or dropped
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(b) {
					i++
					out = append(out, b[i])
				}
			case '"':
				inString = false
			}
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			end := bytes.IndexByte(b[i:], '\n')
			if end < 0 {
				end = len(b) - i
			}
			i += end - 1
			out = append(out, ' ')
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return nil, errors.New("a /* comment is not closed")
			}
			i += 2 + end + 1
			out = append(out, ' ')
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
			continue
		case (c == '}' || c == ']') && comma >= 0:
			out[comma] = ' '
		}
		comma = -1
		if c == ',' {
			comma = len(out)
		}
		if c == '"' {
			inString = true
		}
		out = append(out, c)
	}
	return out, nil
}
