package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

var codexExecFlags = map[string]flagSpec{
	"--json": {}, "--experimental-json": {}, "--skip-git-repo-check": {}, "--ephemeral": {},
	"--full-auto": {}, "--dangerously-bypass-approvals-and-sandbox": {}, "--yolo": {}, "--oss": {},
	"--dangerously-bypass-hook-trust": {},
	"-s":                              {value: true, choices: []string{"read-only", "workspace-write", "danger-full-access"}},
	"--sandbox":                       {value: true, choices: []string{"read-only", "workspace-write", "danger-full-access"}},
	"-C":                              {value: true}, "--cd": {value: true},
	"--output-schema": {value: true},
	"-o":              {value: true}, "--output-last-message": {value: true},
	"-m": {value: true}, "--model": {value: true},
	"-p": {value: true}, "--profile": {value: true},
	"-c": {value: true}, "--config": {value: true},
	"-i": {value: true}, "--image": {value: true},
	"--add-dir": {value: true}, "--color": {value: true, choices: []string{"always", "never", "auto"}},
	"--local-provider": {value: true},
}

func parseCodex(args []string) (*invocation, error) {
	if len(args) == 0 || (args[0] != "exec" && args[0] != "e") {
		return nil, fmt.Errorf("codex: only the exec subcommand is scripted")
	}
	vals, pos, err := parseFlags(args[1:], codexExecFlags, 2,
		func(n string) error {
			return &usageError{2, fmt.Sprintf("error: unexpected argument '%s' found\n\nUsage: codex exec [OPTIONS] [PROMPT]", n)}
		},
		func(n string) error {
			return &usageError{2, fmt.Sprintf("error: a value is required for '%s <VALUE>' but none was supplied", n)}
		})
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 && pos[0] == "resume" {
		// codex exec [OPTIONS] resume <SESSION_ID> [PROMPT]: the session
		// continues, the prompt as before.
		if len(pos) < 2 || strings.HasPrefix(pos[1], "-") {
			return nil, &usageError{2, "error: a session id is required: codex exec resume <SESSION_ID> [PROMPT]"}
		}
		pos = pos[2:]
	}
	if len(pos) > 1 {
		return nil, &usageError{2, fmt.Sprintf("error: unexpected argument '%s' found", pos[1])}
	}
	inv := &invocation{agent: "codex", args: args, format: "human"}
	if last(vals, "--json", "--experimental-json") != "" {
		inv.format = "json"
	}
	if last(vals, "--full-auto") != "" {
		fmt.Fprintln(os.Stderr, "warning: --full-auto is deprecated; use --sandbox workspace-write instead")
	}
	sandbox := last(vals, "-s", "--sandbox")
	if sandbox == "" {
		sandbox = "read-only" // exec's default
		if last(vals, "--full-auto") != "" {
			sandbox = "workspace-write"
		}
	}
	bypass := last(vals, "--dangerously-bypass-approvals-and-sandbox", "--yolo") != ""
	inv.canEdit = bypass || sandbox != "read-only"
	inv.canRun = true // read-only commands run in every sandbox
	if !inv.canEdit {
		inv.editDenied = "sandbox is read-only"
	}
	inv.dir = last(vals, "-C", "--cd")
	inv.model = last(vals, "-m", "--model")
	inv.lastMessage = last(vals, "-o", "--output-last-message")
	if p := last(vals, "--output-schema"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, &usageError{1, fmt.Sprintf("Error: failed to read output schema file %s: %v", p, err)}
		}
		if !json.Valid(b) {
			return nil, &usageError{1, fmt.Sprintf("Error: output schema file %s is not valid JSON", p)}
		}
		inv.schema = b
	}
	if len(pos) == 1 && pos[0] != "-" {
		inv.prompt, inv.promptSet = pos[0], true
	}
	return inv, nil
}

