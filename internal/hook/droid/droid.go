// Package droid speaks Factory Droid's hook contract
// (https://docs.factory.ai/reference/hooks-reference): Claude-style
// payloads, documented in snake_case but seen in camelCase too (both are
// read); Stop carries no last_assistant_message, so the transcript is
// read; exit-0 stdout is shown to the user on events other than
// SessionStart, so those print nothing.
package droid

import (
	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/hook"
)

// Adapter is Droid's hook contract.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Harness() baton.Harness { return baton.HarnessDroid }

func (Adapter) Decode(_ hook.Event, data []byte) (*hook.Payload, error) {
	f, err := hook.DecodeFields(data)
	if err != nil {
		return nil, err
	}
	return hook.CommonPayload(f), nil
}

func (Adapter) Encode(e hook.Event, r hook.Result) []byte { return hook.EncodeClaudeStyle(e, r) }

func (Adapter) ProjectDirEnv() string { return "FACTORY_PROJECT_DIR" }

// EnvFileEnv: Droid gives SessionStart CLAUDE_ENV_FILE (in the payload and
// the environment) and applies its export lines to the agent's shell.
func (Adapter) EnvFileEnv() string { return "CLAUDE_ENV_FILE" }

// IsWriteTool: baton.WriteTools, the list the installed matcher comes from.
func (Adapter) IsWriteTool(name string) bool { return baton.IsWriteTool(baton.HarnessDroid, name) }

// BlockCap: Droid documents no cap; BATON_STOP_HOOK_BLOCK_CAP sets one.
func (Adapter) BlockCap(getenv func(string) string) int {
	return hook.EnvBlockCap(getenv, "", 0)
}
