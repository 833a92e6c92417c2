package hook

import (
	"slices"
	"strings"

	"github.com/baton-agent/baton"
)

// Command is the command line a harness's configuration runs for event.
// It is the one place that decides how a configured hook reaches baton:
//
//   - exe set: that binary, `<exe> hook <event> --harness <name>`, for
//     files that stay on this machine (user settings, Claude Code's
//     settings.local.json);
//   - exe "": baton from PATH through Shim, `sh -c '<Shim>' baton-hook
//     <event> <name>`, for files meant to be committed, which must not
//     hold this machine's paths.
func Command(exe string, event Event, h baton.Harness) string {
	if exe == "" {
		return "sh -c " + ShellQuote(Shim) + " " + shimName + " " + string(event) + " " + string(h)
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
// whatever the program is called (baton, baton-v2, a versioned path), so
// a reinstall from a new binary replaces the old hooks and uninstall finds
// them all; or it is an inline Shim (any version of it), which runs
// "baton" from PATH.
func ParseCommand(command string, args []string) (exe string, ok bool) {
	exe, _, ok = parseCommand(command, args)
	return exe, ok
}

// CommandEvent returns the baton event a hook command runs.
func CommandEvent(command string, args []string) (Event, bool) {
	_, ev, ok := parseCommand(command, args)
	return ev, ok
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
	if len(rest) < 3 || rest[0] != "hook" || !slices.Contains(Events, Event(rest[1])) {
		return "", "", false
	}
	for i, a := range rest[2:] {
		if a == "--harness" && i+3 < len(rest) || strings.HasPrefix(a, "--harness=") {
			return w[0], Event(rest[1]), true
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
