package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

var piFlags = map[string]flagSpec{
	"-p": {}, "--print": {}, "--offline": {}, "-a": {}, "--approve": {}, "-na": {}, "--no-approve": {},
	"--no-session": {}, "--verbose": {}, "-c": {}, "--continue": {},
	"--mode":                 {value: true, choices: []string{"text", "json", "rpc"}},
	"--provider":             {value: true},
	"--model":                {value: true},
	"--api-key":              {value: true},
	"--append-system-prompt": {value: true},
	"--system-prompt":        {value: true},
	"--thinking":             {value: true},
	"--tools":                {value: true}, "-t": {value: true},
	"--session": {value: true}, "--session-id": {value: true}, "--session-dir": {value: true},
}

func parsePi(args []string) (*invocation, error) {
	vals, pos, err := parseFlags(args, piFlags, 1,
		func(n string) error { return &usageError{1, fmt.Sprintf("Error: Unknown option: %s", n)} },
		func(n string) error { return &usageError{1, fmt.Sprintf("Error: %s requires a value", n)} })
	if err != nil {
		return nil, err
	}
	if last(vals, "-p", "--print") == "" {
		return nil, &usageError{1, "fakeagent: only pi's print mode (-p) is scripted"}
	}
	inv := &invocation{agent: "pi", args: args, canEdit: true, canRun: true}
	inv.format = last(vals, "--mode")
	if inv.format == "" {
		inv.format = "text"
	}
	inv.model = last(vals, "--model")
	inv.systemPrompt = last(vals, "--append-system-prompt")
	if len(pos) > 0 {
		inv.prompt, inv.promptSet = strings.Join(pos, " "), true
	}
	return inv, nil
}

// pi acts out the turn as pi 1.5.2 does in print mode: with --mode json,
// the session line, each assistant message, each tool execution, and the
// end; otherwise only the final text. pi exits 0 even when the model
// request failed (the message stops with an error).
func (a *actor) pi() int {
	jsonOut := a.inv.format == "json"
	out := func(v any) {
		if jsonOut {
			emit(v)
		}
	}
	if a.turn.Stderr != "" {
		fmt.Fprint(os.Stderr, a.turn.Stderr)
	}
	out(map[string]any{"type": "session", "version": 3, "id": a.sessionID(), "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "cwd": a.cwd})
	if err := a.piSession(); err != nil {
		fmt.Fprintln(os.Stderr, "pi: cannot write the session file:", err)
	}
	out(map[string]any{"type": "agent_start"})
	out(map[string]any{"type": "message_end", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": a.inv.prompt}}}})
	t := a.turn
	assistant := func(content []any, stop, errMsg string) {
		m := map[string]any{"role": "assistant", "content": content, "api": "openai-completions", "provider": "fake", "model": a.model(),
			"usage": map[string]any{"input": t.InputTokens, "output": t.OutputTokens, "cacheRead": t.CacheReadTokens, "cacheWrite": 0,
				"cost": map[string]any{"total": t.CostUSD}}, "stopReason": stop}
		if errMsg != "" {
			m["errorMessage"] = errMsg
		}
		out(map[string]any{"type": "message_start", "message": m})
		out(map[string]any{"type": "message_end", "message": m})
		t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CostUSD = 0, 0, 0, 0 // counted once
	}
	tool := func(name string, args map[string]any, text string, isError bool) {
		id := a.id("call_")
		assistant([]any{map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}}, "toolUse", "")
		out(map[string]any{"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": args})
		out(map[string]any{"type": "tool_execution_end", "toolCallId": id, "toolName": name, "args": args,
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}, "isError": isError})
	}
	for _, f := range a.turn.Files {
		if _, err := a.applyFile(f); err != nil {
			return fail("%v", err)
		}
		tool("write", map[string]any{"path": f.Path, "content": f.Content}, "Successfully wrote to "+f.Path, false)
	}
	for _, c := range a.turn.Commands {
		output, code, err := a.runCommand(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitScript
		}
		text := output
		if code != 0 {
			text += fmt.Sprintf("\n\nCommand exited with code %d", code)
		}
		tool("bash", map[string]any{"command": shellWords(c.Argv)}, text, code != 0)
	}
	for _, s := range a.turn.Say {
		assistant([]any{map[string]any{"type": "text", "text": s}}, "stop", "")
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
			msg = "400: the model request failed"
		}
		assistant([]any{}, "error", msg)
	} else {
		text, _ := a.finalText()
		assistant([]any{map[string]any{"type": "text", "text": text}}, "stop", "")
		if !jsonOut {
			fmt.Println(text)
		}
	}
	out(map[string]any{"type": "agent_end", "messages": []any{}})
	out(map[string]any{"type": "agent_settled", "aborted": false})
	if a.turn.ExitCode != 0 {
		return a.turn.ExitCode
	}
	return 0
}

// piSession writes a session file where pi keeps them, in its agent
// directory ($PI_CODING_AGENT_DIR, never the real ~/.pi: only when it is
// set), as pi would.
func (a *actor) piSession() error {
	dir := os.Getenv("PI_CODING_AGENT_DIR")
	if dir == "" {
		return nil
	}
	dir = filepath.Join(dir, "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, a.sessionID()+".jsonl"), []byte(`{"type":"session","id":"`+a.sessionID()+`"}`+"\n"), 0o644)
}
