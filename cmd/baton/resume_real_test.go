package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/harnesstest"
)

// A person's message reaches a running agent by stopping its run and
// resuming the same session with the message (agentrun.Spec.Resume):
// the real Claude Code, stopped in the middle of its work, continues its
// session, and the model's next request holds the earlier conversation
// and then the message.
func TestRealClaudeResumesWithAMessage(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case strings.Contains(last, "Use tabs, not spaces"):
			return harnesstest.Reply{Text: "Understood: tabs."}
		case strings.Contains(last, "[tool_result]"):
			midWork(started, release)
			return harnesstest.Reply{Text: "Done reading."}
		}
		return harnesstest.Reply{ToolName: "Read", ToolInput: map[string]any{"file_path": repo + "/README.md"}}
	})
	defer close(release)
	spec := agentrun.Spec{Agent: "claude", Prompt: "Format the README", Dir: repo, Env: withBinOnPath(claudeEnv(env, model.URL), claude)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resumeWithMessage(t, ctx, spec, started)
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	checkHeardAfter(t, last.Raw, last.LastUserText(), "README.md")
}

// The same with the real Codex: codex exec resume <thread> continues the
// thread a stopped run began.
func TestRealCodexResumesWithAMessage(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	home, codexHome := t.TempDir(), t.TempDir()
	env := append(gitEnv(home), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	model := harnesstest.NewResponsesToolServer(t, func(r *harnesstest.ResponsesRequest) harnesstest.Reply {
		switch {
		case strings.Contains(r.LastUserText(), "Use tabs, not spaces"):
			return harnesstest.Reply{Text: "Understood: tabs."}
		case len(r.FunctionOutputs()) > 0:
			midWork(started, release)
			return harnesstest.Reply{Text: "Done reading."}
		}
		return harnesstest.Reply{ToolName: "exec_command", ToolInput: map[string]any{"cmd": "cat README.md"}}
	})
	defer close(release)
	writeCodexConfig(t, codexHome, model.URL, repo)
	spec := agentrun.Spec{Agent: "codex", Prompt: "Format the README", Dir: repo, Env: withBinOnPath(env, codex), LogDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resumeWithMessage(t, ctx, spec, started)
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	checkHeardAfter(t, last.Raw, last.LastUserText(), "cat README.md")
}

// The same with the real pi: pi --session <id> continues the session a
// stopped run began, and its scripted model's next request holds the
// earlier conversation, then the message.
func TestRealPiResumesWithAMessage(t *testing.T) {
	t.Parallel()
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		switch {
		case strings.Contains(r.LastUserText(), "Use tabs, not spaces"):
			return harnesstest.Reply{Text: "Understood: tabs."}
		case r.ToolResults() > 0:
			midWork(started, release)
			return harnesstest.Reply{Text: "Done reading."}
		}
		return harnesstest.Reply{ToolName: "bash", ToolInput: map[string]any{"command": "cat README.md"}}
	})
	defer close(release)
	writePiModels(t, agentDir, model.URL)
	spec := agentrun.Spec{Agent: "pi", Prompt: "Format the README", Dir: repo, Env: withBinOnPath(env, pi.bin), LogDir: t.TempDir(),
		ExtraArgs: []string{"--provider", "fake", "--model", "scripted"}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resumeWithMessage(t, ctx, spec, started)
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	checkHeardAfter(t, last.Raw, last.LastUserText(), "cat README.md")
}

// resumeWithMessage runs spec, stops it once started fires, and resumes
// its session with a person's message, in a log directory of its own: the
// resumed run must end in the same session with the scripted answer.
func resumeWithMessage(t *testing.T, ctx context.Context, spec agentrun.Spec, started <-chan struct{}) {
	t.Helper()
	first := runStopped(t, ctx, spec, started)
	if first.SessionID == "" {
		t.Fatalf("the stopped run reported no session: %+v", first)
	}
	spec.Prompt, spec.Resume, spec.LogDir = "A person watching says: Use tabs, not spaces.", first.SessionID, t.TempDir()
	second, err := agentrun.Run(ctx, spec)
	if err != nil {
		t.Fatalf("resumed run: %v (%+v)", err, second)
	}
	if second.SessionID != first.SessionID || second.FinalText != "Understood: tabs." {
		t.Errorf("resumed run = session %q, final %q; want session %q, %q", second.SessionID, second.FinalText, first.SessionID, "Understood: tabs.")
	}
}

// checkHeardAfter checks the model's request after the message: it holds
// the conversation so far (the prompt and earlier, what the agent did)
// and the message as its last user turn.
func checkHeardAfter(t *testing.T, raw, lastUser, earlier string) {
	t.Helper()
	if !strings.Contains(raw, "Format the README") || !strings.Contains(raw, earlier) {
		t.Errorf("the model's request after the message lost the earlier conversation:\n%s", tail(raw))
	}
	if !strings.Contains(lastUser, "Use tabs, not spaces") {
		t.Errorf("the message is not the model's last user turn: %q", lastUser)
	}
}

// midWork holds a scripted model's answer while the agent is in the
// middle of its work: it says so on started (once; later calls find it
// full) and waits until release closes, after the test has stopped the
// run.
func midWork(started chan<- struct{}, release <-chan struct{}) {
	select {
	case started <- struct{}{}:
	default:
	}
	<-release
}

// runStopped runs spec until the model signals started (the agent is in
// the middle of its work), then stops it as a person's message does, and
// returns what the stopped run reported.
func runStopped(t *testing.T, ctx context.Context, spec agentrun.Spec, started <-chan struct{}) *agentrun.Result {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan *agentrun.Result, 1)
	var err error
	go func() {
		var res *agentrun.Result
		res, err = agentrun.Run(runCtx, spec)
		done <- res
	}()
	select {
	case <-started:
	case res := <-done:
		t.Fatalf("the run ended before the model was asked the second time: %v: %+v", err, res)
	}
	stop()
	return <-done
}

