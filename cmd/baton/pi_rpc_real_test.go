package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
	"github.com/baton-agent/baton/internal/testenv"
)

// pi in RPC mode (as an editor or the TUI drives it), with baton's
// extension in a project the user trusted in pi (trust.json, as /trust
// writes it; doctor then finds nothing to fix): a loop blocks once and
// continues with the loop prompt, its promise ends it, and a compaction
// writes a packet whose trigger is "manual" only when pi says so (with
// instructions) and "unknown" for a compaction pi does not describe.
func TestRealPiRPCSession(t *testing.T) {
	t.Parallel()
	pi := realPi(t)
	home, agentDir := t.TempDir(), t.TempDir()
	env := pi.env(append(gitEnv(home), "PI_CODING_AGENT_DIR="+agentDir))
	repo := userRepo(t, env)
	target := filepath.Join(repo, "hello.txt")
	const loopPrompt = "Keep the greeting right, then say DONE as a promise"
	model := harnesstest.NewChatServer(t, func(r *harnesstest.ChatRequest) harnesstest.Reply {
		last := r.LastUserText()
		switch {
		case !r.HasTool("write"):
			return harnesstest.Reply{Text: "Summary: a greeting was written to hello.txt."}
		case strings.Contains(last, loopPrompt) && !strings.Contains(last, "the working context of this project") && r.ToolResults() > 0:
			return harnesstest.Reply{Text: "The greeting is right.\n<promise>DONE</promise>"}
		case r.ToolResults() == 0:
			return harnesstest.Reply{ToolName: "write", ToolInput: map[string]any{"path": target, "content": "hello\n"}}
		}
		return harnesstest.Reply{Text: "I wrote hello.txt."}
	})
	writePiModels(t, agentDir, model.URL)
	// pi 1.x refuses to compact a session it keeps whole ("Nothing to
	// compact"): keep no recent tokens, so this small one is compacted.
	if err := os.WriteFile(filepath.Join(agentDir, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	batonRun(t, env, repo, "install", "pi")
	trust, _ := json.Marshal(map[string]bool{repo: true})
	if err := os.WriteFile(filepath.Join(agentDir, "trust.json"), trust, 0o644); err != nil {
		t.Fatal(err)
	}
	if doc := batonDoctor(t, env, repo); strings.Contains(doc, "not trusted in pi") {
		t.Errorf("doctor reports a pi trust problem in a trusted project:\n%s", doc)
	}
	out0 := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out0[strings.Index(out0, "{"):]), &started); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pi.bin, "--offline", "--provider", "fake", "--model", "scripted", "--mode", "rpc")
	cmd.Dir, cmd.Env = repo, env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var mu sync.Mutex
	var lines []string
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if !testenv.Until(90*time.Second, nil, ok) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("no %s after 90s; pi printed:\n%s\nstderr: %s", what, tail(strings.Join(lines, "\n")), tail(stderr.String()))
		}
	}
	loopDone := func() bool {
		out := batonRun(t, env, repo, "loop", "status", started.ID, "--json")
		return strings.Contains(out, `"status": "done"`)
	}
	responded := func(id string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, l := range lines {
				if strings.Contains(l, `"type":"response"`) && strings.Contains(l, `"id":"`+id+`"`) && strings.Contains(l, `"command":"compact"`) {
					return true
				}
			}
			return false
		}
	}

	send(map[string]any{"id": "p1", "type": "prompt", "message": "Write a greeting to hello.txt"})
	waitFor("loop end", loopDone)
	// pi writes each message's usage in its session file: the loop counted it.
	if st := loopStatus(t, env, repo, started.ID); st.Spent <= 0 {
		t.Errorf("the loop counted no tokens from pi's session file: %+v", st)
	}
	if b, _ := os.ReadFile(target); string(b) != "hello\n" {
		t.Errorf("hello.txt = %q", b)
	}

	packetsWith := func(text string) int {
		n := 0
		files, _ := filepath.Glob(filepath.Join(repo, ".agent", "context", "packets", "*.md"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
				n++
			}
		}
		return n
	}
	agentEnds := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			c := 0
			for _, l := range lines {
				if strings.Contains(l, `"type":"agent_end"`) {
					c++
				}
			}
			return c >= n
		}
	}
	send(map[string]any{"id": "c1", "type": "compact"})
	waitFor("compact response", responded("c1"))
	mu.Lock()
	ends := 0
	for _, l := range lines {
		if strings.Contains(l, `"type":"agent_end"`) {
			ends++
		}
	}
	mu.Unlock()
	// pi refuses to compact twice in a row: one more turn first.
	send(map[string]any{"id": "p2", "type": "prompt", "message": "Anything else?"})
	waitFor("the second turn", agentEnds(ends+1))
	send(map[string]any{"id": "c2", "type": "compact", "customInstructions": "keep the greeting"})
	waitFor("second compact response", responded("c2"))
	if n := packetsWith("(trigger: unknown)"); n != 1 {
		t.Errorf("%d packets with trigger unknown, want 1 (the compaction without instructions)", n)
	}
	if n := packetsWith("(trigger: manual)"); n != 1 {
		t.Errorf("%d packets with trigger manual, want 1 (the compaction with instructions)", n)
	}
	if n := packetsWith("(trigger: auto)"); n != 0 {
		t.Errorf("a compaction pi did not describe was recorded as automatic (%d packets)", n)
	}
}
