package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

var droidExecFlags = map[string]flagSpec{
	"--skip-permissions-unsafe": {}, "--use-spec": {}, "--list-tools": {},
	"-o":              {value: true, choices: []string{"text", "json", "stream-json", "debug", "stream-jsonrpc"}},
	"--output-format": {value: true, choices: []string{"text", "json", "stream-json", "debug", "stream-jsonrpc"}},
	"--input-format":  {value: true},
	"-f":              {value: true}, "--file": {value: true},
	"--auto": {value: true, choices: []string{"low", "medium", "high"}},
	"-s":     {value: true}, "--session-id": {value: true},
	"-m": {value: true}, "--model": {value: true},
	"-r": {value: true}, "--reasoning-effort": {value: true},
	"--spec-model": {value: true}, "--spec-reasoning-effort": {value: true},
	"--cwd": {value: true}, "--enabled-tools": {value: true}, "--disabled-tools": {value: true},
	"--append-system-prompt": {value: true}, "--append-system-prompt-file": {value: true},
	"--delegation-url": {value: true},
}

func parseDroid(args []string) (*invocation, error) {
	if len(args) == 0 || args[0] != "exec" {
		return nil, fmt.Errorf("droid: only the exec subcommand is scripted")
	}
	vals, pos, err := parseFlags(args[1:], droidExecFlags, 2,
		func(n string) error { return &usageError{2, fmt.Sprintf("error: unknown option '%s'", n)} },
		func(n string) error {
			return &usageError{2, fmt.Sprintf("error: option '%s <value>' argument missing", n)}
		})
	if err != nil {
		return nil, err
	}
	inv := &invocation{agent: "droid", args: args}
	inv.format = last(vals, "-o", "--output-format")
	if inv.format == "" {
		inv.format = "text"
	}
	auto := last(vals, "--auto")
	skip := last(vals, "--skip-permissions-unsafe") != ""
	if skip && auto != "" {
		return nil, &usageError{2, "Error: --skip-permissions-unsafe cannot be combined with --auto"}
	}
	// Default is read-only; low allows edits; medium and up also commands.
	inv.canEdit = skip || auto != ""
	inv.canRun = skip || auto == "medium" || auto == "high"
	inv.editDenied = "insufficient permission: rerun with --auto low or higher"
	inv.dir = last(vals, "--cwd")
	inv.model = last(vals, "-m", "--model")
	inv.systemPrompt = last(vals, "--append-system-prompt")
	if f := last(vals, "-f", "--file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, &usageError{1, fmt.Sprintf("Error: cannot read prompt file %s: %v", f, err)}
		}
		inv.prompt, inv.promptSet = string(b), true
	}
	if len(pos) > 0 {
		inv.prompt, inv.promptSet = strings.Join(pos, " "), true
	}
	return inv, nil
}

// droid acts out the turn in droid exec's output formats.
func (a *actor) droid() int {
	start := time.Now()
	sid := a.sessionID()
	stream := a.inv.format == "stream-json" || a.inv.format == "debug"
	if a.turn.Stderr != "" {
		fmt.Fprint(os.Stderr, a.turn.Stderr)
	}
	if stream {
		emit(map[string]any{"type": "system", "subtype": "init", "cwd": a.cwd, "session_id": sid,
			"tools": []string{"Read", "Create", "Edit", "Execute"}, "model": a.model(), "reasoning_effort": "off"})
		emit(map[string]any{"type": "message", "role": "user", "id": a.id("msg-"), "text": a.inv.prompt, "session_id": sid})
	}
	// droid fails fast when the autonomy level is too low, without partial
	// changes.
	if (len(a.turn.Files) > 0 && !a.inv.canEdit) || (len(a.turn.Commands) > 0 && !a.inv.canRun) {
		msg := "Operation exceeds the current autonomy level: " + a.inv.editDenied
		if len(a.turn.Files) == 0 || a.inv.canEdit {
			msg = "Operation exceeds the current autonomy level: commands need --auto medium or higher"
		}
		fmt.Fprintln(os.Stderr, "Error: "+msg)
		a.droidResult(start, sid, true, msg)
		return 1
	}
	for _, f := range a.turn.Files {
		if _, err := a.applyFile(f); err != nil {
			return fail("%v", err)
		}
		if stream {
			id := a.id("toolu_")
			emit(map[string]any{"type": "tool_call", "id": id, "messageId": a.id("msg-"), "toolId": "Create", "toolName": "Create", "parameters": map[string]any{"file_path": f.Path}, "session_id": sid})
			emit(map[string]any{"type": "tool_result", "id": id, "messageId": a.id("msg-"), "toolId": "Create", "isError": false, "value": "File created", "session_id": sid})
		}
	}
	for _, c := range a.turn.Commands {
		output, code, err := a.runCommand(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitScript
		}
		if stream {
			id := a.id("toolu_")
			emit(map[string]any{"type": "tool_call", "id": id, "messageId": a.id("msg-"), "toolId": "Execute", "toolName": "Execute",
				"parameters": map[string]any{"command": shellWords(c.Argv), "riskLevel": "low"}, "session_id": sid})
			result := map[string]any{"type": "tool_result", "id": id, "messageId": a.id("msg-"), "toolId": "Execute", "isError": code != 0, "session_id": sid}
			if code != 0 {
				result["error"] = map[string]any{"type": "tool_error", "message": fmt.Sprintf("Command failed with exit code %d: %s", code, strings.TrimSpace(output))}
			} else {
				result["value"] = output
			}
			emit(result)
		}
	}
	for _, s := range a.turn.Say {
		if stream {
			emit(map[string]any{"type": "message", "role": "assistant", "id": a.id("msg-"), "text": s, "session_id": sid})
		}
	}
	for _, e := range a.turn.Events {
		emitRaw(e)
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
			msg = "droid exec failed"
		}
		fmt.Fprintln(os.Stderr, "Error: "+msg)
		a.droidResult(start, sid, true, msg)
		return a.exitCode()
	}
	text, _ := a.finalText()
	a.droidResult(start, sid, false, text)
	return a.exitCode()
}

