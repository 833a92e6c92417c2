package harness

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

// Command is the command line a harness's configuration runs for event.
// It is the one place that decides how a configured hook reaches baton:
//
//   - exe the companion HookBinary: `<exe> <event> --harness <name>`;
//   - exe another binary: `<exe> hook <event> --harness <name>`, for
//     files that stay on this machine (user settings, Claude Code's
//     settings.local.json);
//   - exe "": baton from PATH through Shim, `sh -c '<Shim>' baton-hook
//     <event> <name>`, for files meant to be committed, which must not
//     hold this machine's paths (the shim prefers baton-hook too).
func Command(exe string, event Event, h baton.Harness) string {
	if exe == "" {
		return "sh -c " + ShellQuote(Shim) + " " + shimName + " " + string(event) + " " + string(h)
	}
	if isHookBinary(exe) {
		return ShellQuote(exe) + " " + string(event) + " --harness " + string(h)
	}
	return ShellQuote(exe) + " hook " + string(event) + " --harness " + string(h)
}

// shimName is $0 of an inline Shim.
const shimName = "baton-hook"

// Shim is a POSIX sh script that runs baton's hook from PATH and fails
// open: baton-hook (the faster companion binary `go install ./cmd/...`
// puts beside baton) when present, else `baton hook`, else it exits 0
// and, at the first session start without baton, says once (a marker
// under $XDG_STATE_HOME) how to install it, as session context the agent
// passes on. Its arguments are the event, the harness, and optionally
// Droid's plugin root: plugin hook files are shared by Claude Code and
// Droid, and only Droid expands ${DROID_PLUGIN_ROOT} there, so a
// non-empty third argument means Droid.
const Shim = `e=$1 h=$2; [ -n "$3" ] && h=droid; ` +
	`command -v baton-hook >/dev/null && exec baton-hook "$e" --harness "$h"; ` +
	`command -v baton >/dev/null && exec baton hook "$e" --harness "$h"; ` +
	`f=${XDG_STATE_HOME:-$HOME/.local/state}/baton/no-binary; ` +
	`if [ "$e" = session-start ] && [ ! -e "$f" ]; then mkdir -p "${f%/*}" 2>/dev/null; : >"$f" 2>/dev/null; ` +
	`echo "baton hooks are set up, but no baton binary is on PATH: tell the user to install baton (https://github.com/baton-agent/baton#install)."; fi; ` +
	`exit 0`

// ParseCommand reports whether a configured hook command (with exec-form
// args, if any) runs baton's hook, and the program it runs: its arguments
// are `hook <event> --harness <harness>` with one of baton's events,
// whatever the program is called (baton, baton-v2, a versioned path), or
// `<event> --harness <harness>` to the companion HookBinary, so a
// reinstall from a new binary replaces the old hooks and uninstall finds
// them all; or it is an inline Shim (any version of it), which runs
// "baton" from PATH.
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

func parseCommand(command string, args []string) (exe string, ev Event, ok bool) {
	w := append(shellWords(command), args...)
	if len(w) == 0 {
		return "", "", false
	}
	// sh -c '<shim>' baton-hook <event> <harness>
	if len(w) == 6 && w[0] == "sh" && w[1] == "-c" && strings.Contains(w[2], "baton") && w[3] == shimName && slices.Contains(Events, Event(w[4])) {
		return "baton", Event(w[4]), true
	}
	rest := w[1:]
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
