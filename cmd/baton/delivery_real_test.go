package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/harnesstest"
	"github.com/baton-agent/baton/internal/sandbox"
)

// The real agents deliver in baton's default box: one delivery each, from
// plan to merge, as a person runs it. The scripted model plays a
// planner, an implementer that edits with the CLI's own edit tool and
// runs a command with its own shell tool, and a reviewer that rejects the
// first round and passes the second; verify runs the user's command on the
// work commit and deploy merges it into main.

// move is what the scripted model asks of the agent next, whatever the
// CLI's wire format.
type move struct {
	text  string // a final answer
	write string // a file to write (with content)
	// content is what write puts in the file.
	content string
	shell   string // a command for the CLI's shell tool
}

// greetingScript decides the delivery's next move from one model request:
// which phase asks (the role in its system prompt), which round (a
// review note among the references), and how many tool results came back
// in this session.
func greetingScript(raw string, results int, reviewer bool) move {
	round2 := strings.Contains(raw, "review-1.md")
	switch {
	case strings.Contains(raw, "You are the planner"):
		return move{text: "1. Write greeting.txt with a greeting.\n2. Check it."}
	case strings.Contains(raw, "You are the reviewer"), reviewer:
		if round2 {
			return move{text: `{"verdict":"pass","summary":"greeting.txt greets the world.","feedback":""}`}
		}
		return move{text: `{"verdict":"not_pass","summary":"greeting.txt greets no one in particular.","feedback":"Greet the world: greeting.txt must say hello, world."}`}
	case strings.Contains(raw, "You are the implementer"):
		switch {
		case results == 0 && !round2:
			return move{write: "greeting.txt", content: "hello\n"}
		case results == 0:
			return move{write: "greeting.txt", content: "hello, world\n"}
		case results == 1:
			return move{shell: "grep -c hello greeting.txt && echo ran-in-the-box"}
		}
		return move{text: "greeting.txt is written and checked."}
	}
	return move{text: "Greeting"} // side requests: titles, topics
}

// realDelivery runs a whole delivery with agent (claude, codex, droid)
// through the real binary, from the repository repo, and checks what it
// left: main holds the second round's greeting, every phase ran as
// scripted, and every agent run ran confined and recorded its model.
func realDelivery(t *testing.T, env []string, repo, agent string, requests func() []string, create ...string) {
	t.Helper()
	batonRun(t, env, repo, append([]string{"delivery", "create", "--repo", ".", "--summary", "Add a greeting", "--agent", agent,
		"--checkpoints", "plan", "--endpoint", "deploy", "--timeout", "5m",
		"--verify", "grep -qx 'hello, world' greeting.txt"}, create...)...)
	var log strings.Builder
	run := func(what string) {
		t.Helper()
		cmd := exec.Command(batonBin, "delivery", "run", "1")
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		log.WriteString("$ baton delivery run 1 (" + what + ")\n" + string(out))
		if err != nil {
			t.Fatalf("delivery run (%s): %v\n%s\n%s", what, err, tail(log.String()), modelTail(requests()))
		}
	}
	defer func() {
		if t.Failed() {
			dumpRunLogs(t, env)
		}
	}()
	run("plan")
	batonRun(t, env, repo, "delivery", "approve", "1")
	for _, what := range []string{"implement, round 1", "review: reject", "implement, round 2", "review: pass", "verify", "deploy"} {
		run(what)
	}

	show := batonRun(t, env, repo, "delivery", "show", "1", "--json")
	var got struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
			Rounds    int    `json:"rounds"`
		} `json:"delivery"`
		AgentRuns []struct {
			Phase  string `json:"phase"`
			Status string `json:"status"`
			Model  string `json:"model"`
			Error  string `json:"error"`
		} `json:"agent_runs"`
	}
	if err := json.Unmarshal([]byte(show), &got); err != nil {
		t.Fatalf("delivery show --json: %v\n%s", err, show)
	}
	if got.Delivery.Phase != "close" || got.Delivery.RunStatus != "succeeded" || got.Delivery.Rounds != 1 {
		t.Errorf("the delivery ended %s/%s after %d round(s), want close/succeeded after 1\n%s", got.Delivery.Phase, got.Delivery.RunStatus, got.Delivery.Rounds, tail(log.String()))
	}
	var phases []string
	for _, r := range got.AgentRuns {
		phases = append(phases, r.Phase)
		if r.Status != "succeeded" || r.Model == "" {
			t.Errorf("%s run: status %s, model %q, error %q", r.Phase, r.Status, r.Model, r.Error)
		}
	}
	if want := "plan implement review implement review"; strings.Join(phases, " ") != want {
		t.Errorf("agent runs %q, want %q", strings.Join(phases, " "), want)
	}
	if n := strings.Count(log.String(), "the agent runs confined"); n != 5 {
		t.Errorf("%d of 5 agent runs said they ran confined\n%s", n, tail(log.String()))
	}
	// The CLI is told to keep its telemetry, error reports, update checks
	// and plugin syncs to itself: the box would refuse each, and every
	// refusal is listed on the pull request. Allowed hosts this offline
	// machine cannot resolve ("no address found") are not refusals of
	// the policy.
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "baton: network:") && strings.Contains(line, "(not on the allowlist)") {
			t.Errorf("the box refused a connection of the %s CLI: %s", agent, line)
		}
	}
	if !strings.Contains(log.String(), "ran-in-the-box") && !strings.Contains(strings.Join(requests(), "\n"), "ran-in-the-box") {
		t.Errorf("the implementer's shell command never ran\n%s", modelTail(requests()))
	}
	cmd := exec.Command("git", "show", "main:greeting.txt")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hello, world\n" {
		t.Errorf("greeting.txt on main = %q, %v\n%s", out, err, tail(log.String()))
	}
}

