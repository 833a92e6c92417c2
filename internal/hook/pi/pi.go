// Package pi is the contract between baton and its pi extension
// (integrations/pi): pi has no hook configuration, so the extension runs
// `baton hook <event> --harness pi` with a Claude-shaped snake_case JSON
// payload on stdin and always reads one JSON object back:
//
//	{"schema_version":1,"context":"…"}                                   session-start
//	{"schema_version":1,"decision":"block","reason":"…","system_message":"…"}  stop: continue with reason
//	{"schema_version":1,"system_message":"…"}                           stop: allowed, with a note
//	{"schema_version":1}                                                 nothing to do
package pi

import (
	"bytes"
	"encoding/json"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/hook"
)

// Adapter is the pi extension's contract.
type Adapter struct{}

var _ hook.Adapter = Adapter{}

func (Adapter) Harness() baton.Harness { return baton.HarnessPi }

func (Adapter) Decode(_ hook.Event, data []byte) (*hook.Payload, error) {
	f, err := hook.DecodeFields(data)
	if err != nil {
		return nil, err
	}
	return hook.CommonPayload(f), nil
}

// Output is the extension's answer.
type Output struct {
	SchemaVersion int    `json:"schema_version"`
	Context       string `json:"context,omitempty"`
	Decision      string `json:"decision,omitempty"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"system_message,omitempty"`
}

func (Adapter) Encode(_ hook.Event, r hook.Result) []byte {
	o := Output{SchemaVersion: 1, Context: r.Context, SystemMessage: r.SystemMessage}
	if r.Block {
		o.Decision, o.Reason = "block", r.Reason
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep <promise> readable
	_ = enc.Encode(o)
	return b.Bytes()
}

func (Adapter) ProjectDirEnv() string { return "" }

func (Adapter) EnvFileEnv() string { return "" }

// IsWriteTool: pi's write and edit tools.
func (Adapter) IsWriteTool(name string) bool { return name == "write" || name == "edit" }

// BlockCap: the extension re-prompts with followUp messages; no cap.
func (Adapter) BlockCap(getenv func(string) string) int {
	return hook.EnvBlockCap(getenv, "", 0)
}
