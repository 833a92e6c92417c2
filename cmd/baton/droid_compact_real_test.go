package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/harnesstest"
)

// droidRPC drives `droid exec --input-format stream-jsonrpc`: Factory's
// JSON-RPC on stdin and stdout.
type droidRPC struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan map[string]any
	n     int
	log   strings.Builder
}

func (d *droidRPC) request(method string, params map[string]any) string {
	d.t.Helper()
	d.n++
	id := fmt.Sprintf("req-%d", d.n)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "type": "request", "factoryApiVersion": "1.0.0", "factoryProtocolVersion": "1.220.0",
		"id": id, "method": method, "params": params})
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatal(err)
	}
	return id
}

// wait reads messages until one satisfies ok, or the deadline.
func (d *droidRPC) wait(what string, ok func(map[string]any) bool) map[string]any {
	d.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		select {
		case m, open := <-d.lines:
			if !open {
				d.t.Fatalf("droid closed its output waiting for %s\n%s", what, tail(d.log.String()))
			}
			if ok(m) {
				return m
			}
		case <-deadline:
			d.t.Fatalf("no %s from droid\n%s", what, tail(d.log.String()))
		}
	}
}

func responseTo(id string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["id"] == id && m["type"] == "response" }
}

// The real Droid compacting a session (a manual compaction, the only kind
// Droid hooks: `droid exec --input-format stream-jsonrpc` and
// droid.compact_session) while a loop is active: Droid runs SessionStart
// (source resume) before PreCompact and no source=compact start after it,
// so the next Stop that blocks tells the agent which packet holds what the
// compaction removed, once, and the loop then ends on its promise.
func TestRealDroidCompaction(t *testing.T) {
	t.Parallel()
	droid := realDroid(t)
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	const loopPrompt = "Keep polishing the greeting"
	model := harnesstest.NewAnthropicServer(t, func(r *harnesstest.AnthropicRequest) harnesstest.Reply {
		if strings.Contains(r.LastUserText(), "the conversation was compacted") {
			return harnesstest.Reply{Text: "Read the saved packet.\n<promise>DONE</promise>"}
		}
		return harnesstest.Reply{Text: "Polished."}
	})
	writeDroidSettings(t, home, model.URL)
	batonRun(t, env, repo, "install", "droid", "--no-mcp")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, droid, "exec", "--input-format", "stream-jsonrpc", "--output-format", "stream-jsonrpc", "--auto", "low", "-m", "custom:scripted-0")
	cmd.Dir, cmd.Env = repo, env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &droidRPC{t: t, in: in, lines: make(chan map[string]any, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				d.log.WriteString(sc.Text() + "\n")
				d.lines <- m
			}
		}
		close(d.lines)
	}()
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	turnDone := func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		n, _ := p["notification"].(map[string]any)
		return n["type"] == "agent_turn_completed"
	}

	id := d.request("droid.initialize_session", map[string]any{"machineId": "test", "cwd": repo, "modelId": "custom:scripted-0"})
	d.wait("initialize_session's answer", responseTo(id))
	d.request("droid.add_user_message", map[string]any{"text": "Say hello"})
	d.wait("the first turn to end", turnDone)

	// A loop started between turns binds at the next stop; the compaction
	// comes first.
	loopOut := batonRun(t, env, repo, "loop", "start", "--json", "--max-iterations", "5", loopPrompt)
	var started struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(loopOut[strings.Index(loopOut, "{"):]), &started); err != nil {
		t.Fatal(err)
	}
	id = d.request("droid.compact_session", map[string]any{})
	d.wait("compact_session's answer", responseTo(id))
	logText := d.log.String()
	resume, pre := strings.Index(logText, `"hookEventName":"SessionStart","hookMatcher":"resume"`), strings.Index(logText, `"hookEventName":"PreCompact"`)
	if resume < 0 || pre < 0 || resume > pre || strings.Contains(logText, `"hookMatcher":"compact"`) {
		t.Errorf("Droid's compaction hooks were not SessionStart(resume) then PreCompact (resume at %d, pre-compact at %d)", resume, pre)
	}
	var loop struct {
		Loop struct {
			CompactedPacket string `json:"compacted_packet"`
		} `json:"loop"`
	}
	status := batonRun(t, env, repo, "loop", "status", started.ID, "--json")
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &loop); err != nil || loop.Loop.CompactedPacket == "" {
		t.Fatalf("after compaction the loop names no saved packet: %s (%v)", status, err)
	}
	saved := loop.Loop.CompactedPacket

	d.request("droid.add_user_message", map[string]any{"text": "Go on"})
	d.wait("the turn after compaction to end", turnDone)

	told := 0
	for _, r := range model.Requests() {
		if strings.Contains(r.LastUserText(), loopPrompt) && strings.Contains(r.LastUserText(), "baton pickup "+saved) {
			told++
		}
	}
	if told != 1 {
		t.Errorf("the loop prompt named the saved packet %s in %d request(s), want 1\n%s", saved, told, tail(d.log.String()))
	}
	var done struct {
		Loop struct {
			Status, Outcome, CompactedPacket string
		} `json:"loop"`
	}
	status = batonRun(t, env, repo, "loop", "status", started.ID, "--json")
	if err := json.Unmarshal([]byte(status[strings.Index(status, "{"):]), &done); err != nil {
		t.Fatal(err)
	}
	if done.Loop.Status != "done" || done.Loop.Outcome != "DONE" || done.Loop.CompactedPacket != "" {
		t.Errorf("loop after the session = %+v", done.Loop)
	}
	if _, err := os.Stat(filepath.Join(repo, ".agent", "context", "packets", saved+".md")); err != nil {
		t.Errorf("the saved packet is not in the store: %v", err)
	}
}
