package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// flagSpec describes one option: whether it takes a value, and the choices
// allowed when they are fixed.
type flagSpec struct {
	value   bool
	choices []string
}

// parseFlags walks args with the given table. Unknown options are usage
// errors, as in the real CLIs; a "--" ends the options.
func parseFlags(args []string, table map[string]flagSpec, code int, unknown func(string) error, missing func(string) error) (map[string][]string, []string, error) {
	vals := map[string][]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		spec, ok := table[name]
		if !ok {
			return nil, nil, unknown(name)
		}
		if !spec.value {
			vals[name] = append(vals[name], "true")
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, missing(name)
			}
			i++
			val = args[i]
		}
		if len(spec.choices) > 0 && !contains(spec.choices, val) {
			return nil, nil, &usageError{code: code, msg: fmt.Sprintf("error: option '%s' argument '%s' is invalid. Allowed choices are %s.", name, val, strings.Join(spec.choices, ", "))}
		}
		vals[name] = append(vals[name], val)
	}
	return vals, pos, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// last returns the last value of the first flag name present.
func last(vals map[string][]string, names ...string) string {
	for _, n := range names {
		if v := vals[n]; len(v) > 0 {
			return v[len(v)-1]
		}
	}
	return ""
}

var claudeFlags = map[string]flagSpec{
	"-p": {}, "--print": {}, "--verbose": {}, "--include-partial-messages": {},
	"--dangerously-skip-permissions": {}, "--no-session-persistence": {}, "--strict-mcp-config": {},
	"--bare": {}, "-c": {}, "--continue": {}, "--fork-session": {}, "-d": {}, "--debug": {},
	"--output-format":        {value: true, choices: []string{"text", "json", "stream-json"}},
	"--input-format":         {value: true, choices: []string{"text", "stream-json"}},
	"--permission-mode":      {value: true, choices: []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}},
	"--json-schema":          {value: true},
	"--append-system-prompt": {value: true}, "--append-system-prompt-file": {value: true},
	"--system-prompt": {value: true}, "--system-prompt-file": {value: true},
	"--model": {value: true}, "--fallback-model": {value: true}, "--effort": {value: true},
	"--allowedTools": {value: true}, "--allowed-tools": {value: true},
	"--disallowedTools": {value: true}, "--disallowed-tools": {value: true}, "--tools": {value: true},
	"--max-turns": {value: true}, "--max-budget-usd": {value: true},
	"-r": {value: true}, "--resume": {value: true}, "--session-id": {value: true},
	"--mcp-config": {value: true}, "--settings": {value: true}, "--setting-sources": {value: true},
	"--add-dir": {value: true}, "--plugin-dir": {value: true}, "--agent": {value: true},
}

func parseClaude(args []string) (*invocation, error) {
	vals, pos, err := parseFlags(args, claudeFlags, 1,
		func(n string) error { return &usageError{1, fmt.Sprintf("error: unknown option '%s'", n)} },
		func(n string) error {
			return &usageError{1, fmt.Sprintf("error: option '%s <value>' argument missing", n)}
		})
	if err != nil {
		return nil, err
	}
	if last(vals, "-p", "--print") == "" {
		return nil, fmt.Errorf("claude: only print mode (-p) is scripted")
	}
	inv := &invocation{agent: "claude", args: args}
	inv.format = last(vals, "--output-format")
	if inv.format == "" {
		inv.format = "text"
	}
	verbose := last(vals, "--verbose") != ""
	if inv.format == "stream-json" && !verbose {
		return nil, &usageError{1, "Error: When using --print, --output-format=stream-json requires --verbose"}
	}
	if s := last(vals, "--json-schema"); s != "" {
		if !json.Valid([]byte(s)) {
			return nil, &usageError{1, "Error: --json-schema is not valid JSON"}
		}
		inv.schema = json.RawMessage(s)
	}
	inv.systemPrompt = last(vals, "--append-system-prompt")
	inv.model = last(vals, "--model")
	if len(pos) > 0 {
		inv.prompt, inv.promptSet = strings.Join(pos, " "), true
	}
	mode := last(vals, "--permission-mode")
	skip := last(vals, "--dangerously-skip-permissions") != "" || mode == "bypassPermissions"
	tools := strings.Join(append(vals["--allowedTools"], vals["--allowed-tools"]...), ",")
	inv.canEdit = skip || mode == "acceptEdits" || mode == "auto" || toolAllowed(tools, "Edit") || toolAllowed(tools, "Write")
	inv.canRun = skip || mode == "auto" || toolAllowed(tools, "Bash")
	return inv, nil
}

