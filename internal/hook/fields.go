package hook

import (
	"bytes"
	"encoding/json"
	"errors"
)

// fields is a payload decoded one level deep, so each field can be read
// under the keys harnesses use (snake_case, camelCase) and a field of the
// wrong type reads as absent instead of failing the whole payload.
type fields map[string]json.RawMessage

// decodeFields parses data as a JSON object. Anything else is an error.
func decodeFields(data []byte) (fields, error) {
	data = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(data), []byte("\ufeff")))
	if len(data) == 0 || data[0] != '{' {
		return nil, errors.New("want a JSON object")
	}
	var f fields
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return f, nil
}

// Str returns the first of keys that holds a string, or "".
func (f fields) Str(keys ...string) string {
	if s := f.OptStr(keys...); s != nil {
		return *s
	}
	return ""
}

// OptStr returns the first of keys that holds a string, or nil when none
// does (absent, null or another type).
func (f fields) OptStr(keys ...string) *string {
	for _, k := range keys {
		var s string
		if raw, ok := f[k]; ok && json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"' {
			return &s
		}
	}
	return nil
}

// Bool returns the first of keys that holds a boolean (or the strings
// "true"/"false"), or false.
func (f fields) Bool(keys ...string) bool {
	for _, k := range keys {
		raw, ok := f[k]
		if !ok {
			continue
		}
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return b
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && (s == "true" || s == "false") {
			return s == "true"
		}
	}
	return false
}

// Raw returns the first of keys that is present and not null.
func (f fields) Raw(keys ...string) json.RawMessage {
	for _, k := range keys {
		if raw, ok := f[k]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return raw
		}
	}
	return nil
}

// commonPayload fills the fields every harness shares from f, trying each
// key in snake_case first and camelCase second.
func commonPayload(f fields) *Payload {
	return &Payload{
		SessionID:            f.Str("session_id", "sessionId"),
		TranscriptPath:       f.Str("transcript_path", "transcriptPath"),
		CWD:                  f.Str("cwd"),
		EventName:            f.Str("hook_event_name", "hookEventName"),
		Source:               f.Str("source"),
		LastAssistantMessage: f.OptStr("last_assistant_message", "lastAssistantMessage"),
		StopHookActive:       f.Bool("stop_hook_active", "stopHookActive"),
		ToolName:             f.Str("tool_name", "toolName"),
		ToolInput:            f.Raw("tool_input", "toolInput"),
		ToolResponse:         f.Raw("tool_response", "toolResponse"),
		Trigger:              f.Str("trigger"),
	}
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