func (a *actor) droidResult(start time.Time, sid string, isError bool, text string) {
	switch a.inv.format {
	case "json":
		subtype := "success"
		if isError {
			subtype = "error"
		}
		// droid prints its result object indented.
		b, _ := json.MarshalIndent(map[string]any{
			"type": "result", "subtype": subtype, "is_error": isError,
			"duration_ms": time.Since(start).Milliseconds(), "num_turns": a.numTurns(),
			"result": text, "session_id": sid,
		}, "", "  ")
		os.Stdout.Write(append(b, '\n'))
	case "stream-json", "debug":
		// Droid 0.225.2: an error is an error event from where it happened,
		// then the CLI's own; a success the assistant's message and a
		// completion with the usage.
		if isError {
			emit(map[string]any{"type": "error", "source": "agent_loop", "message": text, "session_id": sid})
			emit(map[string]any{"type": "error", "source": "cli", "message": "Exec failed", "session_id": sid})
			return
		}
		emit(map[string]any{"type": "message", "role": "assistant", "id": a.id("msg-"), "text": text, "session_id": sid})
		t := a.turn
		emit(map[string]any{"type": "completion", "finalText": text, "numTurns": a.numTurns(),
			"durationMs": time.Since(start).Milliseconds(), "session_id": sid, "usage": map[string]any{
				"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens, "cache_read_input_tokens": t.CacheReadTokens,
				"cache_creation_input_tokens": 0, "factory_credits": 0}})
	default:
		if !isError {
			fmt.Println(text)
		}
	}
}

// parsePlain reads a plain command agent's invocation: the prompt comes on
// stdin; the schema and model come from the variables agentrun sets.
func parsePlain(args []string) (*invocation, error) {
	inv := &invocation{agent: "command", args: args, canEdit: true, canRun: true}
	inv.model = os.Getenv("BATON_AGENT_MODEL")
	if p := os.Getenv("BATON_AGENT_OUTPUT_SCHEMA"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read output schema %s: %w", p, err)
		}
		inv.schema = b
	}
	return inv, nil
}

// plain acts out the turn as a command agent: progress and Say on
// stderr, raw Events and the final message on stdout.
func (a *actor) plain() int {
	if a.turn.Stderr != "" {
		fmt.Fprint(os.Stderr, a.turn.Stderr)
	}
	for _, f := range a.turn.Files {
		if _, err := a.applyFile(f); err != nil {
			return fail("%v", err)
		}
		fmt.Fprintln(os.Stderr, "wrote "+f.Path)
	}
	for _, c := range a.turn.Commands {
		if _, _, err := a.runCommand(c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitScript
		}
		fmt.Fprintln(os.Stderr, "ran "+shellWords(c.Argv))
	}
	for _, s := range a.turn.Say {
		fmt.Fprintln(os.Stderr, s)
	}
	for _, e := range a.turn.Events {
		emitRaw(e)
	}
	if a.sleep() {
		return 130
	}
	if !a.turn.NoResult {
		if text, _ := a.finalText(); text != "" {
			fmt.Println(text)
		}
	}
	if a.turn.IsError {
		fmt.Fprintln(os.Stderr, strings.Join(a.turn.Errors, "; "))
	}
	return a.exitCode()
}