// toolAllowed reports whether a comma or space separated allow list names
// tool, bare or with a rule such as Bash(git *).
func toolAllowed(list, tool string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		if f == tool || strings.HasPrefix(f, tool+"(") {
			return true
		}
	}
	return false
}

// claude acts out the turn in claude -p's output format.
func (a *actor) claude() int {
	start := time.Now()
	sid := a.sessionID()
	var collected []any // --output-format json --verbose prints every message
	out := func(v any) {
		switch a.inv.format {
		case "stream-json":
			emit(v)
		case "json":
			collected = append(collected, v)
		}
	}
	if a.turn.Stderr != "" {
		fmt.Fprint(os.Stderr, a.turn.Stderr)
	}
	out(map[string]any{
		"type": "system", "subtype": "init", "cwd": a.cwd, "session_id": sid,
		"tools":       []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "NotebookEdit", "TodoWrite"},
		"mcp_servers": []any{}, "model": a.model(), "permissionMode": "default",
		"slash_commands": []string{}, "apiKeySource": "none", "claude_code_version": "2.1.240 (fake)",
		"output_style": "default", "agents": []string{}, "skills": []string{}, "plugins": []any{},
		"uuid": a.id("uuid-"),
	})
	assistant := func(content ...any) {
		out(map[string]any{
			"type": "assistant", "session_id": sid, "parent_tool_use_id": nil, "uuid": a.id("uuid-"),
			"message": map[string]any{
				"id": a.id("msg_"), "type": "message", "role": "assistant", "model": a.model(),
				"content": content, "stop_reason": nil, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
			},
		})
	}
	toolResult := func(id, content string, isError bool) {
		out(map[string]any{
			"type": "user", "session_id": sid, "parent_tool_use_id": nil, "uuid": a.id("uuid-"),
			"message": map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": id, "content": content, "is_error": isError,
			}}},
		})
	}
	var denials []any
	for _, f := range a.turn.Files {
		id := a.id("toolu_")
		abs := filepath.Join(a.cwd, f.Path) // claude's tools take absolute paths
		tool, input := "Write", map[string]any{"file_path": abs, "content": f.Content}
		if f.Op == "append" {
			tool, input = "Edit", map[string]any{"file_path": abs, "old_string": "", "new_string": f.Content, "replace_all": false}
		} else if f.Op == "delete" {
			tool, input = "Bash", map[string]any{"command": shellWords([]string{"rm", f.Path}), "description": "Delete " + f.Path}
		}
		assistant(map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input})
		if (tool == "Bash" && !a.inv.canRun) || (tool != "Bash" && !a.inv.canEdit) {
			denials = append(denials, map[string]any{"tool_name": tool, "tool_use_id": id, "tool_input": input})
			toolResult(id, "Claude requested permissions to use "+tool+", but you haven't granted it yet.", true)
			continue
		}
		if _, err := a.applyFile(f); err != nil {
			return fail("%v", err)
		}
		toolResult(id, "File written: "+f.Path, false)
	}
	for _, c := range a.turn.Commands {
		id := a.id("toolu_")
		input := map[string]any{"command": shellWords(c.Argv), "description": "Run " + c.Argv[0], "run_in_background": c.Background}
		assistant(map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": input})
		if !a.inv.canRun {
			denials = append(denials, map[string]any{"tool_name": "Bash", "tool_use_id": id, "tool_input": input})
			toolResult(id, "Claude requested permissions to use Bash, but you haven't granted it yet.", true)
			continue
		}
		output, code, err := a.runCommand(c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitScript
		}
		toolResult(id, output, code != 0)
	}
	for _, s := range a.turn.Say {
		assistant(map[string]any{"type": "text", "text": s})
	}
	for _, e := range a.turn.Events {
		if a.inv.format == "stream-json" {
			emitRaw(e)
		}
	}
	if a.sleep() {
		// Like claude on SIGINT: end the turn and record a result.
		out(a.claudeResult(sid, start, "error_during_execution", true, "", nil, []string{"Request interrupted by user"}, denials))
		a.flushClaude(collected, "")
		return 130
	}
	if a.turn.NoResult {
		a.flushClaude(collected, "")
		return a.exitCode()
	}
	text, js := a.finalText()
	if a.turn.IsError {
		subtype := a.turn.Subtype
		if subtype == "" {
			subtype = "error_during_execution"
		}
		res := a.claudeResult(sid, start, subtype, true, "", nil, a.turn.Errors, denials)
		out(res)
		a.flushClaude(collected, "")
		return a.exitCode()
	}
	if text != "" {
		assistant(map[string]any{"type": "text", "text": text})
	}
	var structured json.RawMessage
	if a.inv.schema != nil && js != nil {
		structured = js
	}
	out(a.claudeResult(sid, start, "success", false, text, structured, nil, denials))
	a.flushClaude(collected, text)
	return a.exitCode()
}

