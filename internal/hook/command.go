package hook

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/baton-agent/baton"
)

// HookBinary is the companion binary that answers hooks as `baton hook`
// does but links only the hook's code, so it starts faster.
const HookBinary = "baton-hook"

// Program is the program a harness should run for baton's hooks, given
// the baton binary exe: the companion HookBinary beside it when it is
// there and executable, else exe itself.
func Program(exe string) string {
	c := filepath.Join(filepath.Dir(exe), HookBinary)
	if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return c
	}
	return exe
}

// isHookBinary reports whether a program is the companion HookBinary,
// whatever directory it is in or version suffix it has.
func isHookBinary(exe string) bool { return strings.HasPrefix(filepath.Base(exe), HookBinary) }

// Command is the command line a harness's configuration runs for event:
// `<exe> hook <event> --harness <name>`, or `<exe> <event> --harness
// <name>` when exe is the companion HookBinary.
func Command(exe string, event Event, h baton.Harness) string {
	if isHookBinary(exe) {
		return ShellQuote(exe) + " " + string(event) + " --harness " + string(h)
	}
	return ShellQuote(exe) + " hook " + string(event) + " --harness " + string(h)
}

// ParseCommand reports whether a configured hook command (with exec-form
// args, if any) runs baton's hook, and the program it runs: its arguments
// are `hook <event> --harness <harness>` with one of baton's events,
// whatever the program is called (baton, baton-v2, a versioned path), or
// `<event> --harness <harness>` to the companion HookBinary, so a
// reinstall from a new binary replaces the old hooks and uninstall finds
// them all.
func ParseCommand(command string, args []string) (exe string, ok bool) {
	exe, _, ok = parseCommand(command, args)
	return exe, ok
}

// CommandEvent is the event a configured hook command of baton's
// answers; ok is false for any other command.
func CommandEvent(command string, args []string) (e Event, ok bool) {
	_, e, ok = parseCommand(command, args)
	return e, ok
}

func parseCommand(command string, args []string) (exe string, e Event, ok bool) {
	w := shellWords(command)
	if len(w) == 0 {
		return "", "", false
	}
	rest := append(w[1:], args...)
	if len(rest) > 0 && rest[0] == "hook" {
		rest = rest[1:]
	} else if !isHookBinary(w[0]) {
		return "", "", false
	}
	if len(rest) < 2 || !slices.Contains(Events, Event(rest[0])) {
		return "", "", false
	}
	for i, a := range rest[1:] {
		if a == "--harness" && i+2 < len(rest) || strings.HasPrefix(a, "--harness=") {
			return w[0], Event(rest[0]), true
		}
	}
	return "", "", false
}

// ShellQuote quotes s for a POSIX shell, leaving plain paths bare (Claude
// Code matches `allowed-tools: Bash(/path/baton *)` against the command
// text, so a bare path keeps that rule simple).
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWords splits a POSIX shell command line into words (quotes and
// backslashes; no expansion), enough to recognise baton's own hook
// commands.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
