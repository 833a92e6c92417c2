package main

import (
	"bytes"
	"context"
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
	if testing.Short() {
		t.Skip("installs and runs Claude Code")
	}
	claude := harnesstest.NPMBin(t, "@anthropic-ai/claude-code", "2.1.330", "claude")
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
	cmd.Env = append(env, "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, tail(out.String()), tail(errb.String()))
	}
	t.Logf("Claude Code 2.1.330 made %d model requests", len(model.Requests()))

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
	if !strings.Contains(out.String(), `"name":"baton","status":"connected"`) {
		t.Errorf("Claude Code did not report baton's MCP server connected: %s", firstLine(out.String()))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > 2000 {
		line = line[:2000]
	}
	return line
}
