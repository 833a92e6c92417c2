package install

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/harness"
)

// hookEvent is one hook baton installs: the harness's event name, the
// matcher ("" for none) and baton's event.
type hookEvent struct {
	Event   string
	Matcher string
	Baton   harness.Event
}

// hookTimeout is the timeout (seconds) written on baton's hooks: they
// answer in milliseconds, and a wedged lock must not hold a session for
// the harness's default 60-600 s.
const hookTimeout = 30

// stopHookTimeout is the Stop hook's timeout (seconds): the stop may run a
// loop's verify commands, for up to baton.MaxVerifyTimeout, before it
// answers. Claude Code, Codex and Droid all read "timeout" in seconds.
const stopHookTimeout = int((baton.MaxVerifyTimeout + time.Minute) / time.Second)

// timeoutFor is the timeout (seconds) of baton's hook for event.
func timeoutFor(event harness.Event) int {
	if event == harness.Stop {
		return stopHookTimeout
	}
	return hookTimeout
}

// claudeStyleHooks are baton's four hooks in a harness with Claude Code's
// event names; session-start runs for sessionMatcher ("" for every
// source), post-tool-use for the harness's write tools.
func claudeStyleHooks(h *harness.Harness, sessionMatcher string) []hookEvent {
	return []hookEvent{
		{Event: "SessionStart", Matcher: sessionMatcher, Baton: harness.SessionStart},
		{Event: "PostToolUse", Matcher: strings.Join(h.WriteTools, "|"), Baton: harness.PostToolUse},
		{Event: "PreCompact", Baton: harness.PreCompact},
		{Event: "Stop", Baton: harness.Stop},
	}
}

// planHooks merges (or removes) baton's hooks in a hooks file. Claude
// and Codex wrap the events: {"hooks": {"Event": [{"matcher": "...",
// "hooks": [{"type": "command", "command": "..."}]}]}}; Droid's hooks.json
// is the event map itself (flat), and a wrapper an earlier baton wrote
// there is unwrapped. Everything else is kept in order.
func planHooks(path, exe string, h baton.Harness, events []hookEvent, install, flat bool) (Change, error) {
	before, err := readFile(path)
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: path, Kind: "hooks", Before: before}
	root, err := parseObject(before)
	if err != nil {
		return c, baton.Errorf(baton.Conflict, "no hooks were installed or removed: %s is not JSON baton can edit (%v); fix it by hand, then run again", path, err)
	}
	current := encode(root)
	migrated := flat && unwrapHooks(root)
	removed := removeBatonHooks(hooksOf(root, flat, false)) || migrated
	if install {
		addBatonHooks(hooksOf(root, flat, true), exe, h, events)
	}
	if !flat {
		dropEmptyHooks(root, removed)
	}
	after := encode(root)
	switch {
	case after == nil || string(after) == string(current):
		c.Action = Unchanged
		c.After = before
		return c, nil
	case !install && removed && len(root.keys) == 0:
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

// hooksOf returns the event map of a hooks file: root itself when flat,
// else its "hooks" object (made when create is set; nil when missing).
func hooksOf(root *object, flat, create bool) *object {
	if flat {
		return root
	}
	hooks, ok := root.vals["hooks"].(*object)
	if !ok && create {
		hooks = newObject()
		root.set("hooks", hooks)
	}
	return hooks
}

// unwrapHooks moves the events of a {"hooks": {...}} wrapper to the top
// of a flat hooks file (Droid ignores the wrapper), after any events
// already there. It reports whether there was a wrapper.
func unwrapHooks(root *object) bool {
	wrapped, ok := root.vals["hooks"].(*object)
	if !ok {
		return false
	}
	root.del("hooks")
	for _, ev := range wrapped.keys {
		groups, _ := wrapped.vals[ev].([]any)
		have, _ := root.vals[ev].([]any)
		root.set(ev, append(have, groups...))
	}
	return true
}

// dropEmptyHooks removes a wrapped hooks object that baton's removal left
// empty.
func dropEmptyHooks(root *object, removed bool) {
	if h, ok := root.vals["hooks"].(*object); ok && removed && len(h.keys) == 0 {
		root.del("hooks")
	}
}

// removeBatonHooks drops baton's handlers from every event of hooks, then
// groups and events left empty by that. It reports whether it removed any.
func removeBatonHooks(hooks *object) bool {
	if hooks == nil {
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
				if _, ok := batonHandler(h); ok {
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
	return removed
}

// batonHandler reports whether a hook handler runs baton's hook, and the
// program it runs.
func batonHandler(h any) (exe string, ok bool) {
	o, ok := h.(*object)
	if !ok {
		return "", false
	}
	cmd, _ := o.vals["command"].(string)
	var args []string
	if raw, ok := o.vals["args"].([]any); ok {
		for _, a := range raw {
			s, _ := a.(string)
			args = append(args, s)
		}
	}
	return harness.ParseCommand(cmd, args)
}

// addBatonHooks appends one matcher group per baton hook to hooks, each
// running exe ("" for baton from PATH).
func addBatonHooks(hooks *object, exe string, h baton.Harness, events []hookEvent) {
	prog := exe
	if exe != "" {
		prog = harness.Program(exe) // the companion baton-hook, when it sits beside baton
	}
	for _, e := range events {
		handler := newObject()
		handler.set("type", "command")
		handler.set("command", harness.Command(prog, e.Baton, h))
		handler.set("timeout", json.Number(strconv.Itoa(timeoutFor(e.Baton))))
		group := newObject()
		if e.Matcher != "" {
			group.set("matcher", e.Matcher)
		}
		group.set("hooks", []any{handler})
		groups, _ := hooks.vals[e.Event].([]any)
		hooks.set(e.Event, append(groups, group))
	}
}

// InstalledHook is a baton hook found in a hooks file.
type InstalledHook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command"`
	exe     string // the program it runs
}

// FindBatonHooks lists baton's hooks in a hooks file (nil when the file
// is missing or holds none); flat is Droid's shape (see planHooks). Hooks
// in a shape the harness does not read are not listed: they do not run.
func FindBatonHooks(path string, flat bool) ([]InstalledHook, error) {
	b, err := readFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	root, err := parseObject(b)
	if err != nil {
		return nil, err
	}
	hooks := hooksOf(root, flat, false)
	if hooks == nil {
		return nil, nil
	}
	var out []InstalledHook
	for _, ev := range hooks.keys {
		groups, ok := hooks.vals[ev].([]any)
		if !ok {
			continue
		}
		for _, g := range groups {
			gobj, ok := g.(*object)
			if !ok {
				continue
			}
			matcher, _ := gobj.vals["matcher"].(string)
			handlers, _ := gobj.vals["hooks"].([]any)
			for _, h := range handlers {
				if exe, ok := batonHandler(h); ok {
					cmd, _ := h.(*object).vals["command"].(string)
					out = append(out, InstalledHook{Event: ev, Matcher: matcher, Command: strings.TrimSpace(cmd), exe: exe})
				}
			}
		}
	}
	return out, nil
}
