// Package claude speaks Claude Code's hook contract
// (https://code.claude.com/docs/en/hooks): snake_case payloads on stdin;
// SessionStart context as plain stdout (JSON additionalContext has been
// lost in several releases); Stop blocks as a top-level JSON decision
// with a reason and a systemMessage; every other event prints nothing.
package claude

import (
	"bytes"
	"encoding/json"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/hook"
)

// DefaultBlockCap is how many consecutive Stop blocks Claude Code honours
// before it ends the turn anyway (since v2.1.143).
const DefaultBlockCap = 8

// Adapter is Claude Code's hook contract.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Harness() baton.Harness { return baton.HarnessClaude }

func (Adapter) Decode(_ hook.Event, data []byte) (*hook.Payload, error) {
	f, err := hook.DecodeFields(data)
	if err != nil {
		return nil, err
	}
	return hook.CommonPayload(f), nil
}

// Encode is the shared Claude-style answer, except for a blocking Stop:
// Claude Code repeats a Stop's reason (as the "Stop hook feedback" turn,
// and from 2.1.330 again as a "Stop hook blocking error" system message),
// so the loop prompt goes once as the hook's additional context and the
// reason only points at it. Measured with the real Claude Code against a
// scripted model (TestRealClaudeCodeSession): 2.1.330 sent a reason twice
// and the additional context once; 2.1.197 sent each once.
func (Adapter) Encode(e hook.Event, r hook.Result) []byte {
	if e != hook.Stop || !r.Block || r.Reason == "" {
		return hook.EncodeClaudeStyle(e, r)
	}
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	o := struct {
		Decision      string   `json:"decision"`
		Reason        string   `json:"reason"`
		SystemMessage string   `json:"systemMessage,omitempty"`
		Specific      specific `json:"hookSpecificOutput"`
	}{"block", StopPointer, r.SystemMessage, specific{"Stop", r.Reason}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(o)
	return b.Bytes()
}

// StopPointer is the reason of a blocking Stop: the loop prompt itself
// arrives once, as the hook's additional context.
const StopPointer = "Not done: baton's loop continues with the prompt in this hook's additional context."

func (Adapter) ProjectDirEnv() string { return "CLAUDE_PROJECT_DIR" }

func (Adapter) EnvFileEnv() string { return "CLAUDE_ENV_FILE" }

// IsWriteTool: baton.WriteTools, the list the installed matcher comes from.
func (Adapter) IsWriteTool(name string) bool { return baton.IsWriteTool(baton.HarnessClaude, name) }

// BlockCap honours CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, Claude Code's own
// override, which the hook inherits from the session's environment.
func (Adapter) BlockCap(getenv func(string) string) int {
	return hook.EnvBlockCap(getenv, "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", DefaultBlockCap)
}
