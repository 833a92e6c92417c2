package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// The real Claude Code (from npm), against a scripted model on loopback,
// with baton's MCP server registered by `baton install claude` (.mcp.json,
// calling baton from PATH): the model is offered baton's tools as
// mcp__baton__* (deferred behind ToolSearch), calls mcp__baton__pickup,
// and gets the packet's prompt back as the tool result. Claude Code hands
// the model only a tool's structured output when there is one: this test
// is what found that the prompt must be in it.
func TestRealClaudeCodeMCP(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home) // baton on PATH, as .mcp.json calls it
	repo := userRepo(t, env)
	const marker = "Finish the lexer: MCP-PICKUP-7Q2"
	batonRun(t, env, repo, "handoff", "wire the parser", "--next-prompt", marker)
	batonRun(t, env, repo, "install", "claude")
	if b, err := os.ReadFile(filepath.Join(repo, ".mcp.json")); err != nil || !strings.Contains(string(b), `"command": "baton"`) {
		t.Fatalf(".mcp.json = %s, %v", b, err)
	}

	// Claude Code defers MCP tools behind ToolSearch: the model loads
	// pickup by name first, as a real model does, then calls it.
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		results := strings.Count(r.Raw, `"type":"tool_result"`)
		switch {
		case !r.HasTool("ToolSearch") && !r.HasTool("mcp__baton__pickup"):
			return harnesstest.Reply{Text: "Greeting"} // side requests: titles, topics
		case results == 0 && !r.HasTool("mcp__baton__pickup"):
			return harnesstest.Reply{ToolName: "ToolSearch", ToolInput: map[string]any{"query": "select:mcp__baton__pickup", "max_results": 1}}
		case results <= 1:
			return harnesstest.Reply{ToolName: "mcp__baton__pickup", ToolInput: map[string]any{}}
		}
		return harnesstest.Reply{Text: "Picked up the packet."}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Continue from the latest handoff packet", "--output-format", "stream-json", "--verbose",
		"--allowedTools", "mcp__baton__pickup")
	cmd.Dir = repo
	cmd.Env = claudeEnv(env, model.URL)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, tail(out.String()), tail(errb.String()))
	}
	t.Logf("Claude Code %s made %d model requests", testedVersion(t, "claude"), len(model.Requests()))

	offered, returned := false, false
	for _, r := range model.Requests() {
		offered = offered || r.HasTool("mcp__baton__pickup") || strings.Contains(r.Raw, "mcp__baton__pickup")
		returned = returned || strings.Contains(r.Raw, `"tool_result"`) && strings.Contains(r.LastUserText(), marker) &&
			strings.Contains(r.LastUserText(), "# Pickup: wire the parser")
	}
	if !offered {
		t.Errorf("the model was never offered baton's MCP tools; init: %s", firstLine(out.String()))
	}
	if !returned {
		t.Errorf("the mcp__baton__pickup result never reached the model with the packet's prompt\nstdout: %s", tail(out.String()))
	}
	// Claude Code connects MCP servers beside the session's start: on a
	// busy machine its init event still says "pending" for a server that
	// answers the call a moment later (seen on a fresh machine under
	// load). Failed, or missing, is the error.
	if st := mcpStatus(out.String(), "baton"); st != "connected" && (st != "pending" || !returned) {
		t.Errorf("Claude Code reported baton's MCP server %q: %s", st, initEvent(out.String()))
	}
}