// modelTail is the end of the last model request, for a failure message.
func modelTail(reqs []string) string {
	if len(reqs) == 0 {
		return "(the model got no request)"
	}
	return "last model request: " + tail(reqs[len(reqs)-1])
}

// boxedAgentEnv is env with the agent's CLI first on PATH, as a user who
// installed it has it.
func boxedAgentEnv(t *testing.T, env []string, bin string) []string {
	t.Helper()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	return withBinOnPath(env, bin)
}

// withBinOnPath is env with bin's directory first on its PATH.
func withBinOnPath(env []string, bin string) []string {
	out := append([]string(nil), env...)
	for i, kv := range out {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			out[i] = "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + p
		}
	}
	return out
}

// anthropicMove turns a move into a Messages API answer with the tools
// of Claude Code (Write, Bash) or Droid (Create, Execute).
func anthropicMove(m move, write, shell string) harnesstest.Reply {
	switch {
	case m.write != "":
		return harnesstest.Reply{ToolName: write, ToolInput: map[string]any{"file_path": m.write, "content": m.content}}
	case m.shell != "":
		// Droid's Execute wants a risk level; Claude Code's Bash ignores it.
		return harnesstest.Reply{ToolName: shell, ToolInput: map[string]any{"command": m.shell, "description": "check the greeting",
			"riskLevelReason": "It only reads a file.", "riskLevel": "low"}}
	}
	return harnesstest.Reply{Text: m.text}
}

var toolResult = regexp.MustCompile(`"type":"tool_result"`)

// claudeGreeter is the scripted model of a Claude Code delivery
// (greetingScript), its requests, and the tools Claude Code offered.
func claudeGreeter(t *testing.T) (url string, requests func() []string, tools *[]string) {
	t.Helper()
	tools = new([]string)
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		if len(r.Tools) > len(*tools) {
			*tools = (*tools)[:0]
			for _, tl := range r.Tools {
				*tools = append(*tools, tl.Name)
			}
		}
		if !r.HasTool("Write") {
			return harnesstest.Reply{Text: "Greeting"} // side requests: titles, topics
		}
		m := greetingScript(r.Raw, len(toolResult.FindAllString(r.Raw, -1)), false)
		if m.text != "" && strings.Contains(r.Raw, "You are the reviewer") && r.HasTool("StructuredOutput") {
			// --json-schema: the answer is the StructuredOutput tool's input.
			var v map[string]any
			_ = json.Unmarshal([]byte(m.text), &v)
			if !strings.Contains(r.Raw, `"name":"StructuredOutput"`) || !strings.Contains(r.LastUserText(), "[tool_result]") {
				return harnesstest.Reply{ToolName: "StructuredOutput", ToolInput: v}
			}
		}
		return anthropicMove(m, "Write", "Bash")
	})
	return model.URL, func() []string {
		var raws []string
		for _, r := range model.Requests() {
			raws = append(raws, r.Raw)
		}
		return raws
	}, tools
}

