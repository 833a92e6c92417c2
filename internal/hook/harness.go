package hook

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// Harness is what baton knows of one agent product it integrates with:
// the facts its hook contract, the installer, doctor, completion, serve
// and the dashboard read, and the one function that truly differs between
// harnesses, how a hook's answer is written. Every harness sends the same
// Claude-shaped payload (Decode). A new harness starts with an entry here;
// docs/architecture.md ("A new harness") lists the rest.
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
	// BlockCap is how many consecutive Stop blocks the harness honours
	// before it ends the turn anyway (0: no known cap); BlockCapEnv is the
	// harness's own variable that overrides it ("" when none).
	BlockCap    int
	BlockCapEnv string
	// Encode renders r for event: the bytes for stdout, often none.
	Encode func(event Event, r Result) []byte
}

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
	BlockCap:      8,
	BlockCapEnv:   "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP",
	Encode:        encodeClaude,
}

// Codex CLI (https://developers.openai.com/codex/hooks, schemas in
// openai/codex:codex-rs/hooks/schema/generated): snake_case payloads with
// nullable transcript_path and last_assistant_message; SessionStart
// context as plain stdout (codex-cli 0.154.0 rejected additionalContext);
// Stop answers JSON or nothing, never plain text, and a block's reason
// becomes the next user prompt. Every edit is reported as apply_patch. It
// exports no project directory and documents no block cap.
var Codex = &Harness{
	Name:       baton.HarnessCodex,
	Product:    "Codex CLI",
	Install:    "npm install -g @openai/codex",
	Agent:      true,
	WriteTools: []string{"apply_patch"},
	Encode:     encodePlain,
}

// Factory Droid (https://docs.factory.ai/reference/hooks-reference):
// Claude-style payloads, documented in snake_case but seen in camelCase
// too (both are read); Stop carries no last_assistant_message, so the
// transcript is read; exit-0 stdout is shown to the user on events other
// than SessionStart, so those print nothing. It offers ApplyPatch with
// OpenAI models, gives SessionStart CLAUDE_ENV_FILE and applies its export
// lines to the agent's shell, and documents no block cap.
var Droid = &Harness{
	Name:          baton.HarnessDroid,
	Product:       "Factory Droid",
	Agent:         true,
	WriteTools:    []string{"Create", "Edit", "ApplyPatch", "MultiEdit"},
	ProjectDirEnv: "FACTORY_PROJECT_DIR",
	EnvFileEnv:    "CLAUDE_ENV_FILE",
	Encode:        encodePlain,
}

// Pi has no hook configuration: baton's extension (integrations/pi) runs
// `baton hook <event> --harness pi` with a Claude-shaped payload and
// always reads one JSON object back (encodePi). The extension re-prompts
// with followUp messages, so there is no block cap.
var Pi = &Harness{
	Name:       baton.HarnessPi,
	Product:    "pi",
	Install:    "npm install -g @mariozechner/pi-coding-agent",
	Extension:  true,
	WriteTools: []string{"write", "edit"},
	Encode:     encodePi,
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

// OrList joins names for a sentence: "a", "a or b", "a, b or c".
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// IsWriteTool reports whether a tool of that name changes files.
func (h *Harness) IsWriteTool(name string) bool { return slices.Contains(h.WriteTools, name) }

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

// Decode parses a hook payload. It is tolerant: unknown fields are
// ignored and wrongly typed fields read as absent; only input that is not
// a JSON object is an error.
func Decode(data []byte) (*Payload, error) {
	f, err := decodeFields(data)
	if err != nil {
		return nil, err
	}
	return commonPayload(f), nil
}

// stopOutput is the Stop answer Claude Code, Codex and Droid share.
type stopOutput struct {
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
}

// encodePlain renders r the way Claude Code, Codex and Droid read it:
// session-start context as plain text (the robust path on all three), a
// Stop decision as one JSON object (or nothing to allow), and nothing for
// other events (Droid would show it to the user).
func encodePlain(e Event, r Result) []byte {
	switch e {
	case SessionStart:
		if r.Context == "" {
			return nil
		}
		s := r.Context
		if s[len(s)-1] != '\n' {
			s += "\n"
		}
		return []byte(s)
	case Stop:
		o := stopOutput{SystemMessage: r.SystemMessage}
		if r.Block {
			o.Decision, o.Reason = "block", r.Reason
			if o.Reason == "" {
				o.Reason = "continue" // a block needs a non-blank reason
			}
		}
		if o == (stopOutput{}) {
			return nil
		}
		return encodeJSON(o)
	}
	return nil
}

// ClaudeStopPointer is the reason of Claude Code's blocking Stop: the
// loop prompt itself arrives once, as the hook's additional context.
const ClaudeStopPointer = "Not done: baton's loop continues with the prompt in this hook's additional context."

// encodeClaude is encodePlain, except for a blocking Stop: Claude Code
// repeats a Stop's reason (as the "Stop hook feedback" turn, and from
// 2.1.330 again as a "Stop hook blocking error" system message), so the
// loop prompt goes once as the hook's additional context and the reason
// only points at it. Measured with the real Claude Code against a
// scripted model (TestRealClaudeCodeSession): 2.1.330 sent a reason twice
// and the additional context once; 2.1.197 sent each once.
func encodeClaude(e Event, r Result) []byte {
	if e != Stop || !r.Block || r.Reason == "" {
		return encodePlain(e, r)
	}
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	return encodeJSON(struct {
		Decision      string   `json:"decision"`
		Reason        string   `json:"reason"`
		SystemMessage string   `json:"systemMessage,omitempty"`
		Specific      specific `json:"hookSpecificOutput"`
	}{"block", ClaudeStopPointer, r.SystemMessage, specific{"Stop", r.Reason}})
}

// piOutput is the pi extension's answer to every event:
//
//	{"schema_version":1,"context":"…"}                                        session-start
//	{"schema_version":1,"decision":"block","reason":"…","system_message":"…"}  stop: continue with reason
//	{"schema_version":1,"system_message":"…"}                                stop: allowed, with a note
//	{"schema_version":1}                                                      nothing to do
type piOutput struct {
	SchemaVersion int    `json:"schema_version"`
	Context       string `json:"context,omitempty"`
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"system_message,omitempty"`
}

func encodePi(_ Event, r Result) []byte {
	o := piOutput{SchemaVersion: 1, Context: r.Context, SystemMessage: r.SystemMessage}
	if r.Block {
		o.Decision, o.Reason = "block", r.Reason
	}
	return encodeJSON(o)
}

// encodeJSON is v as one line of JSON with <, > and & kept readable
// (<promise> in a loop prompt).
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}
