package install

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
)

// hookEvent is one hook baton installs: the harness's event name, the
// matcher ("" for none) and baton's event.
type hookEvent struct {
	Event   string
	Matcher string
	Baton   string
}

// hookTimeout is the timeout (seconds) written on baton's hooks: they
// answer in milliseconds, and a wedged lock must not hold a session for
// the harness's default 60-600 s.
const hookTimeout = 30

// HookCommand is the command line installed for a baton event.
func HookCommand(exe, batonEvent, harness string) string {
	return ShellQuote(exe) + " hook " + batonEvent + " --harness " + harness
}

// IsBatonHook reports whether a hook command runs `baton hook`: its
// program is a file named baton and its first argument is "hook". Old
// binary paths count too, so a reinstall from a new location replaces
// them.
func IsBatonHook(command string, args []string) bool {
	w := shellWords(command)
	if len(w) == 0 || filepath.Base(w[0]) != "baton" {
		return false
	}
	rest := append(w[1:], args...)
	return len(rest) > 0 && rest[0] == "hook"
}

// planHooks merges (or removes) baton's hooks in a Claude-style hooks
// file: {"hooks": {"Event": [{"matcher": "...", "hooks": [{"type":
// "command", "command": "..."}]}]}}. Everything else is kept in order.
func planHooks(path string, t Target, events []hookEvent, install bool) (Change, error) {
	before, err := readFile(path)
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: path, Kind: "hooks", Before: before}
	root, err := parseObject(before)
	if err != nil {
		c.Action, c.Note = Skip, "not valid JSON ("+err.Error()+"); fix it by hand first"
		return c, nil
	}
	current := encode(root)
	removed := removeBatonHooks(root)
	if install {
		addBatonHooks(root, t, events)
	}
	after := encode(root)
	switch {
	case after == nil || string(after) == string(current):
		c.Action = Unchanged
		c.After = before
		return c, nil
	case !install && removed && isEmptyHooks(root):
		c.Action = Remove
		c.Note = "only baton's hooks were in it"
		return c, nil
	case before == nil:
		c.Action = Create
	default:
		c.Action = Update
	}
	c.After = after
	return c, nil
}

// removeBatonHooks drops baton's handlers from every event, then groups
// and events left empty by that. It reports whether it removed any.
func removeBatonHooks(root *object) bool {
	hv, ok := root.get("hooks")
	hooks, isObj := hv.(*object)
	if !ok || !isObj {
		return false
	}
	removed := false
	for _, ev := range append([]string(nil), hooks.keys...) {
		groups, ok := hooks.vals[ev].([]any)
		if !ok {
			continue
		}
		var keptGroups []any
		for _, g := range groups {
			gobj, ok := g.(*object)
			if !ok {
				keptGroups = append(keptGroups, g)
				continue
			}
			handlers, ok := gobj.vals["hooks"].([]any)
			if !ok {
				keptGroups = append(keptGroups, g)
				continue
			}
			var kept []any
			for _, h := range handlers {
				if isBatonHandler(h) {
					removed = true
					continue
				}
				kept = append(kept, h)
			}
			if len(kept) == 0 && len(handlers) > 0 {
				continue // the group held only baton's handlers
			}
			if len(kept) != len(handlers) {
				gobj.set("hooks", kept)
			}
			keptGroups = append(keptGroups, g)
		}
		if len(keptGroups) == 0 && len(groups) > 0 {
			hooks.del(ev)
		} else if len(keptGroups) != len(groups) {
			hooks.set(ev, keptGroups)
		}
	}
	if removed && len(hooks.keys) == 0 {
		root.del("hooks")
	}
	return removed
}

func isBatonHandler(h any) bool {
	o, ok := h.(*object)
	if !ok {
		return false
	}
	cmd, _ := o.vals["command"].(string)
	var args []string
	if raw, ok := o.vals["args"].([]any); ok {
		for _, a := range raw {
			s, _ := a.(string)
			args = append(args, s)
		}
	}
	return IsBatonHook(cmd, args)
}

// addBatonHooks appends one matcher group per baton hook.
func addBatonHooks(root *object, t Target, events []hookEvent) {
	hooks, ok := root.vals["hooks"].(*object)
	if !ok {
		hooks = newObject()
		root.set("hooks", hooks)
	}
	for _, e := range events {
		handler := newObject()
		handler.set("type", "command")
		handler.set("command", HookCommand(t.Exe, e.Baton, string(t.Harness)))
		handler.set("timeout", json.Number(strconv.Itoa(hookTimeout)))
		group := newObject()
		if e.Matcher != "" {
			group.set("matcher", e.Matcher)
		}
		group.set("hooks", []any{handler})
		groups, _ := hooks.vals[e.Event].([]any)
		hooks.set(e.Event, append(groups, group))
	}
}

func isEmptyHooks(root *object) bool {
	if len(root.keys) == 0 {
		return true
	}
	if len(root.keys) == 1 && root.keys[0] == "hooks" {
		h, ok := root.vals["hooks"].(*object)
		return ok && len(h.keys) == 0
	}
	return false
}

// InstalledHook is a baton hook found in a hooks file.
type InstalledHook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command"`
}

// FindBatonHooks lists baton's hooks in a hooks file (nil when the file
// is missing or holds none).
func FindBatonHooks(path string) ([]InstalledHook, error) {
	b, err := readFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	root, err := parseObject(b)
	if err != nil {
		return nil, err
	}
	hooks, _ := root.vals["hooks"].(*object)
	if hooks == nil {
		return nil, nil
	}
	var out []InstalledHook
	for _, ev := range hooks.keys {
		groups, _ := hooks.vals[ev].([]any)
		for _, g := range groups {
			gobj, ok := g.(*object)
			if !ok {
				continue
			}
			matcher, _ := gobj.vals["matcher"].(string)
			handlers, _ := gobj.vals["hooks"].([]any)
			for _, h := range handlers {
				if isBatonHandler(h) {
					cmd, _ := h.(*object).vals["command"].(string)
					out = append(out, InstalledHook{Event: ev, Matcher: matcher, Command: strings.TrimSpace(cmd)})
				}
			}
		}
	}
	return out, nil
}
