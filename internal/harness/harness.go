// Package harness is the harness table: everything baton knows of each
// agent product it integrates with (Claude Code, Codex CLI, Factory Droid,
// pi) that more than one package needs. Its names, tools and variables;
// where its configuration lives and how it says baton's plugin is
// enabled; the hook events baton answers, the command line that reaches
// baton from a harness's configuration (command.go), and how each
// harness's hooks answer (answer.go).
//
// It imports the standard library and the domain package only, so the
// hook, the installer, the agent runner and every edge can read the table
// without linking the context store or anything else.
package harness

import (
	"cmp"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// Harness is what baton knows of one agent product. A new harness starts
// with an entry here; docs/architecture.md ("A new harness") lists the
// rest.
type Harness struct {
	// Name is how baton names it: --harness, baton install, BATON_HARNESS,
	// and --agent when it runs headless.
	Name baton.Harness
	// Product is its name for people.
	Product string
	// Install says how a person installs it ("" when there is no one
	// command to give).
	Install string
	// Agent says baton can run it headless (--agent Name; the command line
	// and output format are internal/agentrun's).
	Agent bool
	// Extension: the harness has no hook configuration, and baton installs
	// an extension of its own that runs `baton hook` and reads one JSON
	// object back from every event (pi).
	Extension bool
	// WriteTools are the tools with which its agent writes files: both the
	// installed PostToolUse matcher and the hook's own filter come from
	// this list, so they cannot disagree.
	WriteTools []string
	// ProjectDirEnv names the variable holding the session's project
	// directory ("" when the harness exports none: the payload's cwd is
	// used).
	ProjectDirEnv string
	// EnvFileEnv names the variable holding a file where session-start may
	// append "export K=V" lines for the agent's shell ("" when none).
	EnvFileEnv string
	// SessionEnv names the variable the harness sets in its agent's shell
	// commands to the session id its hooks give baton ("" when it sets
	// none: baton's session-start exports BATON_SESSION_ID through
	// EnvFileEnv instead). A loop started from that shell binds to it.
	SessionEnv string
	// BlockCap is how many consecutive Stop blocks the harness honours
	// before it ends the turn anyway (0: no known cap); BlockCapEnv is the
	// harness's own variable that overrides it ("" when none).
	BlockCap    int
	BlockCapEnv string
	// HidesStopMessage: the harness shows the user no Stop hook
	// systemMessage (nor records it), so a note the person must act on
	// (a paused loop) goes through the model instead: one more block
	// asking it to say the note and stop.
	HidesStopMessage bool
	// NoResume: a session cannot be counted on to be resumed later (Droid:
	// `droid exec -s` fails offline and on BYOK models with "Failed to
	// fetch session"), so a paused loop is resumed into a new session.
	NoResume bool
	// UsageBeside: what a session spent is not in its transcript but in
	// running totals the harness keeps in a file beside it (Droid's
	// <session>.settings.json).
	UsageBeside bool
	// ConfigDir is the directory, in a project and (unless UserDir says
	// otherwise) in the home directory, that holds the harness's settings.
	ConfigDir string
	// UserDir is the user's settings directory relative to the home
	// directory ("": ConfigDir), and UserDirEnv the variable that moves
	// it ("" when none).
	UserDir    string
	UserDirEnv string
	// Plugin is how the harness takes baton's plugin.
	Plugin Plugin
	// Encode renders r for event: the bytes for stdout, often none.
	Encode func(event Event, r Result) []byte
}

// Plugin says how a harness installs and enables baton's plugin (pi: its
// package) from the repository's plugin tree.
type Plugin struct {
	// Noun is what the harness calls it: "plugin", or "package" (pi).
	Noun string
	// Disable says how a person turns it off.
	Disable string
	// Enabled says how a settings file enables it, and UserFiles and
	// ProjectFiles name the settings files that can, in the user's
	// directory (UserPath) and in the project's ConfigDir.
	Enabled      Enablement
	UserFiles    []string
	ProjectFiles []string
	// Hooks is the plugin's hooks file the harness reads, relative to the
	// plugin's directory ("" for none: pi's extension runs the hooks).
	// Harnesses may share one: the first in Harnesses writes it.
	Hooks string
	// RootVar is the variable the harness expands, in a plugin hook's
	// command, to the plugin's directory.
	RootVar string
}

// Enablement is the way a harness's settings say a plugin is enabled.
type Enablement int

const (
	// EnabledPlugins: a JSON settings file's "enabledPlugins" object maps
	// "baton@<marketplace>" to true (Claude Code, Droid).
	EnabledPlugins Enablement = iota + 1
	// PluginTables: a TOML file's [plugins."baton@<marketplace>"] table,
	// enabled unless it says enabled = false (Codex's config.toml).
	PluginTables
	// Packages: a JSON settings file's "packages" list names baton's
	// package (pi).
	Packages
)

// Claude Code (https://code.claude.com/docs/en/hooks): snake_case
// payloads; SessionStart context as plain stdout (JSON additionalContext
// has been lost in several releases); Stop blocks with a top-level JSON
// decision; every other event prints nothing. Claude's MultiEdit is from
// older releases. Since v2.1.143 it ends a turn after 8 consecutive Stop
// blocks unless CLAUDE_CODE_STOP_HOOK_BLOCK_CAP says otherwise.
var Claude = &Harness{
	Name:          baton.HarnessClaude,
	Product:       "Claude Code",
	Install:       "npm install -g @anthropic-ai/claude-code",
	Agent:         true,
	WriteTools:    []string{"Write", "Edit", "MultiEdit", "NotebookEdit"},
	ProjectDirEnv: "CLAUDE_PROJECT_DIR",
	EnvFileEnv:    "CLAUDE_ENV_FILE",
	SessionEnv:    "CLAUDE_CODE_SESSION_ID",
	BlockCap:      8,
	BlockCapEnv:   "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP",
	ConfigDir:     ".claude",
	Plugin: Plugin{
		Noun: "plugin", Disable: "run `claude plugin disable baton@baton`",
		Enabled: EnabledPlugins, UserFiles: []string{"settings.json"}, ProjectFiles: []string{"settings.json", "settings.local.json"},
		Hooks: "hooks/hooks.json", RootVar: "CLAUDE_PLUGIN_ROOT",
	},
	Encode: encodeClaude,
}

// Codex CLI (https://developers.openai.com/codex/hooks, schemas in
// openai/codex:codex-rs/hooks/schema/generated): snake_case payloads with
// nullable transcript_path and last_assistant_message; SessionStart
// context as plain stdout (codex-cli 0.154.0 rejected additionalContext);
// Stop answers JSON or nothing, never plain text, and a block's reason
// becomes the next user prompt. Every edit is reported as apply_patch. It
// exports no project directory and documents no block cap, and no env
// file: its shell commands get CODEX_THREAD_ID, the hooks' session id.
// Its plugin manifest names its own hooks file, where ${PLUGIN_ROOT} is
// the plugin.
var Codex = &Harness{
	Name:       baton.HarnessCodex,
	Product:    "Codex CLI",
	Install:    "npm install -g @openai/codex",
	Agent:      true,
	WriteTools: []string{"apply_patch"},
	SessionEnv: "CODEX_THREAD_ID",
	// 0.171.0's exec prints a Stop's systemMessage nowhere: not in
	// --json, not on stderr, not in the rollout.
	HidesStopMessage: true,
	ConfigDir:        ".codex",
	UserDirEnv:       "CODEX_HOME",
	Plugin: Plugin{
		Noun: "plugin", Disable: "run `codex plugin remove baton@baton`",
		Enabled: PluginTables, UserFiles: []string{"config.toml"}, ProjectFiles: []string{"config.toml"},
		Hooks: "hooks/codex.json", RootVar: "PLUGIN_ROOT",
	},
	Encode: encodePlain,
}

// Factory Droid (https://docs.factory.ai/reference/hooks-reference):
// Claude-style payloads, documented in snake_case but seen in camelCase
// too (both are read); Stop carries no last_assistant_message, so the
// transcript is read; exit-0 stdout is shown to the user on events other
// than SessionStart, so those print nothing. It offers ApplyPatch with
// OpenAI models, gives SessionStart CLAUDE_ENV_FILE and applies its export
// lines to the agent's shell, and documents no block cap. It reads a
// plugin's Claude Code hooks file (ignoring a manifest's hooks path) and
// is the only one to expand ${DROID_PLUGIN_ROOT} there.
var Droid = &Harness{
	Name:          baton.HarnessDroid,
	Product:       "Factory Droid",
	Agent:         true,
	WriteTools:    []string{"Create", "Edit", "ApplyPatch", "MultiEdit"},
	ProjectDirEnv: "FACTORY_PROJECT_DIR",
	EnvFileEnv:    "CLAUDE_ENV_FILE",
	UsageBeside:   true,
	NoResume:      true,
	// 0.225.2's exec prints a Stop's systemMessage in no output format.
	HidesStopMessage: true,
	ConfigDir:        ".factory",
	Plugin: Plugin{
		Noun: "plugin", Disable: "run `droid plugin uninstall baton@baton`",
		Enabled: EnabledPlugins, UserFiles: []string{"settings.json"}, ProjectFiles: []string{"settings.json", "settings.local.json"},
		Hooks: "hooks/hooks.json", RootVar: "DROID_PLUGIN_ROOT",
	},
	Encode: encodePlain,
}

// Pi has no hook configuration: baton's extension (integrations/pi) runs
// `baton hook <event> --harness pi` with a Claude-shaped payload and
// always reads one JSON object back (encodePi). The extension re-prompts
// with followUp messages, so there is no block cap. Its bash tool gets
// PI_SESSION_ID. A project's .pi/ holds its settings; the user's are in
// ~/.pi/agent.
var Pi = &Harness{
	Name:       baton.HarnessPi,
	Product:    "pi",
	Install:    "npm install -g @earendil-works/pi-coding-agent",
	Agent:      true,
	Extension:  true,
	WriteTools: []string{"write", "edit"},
	SessionEnv: "PI_SESSION_ID",
	ConfigDir:  ".pi",
	UserDir:    filepath.Join(".pi", "agent"),
	UserDirEnv: "PI_CODING_AGENT_DIR",
	Plugin: Plugin{
		Noun: "package", Disable: "remove the package (`pi remove <its source>`; `pi list` shows it)",
		Enabled: Packages, UserFiles: []string{"settings.json"}, ProjectFiles: []string{"settings.json"},
	},
	Encode: encodePi,
}

// Harnesses lists every harness baton integrates with, in the order
// people see them.
var Harnesses = []*Harness{Claude, Codex, Droid, Pi}

// Lookup returns the harness named name, or an Invalid error naming the
// ones there are.
func Lookup(name string) (*Harness, error) {
	for _, h := range Harnesses {
		if string(h.Name) == name {
			return h, nil
		}
	}
	return nil, baton.Errorf(baton.Invalid, "unknown harness %q: want %s", name, OrList(Names()))
}

// Names lists the harnesses' names.
func Names() []string {
	out := make([]string, len(Harnesses))
	for i, h := range Harnesses {
		out[i] = string(h.Name)
	}
	return out
}

// AgentNames lists the harnesses baton can run headless (--agent).
func AgentNames() []string {
	var out []string
	for _, h := range Harnesses {
		if h.Agent {
			out = append(out, string(h.Name))
		}
	}
	return out
}

// SessionVars lists the variables through which a harness points a hook
// or a command at its session (its project directory, env file and
// session id), once each: a hook run for another purpose (doctor's
// probes) must not inherit them.
func SessionVars() []string {
	out := []string{SessionIDEnv}
	for _, h := range Harnesses {
		for _, v := range []string{h.ProjectDirEnv, h.EnvFileEnv, h.SessionEnv} {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// SessionIDEnv and HarnessEnv are what baton's session-start hook exports
// to the agent's shell through a harness's env file: the session id its
// hooks get, and the harness's name.
const (
	SessionIDEnv = "BATON_SESSION_ID"
	HarnessEnv   = "BATON_HARNESS"
)

// EnvSession is a session a command's environment names.
type EnvSession struct {
	ID string
	// Harness is the harness it belongs to (nil when BATON_HARNESS names
	// none), and Var the variable that named it.
	Harness *Harness
	Var     string
}

// EnvSessions lists, once each, the sessions getenv names: BATON_SESSION_ID
// (with BATON_HARNESS), then each harness's SessionEnv in table order. A
// shell of one harness's session may have inherited another's (a Codex
// session started from Claude Code's shell has both), so there can be
// several: loop.CurrentSession picks the one the command runs in.
func EnvSessions(getenv func(string) string) []EnvSession {
	var out []EnvSession
	add := func(id string, h *Harness, v string) {
		id = strings.TrimSpace(id)
		if id == "" {
			return
		}
		for i := range out {
			if out[i].ID == id {
				if out[i].Harness == nil {
					out[i].Harness = h
				}
				return
			}
		}
		out = append(out, EnvSession{ID: id, Harness: h, Var: v})
	}
	h, _ := Lookup(getenv(HarnessEnv))
	add(getenv(SessionIDEnv), h, SessionIDEnv)
	for _, h := range Harnesses {
		if h.SessionEnv != "" {
			add(getenv(h.SessionEnv), h, h.SessionEnv)
		}
	}
	return out
}

// OrList joins names for a sentence: "a", "a or b", "a, b or c".
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// IsWriteTool reports whether a tool of that name changes files.
func (h *Harness) IsWriteTool(name string) bool { return slices.Contains(h.WriteTools, name) }

// UserPath is the user's settings directory of the harness under home:
// the directory UserDirEnv names when getenv gives it, else UserDir (or
// ConfigDir) under home.
func (h *Harness) UserPath(home string, getenv func(string) string) string {
	if h.UserDirEnv != "" && getenv != nil {
		if d := getenv(h.UserDirEnv); d != "" {
			return d
		}
	}
	return filepath.Join(home, cmp.Or(h.UserDir, h.ConfigDir))
}

// StopBlockCap is how many consecutive Stop blocks the harness honours:
// BATON_STOP_HOOK_BLOCK_CAP wins, then the harness's own variable (which
// the hook inherits from the session's environment), else BlockCap.
func (h *Harness) StopBlockCap(getenv func(string) string) int {
	for _, k := range []string{"BATON_STOP_HOOK_BLOCK_CAP", h.BlockCapEnv} {
		if k == "" || getenv == nil {
			continue
		}
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return n
			}
		}
	}
	return h.BlockCap
}
