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
	"github.com/baton-agent/baton/internal/install"
)

// The plugin installs, one session per harness: each real harness adds
// this repository's marketplace (pi: installs its package) the way its
// users do, then one session against a scripted model runs the plugin's
// hooks (the session-start context, a write recorded, a loop blocked once
// and ended by its promise) and calls baton's pickup through the plugin's
// MCP server. baton is on PATH, as the plugin expects.

// pluginMarket copies this repository's plugin tree and marketplace files
// (as committed; TestPluginTreeIsGenerated keeps them generated) into a
// fresh directory named baton, as a clone of the repository would be
// (Droid names a marketplace after its directory).
func pluginMarket(t *testing.T) string {
	t.Helper()
	files, err := install.PluginFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "baton")
	for _, p := range install.PluginPaths(files) {
		src := filepath.Join("..", "..", filepath.FromSlash(p))
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a harness command to completion and returns its output.
func runHarness(t *testing.T, dir string, env []string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(out.String()))
	}
	return out.String()
}

// pluginSessionChecks are the checks every plugin session shares: the
// model saw baton's session-start context and the pickup tool's result
// (the packet's Next Prompt, marker), the write was recorded, and the
// loop blocked once and ended on its promise.
func pluginSessionChecks(t *testing.T, env []string, repo, loopID, marker string, raws []string, out string) {
	t.Helper()
	sawContext, sawPickup := false, false
	for _, raw := range raws {
		sawContext = sawContext || strings.Contains(raw, "the working context of this project is in")
		sawPickup = sawPickup || strings.Contains(raw, "# Pickup: greet the user") && strings.Count(raw, marker) >= 1
	}
	if !sawContext {
		t.Errorf("the model never saw baton's session-start context\n%s", tail(out))
	}
	if !sawPickup {
		t.Errorf("the model never got the pickup tool's result\n%s", tail(out))
	}
	if files := batonRun(t, env, repo, "files", "--all", "--json"); !strings.Contains(files, `"hello.txt"`) {
		t.Errorf("the write was not recorded:\n%s\n%s", files, tail(out))
	}
	if st := loopStatus(t, env, repo, loopID); st.Status != "done" || st.Outcome != "DONE" || st.Iteration != 2 {
		t.Errorf("loop after the session = %+v\n%s", st, tail(out))
	}
}

// startPluginLoop writes a packet (whose Next Prompt is marker) and starts
// a loop, returning the loop's id.
func startPluginLoop(t *testing.T, env []string, repo, marker, loopPrompt string) string {
	t.Helper()
	batonRun(t, env, repo, "handoff", "greet the user", "--next-prompt", marker)
	out := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	i := strings.Index(out, `"id": "`)
	if i < 0 {
		t.Fatalf("loop start --json: %s", out)
	}
	id, _, _ := strings.Cut(out[i+len(`"id": "`):], `"`)
	return id
}

