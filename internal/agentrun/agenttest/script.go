package agenttest

import (
	"encoding/json"
	"time"
)

// ScriptEnv names the environment variable that points the fake agent at
// its script file.
const ScriptEnv = "BATON_FAKEAGENT_SCRIPT"

// Script is what the fake agent does: one Turn per invocation, in order.
// The fake keeps its position in a state file next to the script, so
// consecutive runs of a test (attempt 1, attempt 2, ...) get consecutive
// turns.
type Script struct {
	Turns []Turn `json:"turns"`
	// RepeatLast makes the fake repeat the last turn once the others are
	// used up. Without it an extra invocation fails with exit status 3 and
	// a message on stderr, so a test notices unexpected runs.
	RepeatLast bool `json:"repeat_last,omitempty"`
}

// Turn is one scripted invocation. The fake acts in this order: writes
// stderr, applies Files, runs Commands (each shown as the CLI's tool call),
// prints Say messages and raw Events, sleeps, then prints the final
// message and the result, and exits with ExitCode.
type Turn struct {
	// Files are written, appended or deleted in the agent's working
	// directory (relative paths only).
	Files []File `json:"files,omitempty"`
	// Commands run in the working directory without a shell.
	Commands []Command `json:"commands,omitempty"`
	// Say are assistant messages before the final one (a plain command
	// agent prints them on stderr, as progress, keeping stdout for the
	// final message).
	Say []string `json:"say,omitempty"`
	// Events are stdout lines printed verbatim before the final message:
	// unknown event types, junk, huge lines.
	Events []string `json:"events,omitempty"`
	// Final is the final message: a string is sent as text, anything else
	// is marshaled and sent as JSON (and as claude's structured_output when
	// the run has --json-schema).
	Final any `json:"final,omitempty"`
	// Stderr is written to stderr first.
	Stderr string `json:"stderr,omitempty"`
	// Sleep waits before the final message, for timeout tests. SIGINT ends
	// the wait: claude then prints an error result, like the real CLI, and
	// every agent exits with status 130, unless IgnoreInterrupt is set.
	Sleep           time.Duration `json:"sleep,omitempty"`
	IgnoreInterrupt bool          `json:"ignore_interrupt,omitempty"`
	// NoResult leaves out the final message and the result line (claude
	// result, codex agent_message and turn.completed, droid's object).
	NoResult bool `json:"no_result,omitempty"`
	// IsError makes the agent report failure: claude an error result
	// (Subtype, default error_during_execution, with Errors), codex
	// turn.failed, droid is_error. The exit status becomes 1 unless
	// ExitCode says otherwise.
	IsError bool     `json:"is_error,omitempty"`
	Subtype string   `json:"subtype,omitempty"`
	Errors  []string `json:"errors,omitempty"`
	// ExitCode is the exit status.
	ExitCode int `json:"exit_code,omitempty"`

	// Usage to report. InputTokens are uncached input tokens, as claude
	// reports them; codex reports InputTokens+CacheReadTokens as its
	// input_tokens. droid reports usage with -o stream-json, none with -o json.
	CostUSD         float64 `json:"cost_usd,omitempty"`
	InputTokens     int64   `json:"input_tokens,omitempty"`
	OutputTokens    int64   `json:"output_tokens,omitempty"`
	CacheReadTokens int64   `json:"cache_read_tokens,omitempty"`
	NumTurns        int     `json:"num_turns,omitempty"`
	// Model and SessionID override the reported model (default: --model,
	// else "fake-model") and session id (default: derived from the turn).
	Model     string `json:"model,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// File is one file operation.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
	// Op is "write" (default), "append" or "delete".
	Op string `json:"op,omitempty"`
}

// Command is one program the fake runs, as its agent would with a tool.
type Command struct {
	Argv []string `json:"argv"`
	// AllowFail keeps going when the command fails. By default a failing
	// command stops the fake with exit status 3 and the command's output
	// on stderr, so a broken test script is loud.
	AllowFail bool `json:"allow_fail,omitempty"`
	// Background starts the command without waiting for it, like a dev
	// server. PIDFile (relative to the working directory) receives its
	// process id; InheritOutput gives it the fake's stdout and stderr.
	Background    bool   `json:"background,omitempty"`
	PIDFile       string `json:"pid_file,omitempty"`
	InheritOutput bool   `json:"inherit_output,omitempty"`
}

// Call records one invocation of the fake.
type Call struct {
	Index        int             `json:"index"` // turn index used, from 0
	Agent        string          `json:"agent"` // claude, codex, droid, pi or command
	Args         []string        `json:"args"`  // arguments after argv[0]
	Dir          string          `json:"dir"`   // working directory the fake acted in
	Prompt       string          `json:"prompt"`
	SystemPrompt string          `json:"system_prompt,omitempty"` // claude/droid --append-system-prompt
	Model        string          `json:"model,omitempty"`
	Schema       json.RawMessage `json:"schema,omitempty"` // the output schema it was given, compacted
}
