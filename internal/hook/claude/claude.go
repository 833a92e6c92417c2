// Package claude speaks Claude Code's hook contract
// (https://code.claude.com/docs/en/hooks): snake_case payloads on stdin;
// SessionStart context as plain stdout (JSON additionalContext has been
// lost in several releases); Stop blocks as a top-level JSON decision
// with a reason and a systemMessage; every other event prints nothing.
package claude

import (
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

func (Adapter) Encode(e hook.Event, r hook.Result) []byte { return hook.EncodeClaudeStyle(e, r) }

func (Adapter) ProjectDirEnv() string { return "CLAUDE_PROJECT_DIR" }

func (Adapter) EnvFileEnv() string { return "CLAUDE_ENV_FILE" }

// IsWriteTool: baton.WriteTools, the list the installed matcher comes from.
func (Adapter) IsWriteTool(name string) bool { return baton.IsWriteTool(baton.HarnessClaude, name) }

// BlockCap honours CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, Claude Code's own
// override, which the hook inherits from the session's environment.
func (Adapter) BlockCap(getenv func(string) string) int {
	return hook.EnvBlockCap(getenv, "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", DefaultBlockCap)
}