// pi installs baton's package from a local copy of the repository (as
// `pi install git:github.com/baton-agent/baton` does from a clone), at
// user level, so no project trust is involved; one print-mode session.
func TestRealPiPackage(t *testing.T) {
	t.Parallel()
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	market := pluginMarket(t)
	target := filepath.Join(repo, "hello.txt")
	const marker, loopPrompt = "Write the greeting file: PI-PLUGIN-4K", "Check the greeting, then say DONE as a promise"

	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case r.ToolResults() == 0 && r.HasTool("codemode"):
			return harnesstest.Reply{ToolName: "codemode", ToolInput: map[string]any{"code": "return await tools.mcp__baton__pickup({})"}}
		case r.ToolResults() == 1 && r.HasTool("write"):
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": target, "content": "hello\n"}}
		case strings.Contains(last, loopPrompt) && !strings.Contains(last, "the working context of this project"):
			return harnesstest.Reply{Text: "The greeting is right.\n<promise>DONE</promise>"}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writePiModels(t, agentDir, model.URL)
	out := runHarness(t, repo, env, 2*time.Minute, pi.bin, "install", market)
	if b, err := os.ReadFile(filepath.Join(agentDir, "settings.json")); err != nil || !strings.Contains(string(b), "baton") {
		t.Fatalf("pi install did not record the package: %s %v\n%s", b, err, out)
	}
	// baton install sees the package and leaves pi alone.
	if inst := batonRun(t, env, repo, "install", "pi"); !strings.Contains(inst, "baton's package is enabled for pi") {
		t.Errorf("baton install pi with the package installed:\n%s", inst)
	}
	loopID := startPluginLoop(t, env, repo, marker, loopPrompt)

	out = runHarness(t, repo, env, 2*time.Minute, pi.bin, "--offline", "--provider", "fake", "--model", "scripted", "-p", "Write a greeting to hello.txt")
	var raws []string
	for _, r := range model.Requests() {
		raws = append(raws, r.Raw)
	}
	t.Logf("pi %s with baton's package made %d model requests", testedVersion(t, "pi"), len(raws))
	pluginSessionChecks(t, env, repo, loopID, marker, raws, out)
}