func (a *actor) claudeResult(sid string, start time.Time, subtype string, isError bool, text string, structured json.RawMessage, errs []string, denials []any) map[string]any {
	if denials == nil {
		denials = []any{}
	}
	t := a.turn
	res := map[string]any{
		"type": "result", "subtype": subtype, "is_error": isError,
		"duration_ms": time.Since(start).Milliseconds(), "duration_api_ms": time.Since(start).Milliseconds(),
		"num_turns": a.numTurns(), "session_id": sid, "total_cost_usd": t.CostUSD,
		"usage": map[string]any{
			"input_tokens": t.InputTokens, "cache_creation_input_tokens": 0,
			"cache_read_input_tokens": t.CacheReadTokens, "output_tokens": t.OutputTokens,
			"server_tool_use": map[string]any{"web_search_requests": 0, "web_fetch_requests": 0},
			"service_tier":    "standard",
		},
		"modelUsage": map[string]any{a.model(): map[string]any{
			"inputTokens": t.InputTokens, "outputTokens": t.OutputTokens,
			"cacheReadInputTokens": t.CacheReadTokens, "cacheCreationInputTokens": 0,
			"webSearchRequests": 0, "costUSD": t.CostUSD, "contextWindow": 200000,
		}},
		"permission_denials": denials, "uuid": a.id("uuid-"),
	}
	if isError {
		if errs == nil {
			errs = []string{}
		}
		res["errors"] = errs // error subtypes carry errors[] and no result
	} else {
		res["result"] = text
		res["stop_reason"] = "end_turn"
		res["terminal_reason"] = "completed"
	}
	if structured != nil {
		res["structured_output"] = structured
	}
	return res
}

// flushClaude prints the non-streaming formats at the end.
func (a *actor) flushClaude(collected []any, text string) {
	switch a.inv.format {
	case "json":
		verbose := false
		for _, x := range a.inv.args {
			verbose = verbose || x == "--verbose"
		}
		if verbose { // --verbose turns json into an array of every message
			emit(collected)
		} else if len(collected) > 0 {
			emit(collected[len(collected)-1])
		}
	case "text":
		if text != "" {
			fmt.Println(text)
		}
	}
}