// The whole path through the real binary: a person runs `baton delivery
// say` while the real Claude Code plans; the worker (`baton delivery run`)
// stops it and resumes its session with the message; the scripted model's
// next request holds the conversation so far and then the message, and
// the plan finishes in the same session.
func TestRealClaudeDeliveryHearsAMessage(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		switch {
		case !r.HasTool("Write"):
			return harnesstest.Reply{Text: "Greeting"} // side requests: titles, topics
		case strings.Contains(r.LastUserText(), "Use tabs, not spaces."):
			return harnesstest.Reply{Text: "1. Write greeting.txt, indented with tabs."}
		}
		// The plan is under way until the person's message stops it.
		midWork(started, release)
		return harnesstest.Reply{Text: "1. Write greeting.txt."}
	})
	env = boxedAgentEnv(t, append(env, "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=test-key"), claude)
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Add a greeting", "--agent", "claude", "--timeout", "5m")
	cmd := exec.Command(batonBin, "delivery", "run", "1")
	cmd.Dir, cmd.Env = repo, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("delivery run ended before the plan was under way: %v\n%s", err, tail(out.String()))
	case <-time.After(3 * time.Minute):
		t.Fatalf("the plan never reached the model\n%s", tail(out.String()))
	}
	batonRun(t, env, repo, "delivery", "say", "1", "Use tabs, not spaces.")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("delivery run: %v\n%s", err, tail(out.String()))
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the plan did not finish after the message\n%s", tail(out.String()))
	}
	var last *harnesstest.AnthropicRequest
	for _, r := range model.Requests() {
		if r.HasTool("Write") {
			last = &r
		}
	}
	if last == nil || !strings.Contains(last.LastUserText(), "Use tabs, not spaces.") || !strings.Contains(last.Raw, "Add a greeting") {
		t.Fatalf("the model's last request is not the conversation followed by the message\n%s", tail(out.String()))
	}
	var show struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
		} `json:"delivery"`
		Runs []struct {
			Phase  string `json:"phase"`
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"agent_runs"`
	}
	s := batonRun(t, env, repo, "delivery", "show", "1", "--json")
	if err := json.Unmarshal([]byte(s), &show); err != nil {
		t.Fatalf("delivery show --json: %v\n%s", err, s)
	}
	if show.Delivery.Phase != "plan" || show.Delivery.RunStatus != "succeeded" {
		t.Errorf("the delivery is %s/%s, want its plan succeeded", show.Delivery.Phase, show.Delivery.RunStatus)
	}
	// The stopped run says which session was resumed; the model's last
	// request, holding the first run's conversation, shows it was.
	if r := show.Runs; len(r) != 2 || r[0].Status != "canceled" || !regexp.MustCompile(`person's message; the agent's session [0-9a-f-]{36} was resumed with it`).MatchString(r[0].Error) ||
		r[1].Status != "succeeded" {
		t.Errorf("plan's agent runs = %+v, want the stopped one and its session resumed", r)
	}
}