// Claude Code adds the repository as a marketplace and installs
// baton@baton (user scope); the plugin's hooks, skills and MCP server
// (tools named mcp__plugin_baton_baton__*) work in a -p session.
func TestRealClaudeCodePlugin(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := claudeEnv(gitEnv(home), "")
	repo := userRepo(t, env)
	market := pluginMarket(t)
	target := filepath.Join(repo, "hello.txt")
	const marker, loopPrompt = "Write the greeting file: CLAUDE-PLUGIN-7Q", "Check the greeting, then say DONE as a promise"
	const pickup = "mcp__plugin_baton_baton__pickup"

	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		results := strings.Count(r.Raw, `"type":"tool_result"`)
		switch {
		case !r.HasTool("Write"):
			return harnesstest.Reply{Text: "Greeting"} // side requests: titles, topics
		case strings.Contains(r.LastUserText(), "Stop hook feedback"):
			return harnesstest.Reply{Text: "The greeting is right.\n<promise>DONE</promise>"}
		case results == 0 && !r.HasTool(pickup):
			return harnesstest.Reply{ToolName: "ToolSearch", ToolInput: map[string]any{"query": "select:" + pickup, "max_results": 1}}
		case results <= 1:
			return harnesstest.Reply{ToolName: pickup, ToolInput: map[string]any{}}
		case results == 2:
			return harnesstest.Reply{ToolName: "Write", ToolInput: map[string]any{"file_path": target, "content": "hello\n"}}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	env = claudeEnv(gitEnv(home), model.URL)
	runHarness(t, repo, env, 2*time.Minute, claude, "plugin", "marketplace", "add", market)
	runHarness(t, repo, env, 2*time.Minute, claude, "plugin", "install", "baton@baton")
	if inst := batonRun(t, env, repo, "install", "claude"); !strings.Contains(inst, "baton's plugin is enabled for claude") {
		t.Errorf("baton install claude with the plugin enabled:\n%s", inst)
	}
	if doc := batonDoctor(t, env, repo); !strings.Contains(doc, "claude plugin  enabled in "+filepath.Join(home, ".claude", "settings.json")) {
		t.Errorf("doctor does not report the plugin:\n%s", doc)
	}
	loopID := startPluginLoop(t, env, repo, marker, loopPrompt)

	out := runHarness(t, repo, env, 3*time.Minute, claude, "-p", "Write a greeting to hello.txt", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--allowedTools", pickup)
	var raws []string
	for _, r := range model.Requests() {
		raws = append(raws, r.Raw)
	}
	t.Logf("Claude Code %s with baton's plugin made %d model requests", testedVersion(t, "claude"), len(raws))
	init := initEvent(out)
	for _, want := range []string{`"baton:handoff"`, `"baton:baton-loop"`} {
		if !strings.Contains(out, want) {
			t.Errorf("Claude Code's session lacks %s: %s", want, init)
		}
	}
	// On a busy machine the server may still be connecting at init; the
	// pickup call's result (pluginSessionChecks) proves it then.
	if st := mcpStatus(out, "plugin:baton:baton"); st != "connected" && st != "pending" {
		t.Errorf("Claude Code reported baton's plugin MCP server %q: %s", st, init)
	}
	pluginSessionChecks(t, env, repo, loopID, marker, raws, out)
}

// Droid adds the repository as a marketplace and installs baton@baton;
// it reads the plugin's hooks/hooks.json (the shim sees Droid's plugin
// root and answers as Droid), its skills and mcp.json (tools named
// baton___<tool> behind Droid's ToolSearch).
func TestRealDroidPlugin(t *testing.T) {
	t.Parallel()
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	market := pluginMarket(t)
	target := filepath.Join(repo, "hello.txt")
	const marker, loopPrompt = "Write the greeting file: DROID-PLUGIN-2M", "Check the greeting, then say DONE as a promise"
	const pickup = "baton___pickup"

	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		results := strings.Count(r.Raw, `"type":"tool_result"`)
		switch {
		case strings.Contains(r.LastUserText(), loopPrompt) && results >= 3:
			return harnesstest.Reply{Text: "The greeting is right.\n<promise>DONE</promise>"}
		case results == 0 && !r.HasTool(pickup):
			return harnesstest.Reply{ToolName: "ToolSearch", ToolInput: map[string]any{"query": "select:" + pickup}}
		case results <= 1:
			return harnesstest.Reply{ToolName: pickup, ToolInput: map[string]any{}}
		case results == 2:
			return harnesstest.Reply{ToolName: "Create", ToolInput: map[string]any{"file_path": target, "content": "hello\n"}}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writeDroidSettings(t, home, model.URL)
	runHarness(t, repo, env, 2*time.Minute, droid, "plugin", "marketplace", "add", market)
	runHarness(t, repo, env, 2*time.Minute, droid, "plugin", "install", "baton@baton")
	if inst := batonRun(t, env, repo, "install", "droid"); !strings.Contains(inst, "baton's plugin is enabled for droid") {
		t.Errorf("baton install droid with the plugin enabled:\n%s", inst)
	}
	loopID := startPluginLoop(t, env, repo, marker, loopPrompt)

	out := runHarness(t, repo, env, 3*time.Minute, droid, "exec", "--auto", "low", "-m", "custom:scripted-0", "Write a greeting to hello.txt")
	var raws []string
	for _, r := range model.Requests() {
		raws = append(raws, r.Raw)
	}
	t.Logf("Droid %s with baton's plugin made %d model requests", testedVersion(t, "droid"), len(raws))
	if len(raws) > 0 && !strings.Contains(raws[0], `"name":"baton-loop"`) && !strings.Contains(raws[0], "baton-loop") {
		t.Errorf("Droid did not offer the plugin's skills to the model")
	}
	pluginSessionChecks(t, env, repo, loopID, marker, raws, out)
}

// Codex adds the repository's marketplace (.agents/plugins) and installs
// baton@baton; its manifest names hooks/codex.json, whose hooks run (in a
// trusted project; plugin hooks pass Codex's hook review like any other,
// so this run bypasses it, as baton doctor tells a user to trust them),
// and its MCP server answers through Codex's tool_search.
func TestRealCodexPlugin(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	market := pluginMarket(t)
	const marker, loopPrompt = "Write the greeting file: CODEX-PLUGIN-9F", "Check the greeting, then say DONE as a promise"
	const patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"

	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		switch {
		case strings.Contains(r.LastUserText(), loopPrompt) && strings.Contains(r.Raw, "hook_prompt"):
			return harnesstest.Reply{Text: "The greeting is right.\n<promise>DONE</promise>"}
		case !strings.Contains(r.Raw, `"type":"tool_search_output"`):
			return harnesstest.Reply{Item: map[string]any{"type": "tool_search_call", "id": "ts_1", "call_id": "call_ts_1", "execution": "client",
				"status": "completed", "arguments": map[string]any{"query": "baton pickup", "limit": 8}}}
		case len(r.FunctionOutputs()) == 0:
			return harnesstest.Reply{Item: map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_fc_1", "namespace": "mcp__baton",
				"name": "pickup", "arguments": "{}", "status": "completed"}}
		case !strings.Contains(r.Raw, `"custom_tool_call_output"`):
			return harnesstest.Reply{Item: map[string]any{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_ap_1", "name": "apply_patch",
				"input": patch, "status": "completed"}}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writeCodexConfig(t, codexHome, model.URL, repo)
	runHarness(t, repo, env, 2*time.Minute, codex, "plugin", "marketplace", "add", market)
	runHarness(t, repo, env, 2*time.Minute, codex, "plugin", "add", "baton@baton")
	if inst := batonRun(t, env, repo, "install", "codex"); !strings.Contains(inst, "baton's plugin is enabled for codex") {
		t.Errorf("baton install codex with the plugin enabled:\n%s", inst)
	}
	// Codex skips the plugin's hooks silently until they pass its /hooks
	// review: doctor says so, with the step. It said nothing before.
	var doc struct {
		Warnings []string `json:"warnings"`
	}
	if out := batonRun(t, env, repo, "doctor", "--json", "--no-probe"); json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &doc) != nil ||
		!strings.Contains(strings.Join(doc.Warnings, "\n"), "open /hooks and trust baton's hooks") {
		t.Errorf("baton doctor with Codex's plugin enabled does not say its hooks need trust:\n%s", out)
	}
	loopID := startPluginLoop(t, env, repo, marker, loopPrompt)

	out := runHarness(t, repo, env, 3*time.Minute, codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
		"--sandbox", "workspace-write", "Write a greeting to hello.txt")
	var raws []string
	for _, r := range model.Requests() {
		raws = append(raws, r.Raw)
	}
	t.Logf("Codex %s with baton's plugin made %d model requests", testedVersion(t, "codex"), len(raws))
	if b, err := os.ReadFile(filepath.Join(repo, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	pluginSessionChecks(t, env, repo, loopID, marker, raws, out)
}

// Droid names a local marketplace after its folder, so from a clone named
// baton-main `droid plugin install baton@baton` fails ("Marketplace not
// found"); the command README.md gives for a local clone,
// `droid plugin install baton@<folder>`, installs it whatever the folder
// is called, and `droid plugin marketplace list` shows that name.
func TestRealDroidLocalMarketplaceName(t *testing.T) {
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	clone := filepath.Join(t.TempDir(), "baton-main")
	if err := os.Rename(pluginMarket(t), clone); err != nil {
		t.Fatal(err)
	}
	runHarness(t, repo, env, 2*time.Minute, droid, "plugin", "marketplace", "add", clone)
	if list := runHarness(t, repo, env, time.Minute, droid, "plugin", "marketplace", "list"); !strings.Contains(list, "baton-main") {
		t.Errorf("droid plugin marketplace list does not name the clone's folder:\n%s", list)
	}
	cmd := exec.Command(droid, "plugin", "install", "baton@baton")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Logf("droid plugin install baton@baton from a clone named baton-main now works:\n%s", out)
	}
	runHarness(t, repo, env, 2*time.Minute, droid, "plugin", "install", "baton@baton-main")
	if inst := batonRun(t, env, repo, "install", "droid"); !strings.Contains(inst, "baton's plugin is enabled for droid") {
		t.Errorf("baton install droid after installing the plugin from baton-main:\n%s", inst)
	}
}
