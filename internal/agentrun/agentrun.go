package agentrun

import (
	"encoding/json"
	"io"
	"time"

	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Defaults used when the matching Spec field is zero.
const (
	// DefaultKillGrace is how long an interrupted agent gets between SIGINT
	// and SIGKILL. Claude needs a moment to write its result line.
	DefaultKillGrace = 5 * time.Second
	// DefaultMaxLogBytes caps each raw log stream.
	DefaultMaxLogBytes int64 = 10 << 20
	// DefaultClaudeAllowedTools is passed to claude --allowedTools unless
	// ExtraArgs sets --allowedTools itself. Headless claude denies any tool
	// that is not pre-approved, and a coding agent needs to run commands.
	// These are the tools Claude Code 2.1.332 offers a coding session
	// (Agent was Task; TodoWrite is gone, NotebookEdit is deferred behind
	// ToolSearch); TestRealClaudeDelivery checks each is in the tool list
	// it sends the model.
	DefaultClaudeAllowedTools = "Bash,Edit,Write,Read,Glob,Grep,Agent"
)

// Names of the files Run writes in Spec.LogDir.
const (
	PromptFile      = "prompt.txt"         // the exact bytes sent on stdin
	ArgvFile        = "argv.json"          // the command line, a JSON array
	EventsLog       = "events.jsonl"       // stdout of claude and codex (JSONL)
	StdoutLog       = "stdout.log"         // stdout of droid and command agents
	StderrLog       = "stderr.log"         // stderr of every agent
	SchemaFile      = "output-schema.json" // codex --output-schema, BATON_AGENT_OUTPUT_SCHEMA
	LastMessageFile = "last-message.txt"   // codex --output-last-message
)

const (
	maxLineBytes      = 64 << 20 // longest stdout line or JSON object parsed
	maxFinalTextBytes = 16 << 20 // command agents: plain stdout kept as FinalText
)

// Spec says what to run. Only Agent and Prompt are required.
type Spec struct {
	// Agent is "claude", "codex", "droid" or "command:<argv>".
	Agent string
	// Prompt is sent on stdin, never as an argument (length, quoting, ps).
	Prompt string
	// Resume continues the session an earlier run reported
	// (Result.SessionID) with Prompt as its next user message, so nothing
	// the agent did in it is lost: claude --resume, codex exec resume,
	// droid exec -s (which needs Factory's service: ResumesOffline), pi
	// --session. A command agent gets it as
	// BATON_AGENT_RESUME and Prompt on stdin as always (docs/delivery.md).
	Resume string
	// SystemPrompt is a short role. claude and droid get it with
	// --append-system-prompt; codex and command agents get it prepended to
	// the prompt, separated by a blank line.
	SystemPrompt string
	// Dir is the working directory; empty means the current one.
	Dir string
	// OutputSchema is an optional JSON Schema for the final message. claude
	// gets --json-schema, codex --output-schema; every agent's final message
	// is then parsed and validated (see Validate). A schema that cannot be
	// checked is an ErrInvalidSpec before the agent starts.
	OutputSchema []byte
	// Timeout bounds the whole run; 0 means none.
	Timeout time.Duration
	// KillGrace is the wait between SIGINT and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
	// Model selects the model (claude --model, codex and droid -m).
	Model string
	// ExtraArgs are appended verbatim (user configuration). For codex they
	// come before the final "-".
	ExtraArgs []string
	// Env entries (KEY=value) are added to the inherited environment and
	// win over it. A PATH here is also used to find the agent binary.
	// The inherited environment reaches the agent without baton's secrets
	// (GitHub tokens, BATON_ credentials: proc.Secret) except those named
	// in PassEnv.
	Env     []string
	PassEnv []string
	// Live receives a human-readable view while the agent runs: assistant
	// text, and one line per tool call. nil means quiet. Write errors are
	// ignored so a closed terminal never fails a run. Each Write carries
	// one whole message: assistant text, one tool line ("→ name: detail"),
	// or one notice line ("! ", "✗ " or "? " first), so a writer may take
	// writes as events. The wording is not a stable format.
	Live io.Writer
	// LogDir, when set, receives the raw logs (see the package doc). It is
	// created if missing. Use one directory per run: files are overwritten.
	LogDir string
	// MaxLogBytes caps each log stream; 0 means DefaultMaxLogBytes.
	MaxLogBytes int64
	// Confine, when set, confines the agent: besides what its Policy
	// grants, it may write its working directory, a temporary directory
	// of its own (TMPDIR; the files named in argv go there too, never to
	// LogDir) and its CLI's own configuration, and read where its
	// executable is installed. Nil runs it as baton runs.
	Confine *sandbox.Confinement
}

// Result is what a run produced. Run returns it even on error, filled as
// far as the run got.
type Result struct {
	Agent string   // executor name: claude, codex, droid, pi or command
	Argv  []string // the command line run (argv[0] as named, not resolved)

	// FinalText is the agent's final message. Without a result it is the
	// last assistant text seen (claude), so a caller can still show it.
	FinalText string
	// Structured is FinalText (or claude's structured_output) parsed as
	// JSON. It is set whenever the final message is a JSON value, also
	// without a schema; a surrounding ```json fence is tolerated.
	Structured json.RawMessage

	SessionID string // claude/droid session_id, codex thread_id
	Model     string // as reported by the agent, else Spec.Model

	CostUSD float64 // as estimated by the agent; codex reports none
	// InputTokens counts all input tokens, cached ones included, so numbers
	// compare across agents; CacheReadTokens is the cached part.
	InputTokens     int64
	OutputTokens    int64
	CacheReadTokens int64
	NumTurns        int

	Duration time.Duration // wall time from start to exit
	// ExitCode is the process exit status; -1 when it was killed by a
	// signal or never started.
	ExitCode int

	// IsError and Errors are what the agent itself reported: claude
	// is_error with the error subtype and errors[], codex turn.failed and
	// error events, droid is_error.
	IsError bool
	Errors  []string
	// ToolCalls counts the tool calls the agent made (commands, edits,
	// searches, MCP tools) where its output shows them; ToolFailures
	// those the CLI reported as failed: a command that exited non-zero,
	// an edit it could not apply, a tool it refused. FailedTools says
	// what the first of them were and why, one line each.
	ToolCalls    int
	ToolFailures int
	FailedTools  []string `json:"failed_tools,omitempty"`
	// UnknownEvents counts stdout lines or events that were skipped: not
	// JSON, or a type this package does not know. Never fatal.
	UnknownEvents int
	// Notes are what baton noticed about the run that the agent did not
	// report, such as hooks Codex will not run.
	Notes []string `json:"notes,omitempty"`
	// Sandbox says whether the agent ran confined; zero when Spec.Confine
	// was nil.
	Sandbox sandbox.Report `json:"-"`
	// Refused is what the box's network refused the agent and what it
	// started, each target once with how often it was tried;
	// RefusedMore counts attempts at targets beyond those kept.
	Refused     []netpolicy.RefusalCount `json:"refused,omitempty"`
	RefusedMore int                      `json:"refused_more,omitempty"`

	refusals *netpolicy.Refusals // while the run lasts
}

// note keeps a note with the run and says it on live.
func (r *Result) note(live *liveView, s string) {
	r.Notes = append(r.Notes, s)
	live.note("!", s)
}