// Claude Code 2.1.332 on a fresh HOME: nothing in ~/.claude before the
// delivery, its own settings and sessions kept after it.
func TestRealClaudeDelivery(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	url, requests, tools := claudeGreeter(t)
	// As a user runs it: baton, not the user, turns off what Claude Code
	// sends besides its model requests.
	env = boxedAgentEnv(t, append(env, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=test-key"), claude)
	realDelivery(t, env, repo, "claude", requests)
	// Claude Code keeps its sessions, in the agent home baton keeps for
	// it, and writes nothing into the user's own ~/.claude.
	if sessions, _ := filepath.Glob(filepath.Join(data, "agent-home", ".claude", "projects", "*", "*.jsonl")); len(sessions) < 5 {
		t.Errorf("Claude Code kept %d session transcripts in the agent home, want one per agent run (5)", len(sessions))
	}
	if _, err := os.Stat(filepath.Join(home, ".claude")); err == nil {
		t.Error("a boxed Claude Code wrote the user's ~/.claude")
	}
	// baton pre-approves only tools this Claude Code offers.
	for _, name := range strings.Split(agentrun.DefaultClaudeAllowedTools, ",") {
		if !slices.Contains(*tools, name) {
			t.Errorf("baton allows %s, which Claude Code %s does not offer; it offers %q", name, testedVersion(t, "claude"), *tools)
		}
	}
}

// codexGreeter is the scripted model of a Codex delivery
// (greetingScript), its requests, and the tools Codex offered.
func codexGreeter(t *testing.T) (url string, requests func() []string, tools *[]string) {
	t.Helper()
	tools = new([]string)
	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		*tools = r.ToolNames()
		results := strings.Count(r.Raw, `"type":"function_call_output"`) + strings.Count(r.Raw, `"type":"custom_tool_call_output"`)
		m := greetingScript(r.Raw, results, false)
		switch {
		case m.write != "":
			patch := "*** Begin Patch\n*** Add File: " + m.write + "\n+" + strings.TrimSuffix(m.content, "\n") + "\n*** End Patch\n"
			if results == 0 && strings.Contains(r.Raw, "review-1.md") {
				patch = "*** Begin Patch\n*** Update File: " + m.write + "\n@@\n-hello\n+" + strings.TrimSuffix(m.content, "\n") + "\n*** End Patch\n"
			}
			return harnesstest.Reply{Item: map[string]any{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_ap_1", "name": "apply_patch",
				"input": patch, "status": "completed"}}
		case m.shell != "":
			return harnesstest.Reply{ToolName: "exec_command", ToolInput: map[string]any{"cmd": m.shell}}
		}
		return harnesstest.Reply{Text: m.text}
	})
	return model.URL, func() []string {
		var raws []string
		for _, r := range model.Requests() {
			raws = append(raws, r.Raw)
		}
		return raws
	}, tools
}

// Codex 0.171.0, told it is already in a box: its own sandbox
// (bubblewrap) cannot start inside baton's, so its shell and its patches
// work only with baton's confinement in charge.
func TestRealCodexDelivery(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home, data, codexHome := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(gitEnv(home, "BATON_DATA_DIR="+data), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	url, requests, tools := codexGreeter(t)
	writeCodexConfig(t, codexHome, url, repo)
	env = boxedAgentEnv(t, env, codex)
	t.Cleanup(func() { t.Logf("Codex %s offered the tools %q", testedVersion(t, "codex"), *tools) })
	realDelivery(t, env, repo, "codex", requests)
}

// Droid 0.225.2, which reads /proc/self at start.
func TestRealDroidDelivery(t *testing.T) {
	t.Parallel()
	droid := realDroid(t)
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	var slowFirst sync.Once
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		if !r.HasTool("Create") {
			return harnesstest.Reply{Text: "Greeting"}
		}
		// Droid posts its event log every 20 s, whatever its traces are
		// told: the first run outlives that timer, so a post that would
		// leave the box is refused and the check below sees it. A sleep
		// because the timer is Droid's own, with nothing to wait on.
		slowFirst.Do(func() { time.Sleep(21 * time.Second) })
		return anthropicMove(greetingScript(r.Raw, len(toolResult.FindAllString(r.Raw, -1)), false), "Create", "Execute")
	})
	writeDroidSettings(t, home, model.URL)
	env = boxedAgentEnv(t, env, droid)
	realDelivery(t, env, repo, "droid", func() []string {
		var raws []string
		for _, r := range model.Requests() {
			raws = append(raws, r.Raw)
		}
		return raws
	}, "--model", "custom:scripted-0")
}

// dumpRunLogs logs the raw output of every agent run, for a failure.
func dumpRunLogs(t *testing.T, env []string) {
	t.Helper()
	var data string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BATON_DATA_DIR="); ok {
			data = v
		}
	}
	logs, _ := filepath.Glob(filepath.Join(data, "runs", "*", "*", "*.*"))
	for _, l := range logs {
		if strings.HasSuffix(l, "prompt.txt") {
			continue
		}
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", strings.TrimPrefix(l, data), tail(string(b)))
	}
}

// pi 1.5.2, which has no sandbox of its own: its agent directory (models,
// sessions) is kept in the agent home, and it reaches the model API its
// models.json names.
func TestRealPiDelivery(t *testing.T) {
	pi := realPi(t)
	home, data, agentDir := t.TempDir(), t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home, "BATON_DATA_DIR="+data), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		m := greetingScript(r.Raw, r.ToolResults(), false)
		switch {
		case m.write != "":
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": m.write, "content": m.content}}
		case m.shell != "":
			return harnesstest.Reply{ToolName: "bash", ToolInput: map[string]any{"command": m.shell}}
		}
		return harnesstest.Reply{Text: m.text}
	})
	writePiModels(t, agentDir, model.URL)
	env = boxedAgentEnv(t, env, pi.bin)
	realDelivery(t, env, repo, "pi", func() []string {
		var raws []string
		for _, r := range model.Requests() {
			raws = append(raws, r.Raw)
		}
		return raws
	})
	if sessions, _ := filepath.Glob(filepath.Join(data, "agent-home", ".pi", "agent", "sessions", "*")); len(sessions) == 0 {
		t.Error("pi kept no session in the agent home")
	}
	if _, err := os.Stat(filepath.Join(agentDir, "sessions")); err == nil {
		t.Error("a boxed pi wrote sessions into the user's agent directory")
	}
}