// codex acts out the turn in codex exec's output format.
func (a *actor) codex() int {
	jsonOut := a.inv.format == "json"
	out := func(v any) {
		if jsonOut {
			emit(v)
		}
	}
	item := func(event string, it map[string]any) { out(map[string]any{"type": event, "item": it}) }
	if a.turn.Stderr != "" {
		fmt.Fprint(os.Stderr, a.turn.Stderr)
	}
	out(map[string]any{"type": "thread.started", "thread_id": a.sessionID()})
	if err := a.codexRollout(); err != nil {
		fmt.Fprintln(os.Stderr, "codex: cannot write the session file:", err)
	}
	out(map[string]any{"type": "turn.started"})
	for _, f := range a.turn.Files {
		id := a.id("item_")
		if !a.inv.canEdit {
			item("item.completed", map[string]any{"id": id, "type": "file_change", "status": "failed",
				"changes": []any{map[string]any{"path": filepath.Join(a.cwd, f.Path), "kind": "update"}}})
			item("item.completed", map[string]any{"id": a.id("item_"), "type": "error", "message": "patch rejected: " + a.inv.editDenied})
			continue
		}
		kind, err := a.applyFile(f)
		if err != nil {
			return fail("%v", err)
		}
		item("item.completed", map[string]any{"id": id, "type": "file_change", "status": "completed",
			"changes": []any{map[string]any{"path": filepath.Join(a.cwd, f.Path), "kind": kind}}})
	}
	for _, c := range a.turn.Commands {
		id := a.id("item_")
		cmdline := "bash -lc " + shellWords([]string{shellWords(c.Argv)})
		item("item.started", map[string]any{"id": id, "type": "command_execution", "command": cmdline,
			"aggregated_output": "", "exit_code": nil, "status": "in_progress"})
		output, code, err := a.runCommand(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitScript
		}
		status := "completed"
		if code != 0 {
			status = "failed"
		}
		item("item.completed", map[string]any{"id": id, "type": "command_execution", "command": cmdline,
			"aggregated_output": output, "exit_code": code, "status": status})
	}
	for _, s := range a.turn.Say {
		item("item.completed", map[string]any{"id": a.id("item_"), "type": "agent_message", "text": s})
	}
	for _, e := range a.turn.Events {
		if jsonOut {
			emitRaw(e)
		}
	}
	if a.sleep() {
		return 130
	}
	if a.turn.NoResult {
		return a.exitCode()
	}
	if a.turn.IsError {
		msg := strings.Join(a.turn.Errors, "; ")
		if msg == "" {
			msg = "stream error: the model request failed"
		}
		out(map[string]any{"type": "error", "message": msg})
		out(map[string]any{"type": "turn.failed", "error": map[string]any{"message": msg}})
		if !jsonOut {
			fmt.Fprintln(os.Stderr, "ERROR: "+msg)
		}
		return a.exitCode()
	}
	text, _ := a.finalText()
	item("item.completed", map[string]any{"id": a.id("item_"), "type": "agent_message", "text": text})
	t := a.turn
	out(map[string]any{"type": "turn.completed", "usage": map[string]any{
		"input_tokens": t.InputTokens + t.CacheReadTokens, "cached_input_tokens": t.CacheReadTokens,
		"output_tokens": t.OutputTokens,
	}})
	if a.inv.lastMessage != "" {
		if err := os.WriteFile(a.inv.lastMessage, []byte(text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "Failed to write last message file %s: %v\n", a.inv.lastMessage, err)
		}
	}
	if !jsonOut {
		fmt.Println(text) // without --json only the final message goes to stdout
	}
	return a.exitCode()
}

// codexRollout writes the session file Codex keeps under
// $CODEX_HOME/sessions (never under the real ~/.codex: only when
// CODEX_HOME is set), with the turn_context line that names the model,
// which `codex exec --json` itself never does.
func (a *actor) codexRollout() error {
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		return nil
	}
	now := time.Now()
	dir := filepath.Join(home, "sessions", now.Format("2006"), now.Format("01"), now.Format("02"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range []map[string]any{
		{"timestamp": now.UTC().Format(time.RFC3339Nano), "type": "session_meta", "payload": map[string]any{"id": a.sessionID(), "cwd": a.cwd, "originator": "codex_exec"}},
		{"timestamp": now.UTC().Format(time.RFC3339Nano), "type": "turn_context", "payload": map[string]any{"cwd": a.cwd, "approval_policy": "never", "model": a.model()}},
	} {
		j, _ := json.Marshal(line)
		b.Write(j)
		b.WriteByte('\n')
	}
	name := "rollout-" + now.Format("2006-01-02T15-04-05") + "-" + a.sessionID() + ".jsonl"
	return os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
}
