// Package codex speaks Codex CLI's hook contract
// (https://developers.openai.com/codex/hooks, schemas in
// openai/codex:codex-rs/hooks/schema/generated): snake_case payloads with
// nullable transcript_path and last_assistant_message; SessionStart
// context as plain stdout (codex-cli 0.154.0 rejected additionalContext);
// Stop answers JSON or nothing, never plain text, and a block's reason
// becomes the next user prompt.
package codex

import (
	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/hook"
)

// Adapter is Codex's hook contract.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Harness() baton.Harness { return baton.HarnessCodex }

func (Adapter) Decode(_ hook.Event, data []byte) (*hook.Payload, error) {
	f, err := hook.DecodeFields(data)
	if err != nil {
		return nil, err
	}
	return hook.CommonPayload(f), nil
}

// Encode prints JSON or nothing on Stop; plain context on SessionStart.
func (Adapter) Encode(e hook.Event, r hook.Result) []byte { return hook.EncodeClaudeStyle(e, r) }

// ProjectDirEnv: Codex exports none; the payload's cwd is used.
func (Adapter) ProjectDirEnv() string { return "" }

func (Adapter) EnvFileEnv() string { return "" }

// IsWriteTool: baton.WriteTools, the list the installed matcher comes from.
func (Adapter) IsWriteTool(name string) bool { return baton.IsWriteTool(baton.HarnessCodex, name) }

// BlockCap: Codex documents no cap; BATON_STOP_HOOK_BLOCK_CAP sets one.
func (Adapter) BlockCap(getenv func(string) string) int {
	return hook.EnvBlockCap(getenv, "", 0)
}