// mcpStatus is the status Claude Code's stream-json init event gives the
// MCP server name ("" when the event or the server is missing).
func mcpStatus(stream, name string) string {
	var init struct {
		Servers []struct{ Name, Status string } `json:"mcp_servers"`
	}
	_ = json.Unmarshal([]byte(initEvent(stream)), &init)
	for _, s := range init.Servers {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// initEvent is the stream's system init event, the first line when none.
func initEvent(stream string) string {
	for line := range strings.Lines(stream) {
		if strings.Contains(line, `"subtype":"init"`) {
			return strings.TrimSpace(line)
		}
	}
	return firstLine(stream)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 2000 {
		line = line[:2000]
	}
	return line
}

// The real Codex CLI (from npm), against a scripted Responses model on
// loopback, with baton's MCP server registered by `baton install codex`
// in $CODEX_HOME/config.toml (appended to the user's own settings): the
// model finds baton's tools through Codex's tool_search, calls pickup in
// the mcp__baton namespace, and gets the packet's prompt back.
func TestRealCodexMCP(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome)
	repo := userRepo(t, env)
	const marker = "Finish the lexer: MCP-PICKUP-CODEX"
	batonRun(t, env, repo, "handoff", "wire the parser", "--next-prompt", marker)

	// Codex 0.169 defers MCP tools behind its client-side tool_search: the
	// model searches, Codex answers with the mcp__baton namespace, and the
	// model calls pickup in it, as a real model does.
	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		switch {
		case len(r.FunctionOutputs()) > 0:
			return harnesstest.Reply{Text: "Picked up the packet."}
		case !strings.Contains(r.Raw, `"type":"tool_search_output"`):
			return harnesstest.Reply{Item: map[string]any{"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts_1", "execution": "client",
				"status": "completed", "arguments": map[string]any{"query": "baton pickup", "limit": 8}}}
		case strings.Contains(r.Raw, `"name":"mcp__baton"`) && strings.Contains(r.Raw, `"name":"pickup"`):
			return harnesstest.Reply{Item: map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_fc_1", "namespace": "mcp__baton",
				"name": "pickup", "arguments": "{}", "status": "completed"}}
		}
		return harnesstest.Reply{Text: "tool_search found no baton pickup tool."}
	})
	cfg := writeCodexConfig(t, codexHome, model.URL, repo)
	batonRun(t, env, repo, "install", "codex")
	if b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml")); !strings.HasPrefix(string(b), cfg) || !strings.Contains(string(b), "[mcp_servers.baton]") {
		t.Fatalf("config.toml after install:\n%s", b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "Continue from the latest handoff packet")
	cmd.Dir, cmd.Env = repo, append(env, "OPENAI_API_KEY=test-key")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, tail(out.String()))
	}
	t.Logf("Codex %s made %d model requests", testedVersion(t, "codex"), len(model.Requests()))
	found := false
	for _, r := range model.Requests() {
		found = found || strings.Contains(r.Raw, `"type":"tool_search_output"`) && strings.Contains(r.Raw, `"name":"mcp__baton"`)
	}
	if !found {
		t.Fatalf("Codex's tool_search did not find baton's MCP server\n%s", tail(out.String()))
	}
	returned := false
	for _, r := range model.Requests() {
		for _, o := range r.FunctionOutputs() {
			returned = returned || strings.Contains(o, marker) && strings.Contains(o, "# Pickup: wire the parser")
		}
	}
	if !returned {
		t.Errorf("the pickup result never reached the model with the packet's prompt\n%s", tail(out.String()))
	}
}

// The real Factory Droid (from npm, offline with a custom model pointed at
// a scripted model on loopback), with baton's MCP server registered by
// `baton install droid` in .factory/mcp.json (baton from PATH): the model
// loads baton___pickup through ToolSearch, calls it, and gets the packet's
// prompt back.
func TestRealDroidMCP(t *testing.T) {
	t.Parallel()
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	const marker = "Finish the lexer: MCP-PICKUP-DROID"
	batonRun(t, env, repo, "handoff", "wire the parser", "--next-prompt", marker)

	// Droid 0.225.2 names MCP tools <server>___<tool> and defers them
	// behind its ToolSearch, like Claude Code: the model loads
	// baton___pickup by name, then calls it.
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		results := strings.Count(r.Raw, `"type":"tool_result"`)
		switch {
		case results == 0 && !r.HasTool("baton___pickup"):
			return harnesstest.Reply{ToolName: "ToolSearch", ToolInput: map[string]any{"query": "select:baton___pickup"}}
		case results <= 1:
			return harnesstest.Reply{ToolName: "baton___pickup", ToolInput: map[string]any{}}
		}
		return harnesstest.Reply{Text: "Picked up the packet."}
	})
	writeDroidSettings(t, home, model.URL)
	batonRun(t, env, repo, "install", "droid")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droid, "exec", "--auto", "low", "-m", "custom:scripted-0", "Continue from the latest handoff packet")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("droid exec: %v\n%s", err, tail(out.String()))
	}
	t.Logf("Droid %s made %d model requests", testedVersion(t, "droid"), len(model.Requests()))
	returned := false
	for _, r := range model.Requests() {
		returned = returned || strings.Contains(r.Raw, `"tool_result"`) && strings.Contains(r.LastUserText(), marker)
	}
	if !returned {
		t.Errorf("the pickup result never reached the model with the packet's prompt\n%s", tail(out.String()))
	}
}
