// Package agentrun runs coding agents headless: one prompt in, one final
// message out, with cost, tokens and raw logs. The goal-tree runner and the
// delivery pipeline share it.
//
// # Executors
//
// Spec.Agent picks the executor:
//
//   - "claude": claude -p --output-format stream-json --verbose. The stream's
//     result line gives the final text, structured_output (with a schema),
//     cost, tokens (modelUsage when present, since it includes subagents),
//     turns and the error subtype.
//   - "codex": codex exec --json --sandbox danger-full-access inside baton's
//     box (Codex's own bubblewrap sandbox cannot start there), --sandbox
//     workspace-write outside it. The final message is the last completed
//     agent_message item (or the --output-last-message file); tokens come
//     from turn.completed; turn.failed marks an error; the model, which the
//     stream never names, comes from the session file Codex writes under
//     $CODEX_HOME/sessions.
//   - "droid": droid exec -o stream-json --auto medium. Events arrive as they
//     happen (messages, tool calls and results); the final message, turns
//     and tokens come with the completion event, the model with the init
//     event. -o json (one result object) is read too.
//   - "command:<argv>": any program. argv is split like a shell would split
//     it (quotes and backslashes) but nothing is expanded and no shell runs.
//     If stdout ends with a JSON object (the last non-empty line, or a
//     multi-line object) that object is the final message; otherwise all of
//     stdout is. Spec.Model and the schema file are offered to the program in
//     BATON_AGENT_MODEL and BATON_AGENT_OUTPUT_SCHEMA.
//
// The prompt always goes on stdin, never in argv. Defaults that grant
// permissions (claude --permission-mode and --allowedTools, codex --sandbox,
// droid --auto) are left out when Spec.ExtraArgs sets the same option, so
// user configuration wins without duplicate flags. Command returns the exact
// argv, for golden tests and --dry-run.
//
// # Tool calls
//
// Result.ToolCalls counts the agent's tool calls and Result.ToolFailures
// those its CLI reported as failed (claude's is_error tool results, codex
// items with status failed or declined or a non-zero exit code, droid's
// isError tool results); Result.FailedTools says which, one line each.
// The live view shows each failure as a "✗" line, so an edit the CLI could
// not apply never passes for one it made.
//
// # Process control
//
// The agent runs in its own process group. When ctx is done or Spec.Timeout
// passes, the group gets SIGINT (claude records a result on SIGINT, not on
// SIGTERM), then SIGKILL after Spec.KillGrace. When the agent exits, anything
// left in its group is killed, so no agent leaves processes behind.
//
// # Logs
//
// With Spec.LogDir set, Run writes prompt.txt (the exact stdin), argv.json,
// events.jsonl (claude, codex, droid) or stdout.log (command agents, and
// droid told -o json), and
// stderr.log; with a schema, codex and command agents get
// output-schema.json there, and codex writes last-message.txt. Without
// LogDir those two files go to a temporary directory removed after the run.
// Each stream is capped at Spec.MaxLogBytes and ends with a note saying how
// much was dropped (a JSON line in events.jsonl). Logs are written as the
// agent runs, so a failed or killed run keeps everything up to the failure.
// Parsing holds one stdout line (or one JSON object) at a time, at most
// 64 MiB; longer lines are logged but skipped. A command agent's plain-text
// answer keeps the last 16 MiB of its stdout.
//
// # Errors
//
// Run always returns a non-nil *Result with whatever was gathered, also when
// it returns an error. Errors are *baton.Error values whose cause matches one
// sentinel with errors.Is, chosen in this order:
//
//	condition                          sentinel           baton code   class
//	Spec unusable (agent, schema)      ErrInvalidSpec     Invalid      runner
//	binary not on PATH                 ErrNotInstalled    NotFound     runner
//	ctx canceled                       context.Canceled   Canceled     runner
//	Spec.Timeout or ctx deadline       ErrTimeout         Unavailable  runner
//	non-zero exit or agent error       ErrAgentFailed     Unavailable  agent
//	no result line / final message     ErrNoResult        Unavailable  runner
//	final message fails the schema     ErrBadOutput       Unavailable  runner
//	I/O or start failure               (none)             Internal     runner
//
// "runner" errors are infrastructure trouble: a caller following the
// runner-vs-agent taxonomy retries them without spending the task's attempt
// and never shows them to the agent as its fault (baton's design counts
// unparsable output among them). "agent" errors are the agent's doing; an
// ErrAgentFailed run may still be an outage (rate limit, network), which
// Result.Errors and the message's stderr tail tell apart. ErrNotInstalled is NotFound rather than Unavailable because
// retrying cannot help: the user has to install the CLI or pick another
// agent. Result.IsError and Result.Errors carry what the agent itself
// reported (claude error subtypes, codex turn.failed), independent of the
// exit code.
//
// # Testing
//
// Package agenttest builds a scripted fake that answers as claude, codex,
// droid or a plain command agent, for tests of this package and of its
// callers.
package agentrun
