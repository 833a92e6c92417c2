package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/testenv"
)

// An explicit root that does not exist is an error, from --root or
// BATON_ROOT, for init and for every command that would create the store;
// nothing is created.
func TestExplicitRootMustExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := filepath.Join(e.dir, "nonexistent")
	for _, c := range []struct {
		name string
		vars map[string]string
		args []string
	}{
		{"env, handoff", map[string]string{"BATON_ROOT": missing}, []string{"handoff", "x"}},
		{"flag, handoff", nil, []string{"--root", missing, "handoff", "x"}},
		{"flag, init", nil, []string{"--root", missing, "init"}},
		{"flag, files add", nil, []string{"--root", missing, "files", "add", "a.go"}},
		{"env, loop start", map[string]string{"BATON_ROOT": missing}, []string{"loop", "start", "go on"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.vars = c.vars
			if e.vars == nil {
				e.vars = map[string]string{}
			}
			r := e.run("", "", c.args...)
			if r.code != 1 || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, "does not exist") {
				t.Errorf("baton %v = %d\nstderr: %s", c.args, r.code, r.stderr)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("baton %v created %s", c.args, missing)
			}
		})
	}
	e.vars = map[string]string{}
	// An existing directory is still fine, git or not.
	e.ok("", "", "--root", e.dir, "init")
}

// files add refuses a path that does not exist unless told it is still to
// be written; files refuses a negative --limit.
func TestFilesAddChecksPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	r := e.run("", "", "files", "add", "nonexistent.go")
	if r.code != 1 || !strings.Contains(r.stderr, "nonexistent.go does not exist") || !strings.Contains(r.stderr, "--missing-ok") {
		t.Errorf("files add nonexistent.go = %d\nstderr: %s", r.code, r.stderr)
	}
	if out := e.ok("", "", "files", "--all").stdout; strings.Contains(out, "nonexistent.go") {
		t.Errorf("a refused path was recorded:\n%s", out)
	}
	e.ok("", "", "files", "add", "--missing-ok", "planned.go")
	e.ok("", "", "files", "add", "README.md")
	if out := e.ok("", "", "files", "--all").stdout; !strings.Contains(out, "planned.go") || !strings.Contains(out, "README.md") {
		t.Errorf("files --all lacks the recorded paths:\n%s", out)
	}
	r = e.run("", "", "files", "--limit", "-1")
	if r.code != 2 || !strings.Contains(r.stderr, "a limit of -1 files") {
		t.Errorf("files --limit -1 = %d\nstderr: %s", r.code, r.stderr)
	}
}

// A missing agent is named once, with what to do, not followed by the
// same fact in Go's words.
func TestMissingAgentMessageSaysItOnce(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: t\nnext: execute\n---\n# Task\n\nDo it.\n")
	// Agents are looked up on the PATH they get: one with git only.
	bin := t.TempDir()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	e.agentEnv = append(e.agentEnv, "PATH="+bin)
	e.ok("", "", "run", "init", "--guard", "true")
	r := e.run("", "", "run", "step", "--agent", "claude")
	if !strings.Contains(r.stderr+r.stdout, "claude is not installed") {
		t.Fatalf("run step with no claude = %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, repeat := range []string{"agent not installed", "executable file not found"} {
		if strings.Contains(r.stderr+r.stdout, repeat) {
			t.Errorf("the message repeats itself (%q):\n%s%s", repeat, r.stdout, r.stderr)
		}
	}
}

// run loop and run step --json print one object with the outcome; the
// exit codes stay what they are.
func TestRunLoopJSON(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: hard\nnext: execute\n---\n# Hard task\n\nDo the hard thing.\n")
	fake := agenttest.New(t)
	fake.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{{Final: answer("retry", "still hard")}}, RepeatLast: true})
	e.useFake(fake)
	e.ok("", "", "run", "init", "--guard", "true")
	r := e.run("", "", "run", "loop", "--quiet", "--json")
	var v struct {
		Outcome    string `json:"outcome"`
		StuckNode  string `json:"stuck_node"`
		Iterations int    `json:"iterations"`
		Steps      []struct {
			Iter   int    `json:"iter"`
			Node   string `json:"node"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("run loop --json printed %q: %v", r.stdout, err)
	}
	if r.code != ExitStuck || v.Outcome != "stuck" || v.StuckNode != "root" || v.Iterations != 3 || len(v.Steps) != 3 || v.Steps[2].Status != "retry" {
		t.Errorf("run loop --json = exit %d, %+v", r.code, v)
	}
	r = e.run("", "", "run", "step", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != ExitStuck || v.Outcome != "stuck" || len(v.Steps) != 0 {
		t.Errorf("run step --json on a stuck run = exit %d, %+v, %v\n%s", r.code, v, err, r.stdout)
	}
}

// What git sees of a used store is what a team shares: root.json, packets
// and loops; the session log, the foreground loop and the touch log stay
// on this machine.
func TestStoreGitignoreKeepsLocalState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.vars["BATON_SESSION_ID"] = "s1"
	e.ok("", "", "files", "add", "README.md")
	e.ok("", "", "loop", "start", "--max-iterations", "3", "keep going")
	e.ok("", "", "handoff", "carry on", "--next-prompt", "go on")
	e.ok("", `{"session_id":"s1","cwd":"`+e.dir+`","source":"startup","transcript_path":"/tmp/t.jsonl"}`, "hook", "session-start", "--harness", "claude")
	var shared, local []string
	for _, l := range strings.Split(e.git("status", "--porcelain", "--untracked-files=all"), "\n") {
		path := strings.TrimSpace(strings.TrimPrefix(l, "??"))
		switch {
		case path == "":
		case strings.HasPrefix(path, ".agent/context/indexes/"), strings.HasSuffix(path, ".lock"):
			local = append(local, path)
		default:
			shared = append(shared, path)
		}
	}
	if len(local) > 0 {
		t.Errorf("git would commit machine-local files: %v", local)
	}
	want := []string{".agent/context/.gitignore", ".agent/context/root.json", ".agent/context/packets/", ".agent/context/loops/"}
	for _, w := range want {
		found := false
		for _, p := range shared {
			found = found || strings.HasPrefix(p, w)
		}
		if !found {
			t.Errorf("git does not see %s: %v", w, shared)
		}
	}
}

// watch on a phase no worker takes says so, and how to run it, instead of
// waiting in silence.
func TestDeliveryWatchSaysWhenNothingRuns(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Nobody runs this", "--agent", "claude", "--checkpoints", "none")
	defer func(d time.Duration) { watchQueuedNotice = d }(watchQueuedNotice)
	watchQueuedNotice = 300 * time.Millisecond
	// watch runs until the notice, then a while longer to show it comes
	// once: a fixed 2 s for all of it ran out on a loaded machine.
	noticed, fire := testenv.Signal()
	e.stderr = &lineWatch{want: "no worker has started it", fire: fire}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-noticed:
			// Three more notice intervals (18 polls at 50ms): long enough
			// for a second notice to show if watch repeated it.
			time.Sleep(3 * watchQueuedNotice)
			cancel()
		case <-ctx.Done():
		}
	}()
	r := e.runCtx(ctx, "", "", "delivery", "watch", "1", "--interval", "50ms")
	if !strings.Contains(r.stderr, "plan of delivery") || !strings.Contains(r.stderr, "no worker has started it") || !strings.Contains(r.stderr, "baton worker") || !strings.Contains(r.stderr, "baton delivery run ") {
		t.Errorf("watch with no worker: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "no worker has started it"); n != 1 {
		t.Errorf("the notice came %d times", n)
	}
}

// A delivery that failed because its agent is missing switches agents on
// retry, and runs with the new one.
func TestDeliveryRetryChangesAgent(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Switch agents", "--agent", "command:"+filepath.Join(e.dir, "no-such-agent.sh"), "--checkpoints", "plan")
	r := e.run("", "", "delivery", "run", "1")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "not found") {
		t.Fatalf("run with a missing agent = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "planner.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho '1. Do it.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = e.ok("", "", "delivery", "retry", "1", "--agent", "command:/nowhere/agent.sh")
	if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "/nowhere/agent.sh") {
		t.Errorf("retry with another missing agent does not warn:\n%s", r.stderr)
	}
	if r := e.run("", "", "delivery", "run", "1"); r.code == 0 {
		t.Fatalf("run with the second missing agent succeeded")
	}
	e.ok("", "", "delivery", "retry", "1", "--agent", "command:"+script)
	e.ok("", "", "delivery", "run", "1")
	r = e.ok("", "", "delivery", "show", "1", "--json")
	var v struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
			Config    struct {
				Agent string `json:"agent"`
			} `json:"config"`
		} `json:"delivery"`
		PhaseLog []struct {
			Note string `json:"note"`
		} `json:"phase_log"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Delivery.Config.Agent != "command:"+script || v.Delivery.Phase != "plan" || v.Delivery.RunStatus != "succeeded" {
		t.Errorf("after retry --agent: %+v", v.Delivery)
	}
	found := false
	for _, l := range v.PhaseLog {
		found = found || strings.Contains(l.Note, "agent now command:"+script)
	}
	if !found {
		t.Errorf("the phase log does not record the agent change: %+v", v.PhaseLog)
	}
	if r := e.run("", "", "delivery", "approve", "1", "--agent", "codex"); r.code != 2 {
		t.Errorf("approve --agent = %d, want a usage error", r.code)
	}
}

// `delivery run` takes retry's --agent, --model and --agent-arg: they
// change how the delivery runs from this run on, recorded in the phase
// log, and a bad agent is refused before the phase is claimed.
func TestDeliveryRunChangesAgent(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Switch agents at run", "--agent", "command:"+filepath.Join(e.dir, "no-such-agent.sh"), "--checkpoints", "plan")
	script := filepath.Join(t.TempDir(), "planner.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho '1. Do it.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := e.run("", "", "delivery", "run", "1", "--agent", "vim"); r.code == 0 || !strings.Contains(r.stderr, "vim") {
		t.Errorf("run --agent vim = %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.ok("", "", "delivery", "show", "1"); !strings.Contains(r.stdout, "plan/pending") || !strings.Contains(r.stdout, "no-such-agent.sh") {
		t.Errorf("a refused run changed the delivery:\n%s", r.stdout)
	}
	r := e.ok("", "", "delivery", "run", "1", "--agent", "command:"+script, "--model", "small", "--agent-arg=--fast")
	if !strings.Contains(r.stdout, "is plan/succeeded") {
		t.Errorf("run --agent = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "show", "1")
	if !strings.Contains(r.stdout, "agent:       command:"+script+", model small --fast") || !strings.Contains(r.stdout, "(agent now command:"+script+", model small)") {
		t.Errorf("after run --agent --model --agent-arg, show says:\n%s", r.stdout)
	}
	// retry and run share the flags and what they say of them.
	for _, cmd := range []string{"retry", "run"} {
		help := e.ok("", "", "delivery", cmd, "--help").stdout
		for _, flag := range []string{"--agent string", "--model string", "--agent-arg stringArray", "change how the delivery runs from this\n" + cmd + " on"} {
			if !strings.Contains(help, flag) {
				t.Errorf("delivery %s --help does not offer %q:\n%s", cmd, flag, help)
			}
		}
	}
}

// A corrupt store file is named, with how to recover, and is a failure
// (exit 1), not a usage error: by exact id, by prefix, in pickup latest,
// for loops and for root.json.
func TestCorruptFilesAreNamedNotUsageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	r := e.ok("", "", "handoff", "auth refactor", "--next-prompt", "go on", "--json")
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || created.ID == "" {
		t.Fatalf("handoff --json = %s (%v)", r.stdout, err)
	}
	id := created.ID
	path := ".agent/context/packets/" + id + ".md"
	e.write(path, "---\nid: "+id+"\nstatus: [unclosed\n---\n")
	for _, args := range [][]string{
		{"packet", "show", id},
		{"packet", "show", id[:8]},
		{"packet", "show", "auth"},
	} {
		r := e.run("", "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "is corrupt") || !strings.Contains(r.stderr, "move it out of") || strings.Contains(r.stderr, "--help") {
			t.Errorf("baton %v = %d\nstderr: %s", args, r.code, r.stderr)
		}
	}
	r = e.run("", "", "pickup")
	if r.code != 1 || !strings.Contains(r.stderr, "warning: skipped") || !strings.Contains(r.stderr, path) {
		t.Errorf("pickup with only a corrupt packet = %d\nstderr: %s", r.code, r.stderr)
	}

	e.vars["BATON_SESSION_ID"] = "s1"
	r = e.ok("", "", "loop", "start", "--json", "keep going")
	var loop struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &loop); err != nil || loop.Path == "" {
		t.Fatalf("loop start --json = %s", r.stdout)
	}
	if err := os.WriteFile(loop.Path, []byte("---\nid: [\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.run("", "", "loop", "cancel")
	if r.code != 1 || !strings.Contains(r.stderr, "is corrupt") || strings.Contains(r.stderr, "--help") {
		t.Errorf("loop cancel on a corrupt loop = %d\nstderr: %s", r.code, r.stderr)
	}

	e.write(".agent/context/root.json", "{not json")
	r = e.run("", "", "init")
	if r.code != 1 || !strings.Contains(r.stderr, "root.json is corrupt") || !strings.Contains(r.stderr, "baton init") || strings.Contains(r.stderr, "--help") {
		t.Errorf("init on a corrupt root.json = %d\nstderr: %s", r.code, r.stderr)
	}
}

// pickup latest, its help and the session-start hook agree: a draft or
// active packet first; else the most recent one, said to be a fallback.
func TestPickupLatestAndTheHookAgree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "old work", "--next-prompt", "old")
	r := e.ok("", "", "packet", "list", "--json")
	var list struct {
		Packets []struct {
			ID string `json:"id"`
		} `json:"packets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Packets) != 1 {
		t.Fatalf("packet list --json = %s", r.stdout)
	}
	id := list.Packets[0].ID
	e.ok("", "", "packet", "done", id)
	r = e.ok("", "", "pickup")
	if !strings.Contains(r.stderr, "no draft or active packet") || !strings.Contains(r.stderr, id) || !strings.Contains(r.stderr, "(done)") {
		t.Errorf("pickup of a done packet does not say why:\n%s", r.stderr)
	}
	r = e.ok("", `{"session_id":"s9","cwd":"`+e.dir+`","source":"startup"}`, "hook", "session-start", "--harness", "claude")
	if strings.Contains(r.stdout, "No packet or loop yet") || !strings.Contains(r.stdout, "No draft or active packet") || !strings.Contains(r.stdout, id) {
		t.Errorf("session-start with a done packet:\n%s", r.stdout)
	}
}

// The session-start count is what `baton files` lists; a loop bound to
// another session says how to take it over.
func TestSessionStartCountsAndRebindHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.write("a.txt", "a\n")
	e.ok("", "", "handoff", "p", "--file", "a.txt")
	if out := e.ok("", "", "files").stdout; strings.Contains(out, "a.txt") {
		t.Fatalf("files lists a packet's own file:\n%s", out)
	}
	e.vars["BATON_SESSION_ID"] = "other"
	e.ok("", "", "loop", "start", "keep going")
	r := e.ok("", `{"session_id":"s9","cwd":"`+e.dir+`","source":"startup"}`, "hook", "session-start", "--harness", "claude")
	if strings.Contains(r.stdout, "file(s) touched since the last packet") {
		t.Errorf("session-start counts a file `baton files` does not list:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "bound to another session (other)") || !strings.Contains(r.stdout, "--rebind") {
		t.Errorf("session-start does not say how to take the loop over:\n%s", r.stdout)
	}
}

// run step with its agent missing runs no iteration and says so, and
// leaves no iteration directory behind.
func TestRunStepWithMissingAgentRunsNothing(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: t\nnext: execute\n---\n# Task\n\nDo it.\n")
	e.ok("", "", "run", "init", "--guard", "true")
	r := e.run("", "", "run", "step", "--agent", "command:"+filepath.Join(e.dir, "missing.sh"))
	if r.code != 1 || strings.Contains(r.stdout, "1 iteration") || !strings.Contains(r.stderr, "missing.sh") {
		t.Errorf("run step with a missing agent = %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(e.dir, ".agent", "context", "runner", "iterations", "*", "*"))
	if len(dirs) != 0 {
		t.Errorf("iteration directories left behind: %v", dirs)
	}
}

// run init --no-branch on main warns at once that step will refuse main.
func TestRunInitNoBranchOnMainWarns(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: t\nnext: execute\n---\n# Task\n\nDo it.\n")
	r := e.ok("", "", "run", "init", "--no-branch", "--guard", "true")
	if !strings.Contains(r.stderr, "stays on main") || !strings.Contains(r.stderr, "--allow-main") {
		t.Errorf("run init --no-branch on main:\n%s", r.stderr)
	}
}

// A tree left unreadable by an interrupted iteration: status and tree say
// that the next step restores it (not "fix it by hand"), and it does.
func TestInterruptedIterationWithCorruptTree(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: t\nnext: execute\n---\n# Task\n\nDo it.\n")
	e.ok("", "", "run", "init", "--guard", "true")
	state := ".agent/context/runner/state/"
	tree := e.read(state + "tree.json")
	var st map[string]any
	if err := json.Unmarshal([]byte(e.read(state+"run_state.json")), &st); err != nil {
		t.Fatal(err)
	}
	run := st["run_id"].(string)
	head := strings.TrimSpace(e.git("rev-parse", "HEAD"))
	st["in_flight"] = map[string]any{"iter": 1, "node": "t", "attempt": 1, "started_at": "2026-11-22T09:34:00Z", "head": head}
	b, _ := json.Marshal(st)
	e.write(state+"run_state.json", string(b))
	e.write(".agent/context/runner/iterations/"+run+"/1/tree.before.json", tree)
	e.write(state+"tree.json", `{"id": "t", "title": `)
	for _, cmd := range [][]string{{"run", "status"}, {"run", "tree"}} {
		r := e.run("", "", cmd...)
		if r.code != 1 || !strings.Contains(r.stderr, "iteration 1 was interrupted") || !strings.Contains(r.stderr, "`baton run step` restores it") || strings.Contains(r.stderr, "--help") {
			t.Errorf("baton %v = %d\nstderr: %s", cmd, r.code, r.stderr)
		}
	}
	r := e.run("", "", "run", "step", "--agent", "command:"+filepath.Join(e.dir, "missing.sh"))
	if got := e.read(state + "tree.json"); got != tree && !strings.Contains(got, `"id": "t"`) {
		t.Errorf("run step did not restore the tree (exit %d, %s):\n%s", r.code, r.stderr, got)
	}
	if r := e.run("", "", "run", "status"); r.code != 0 {
		t.Errorf("run status after the step = %d\n%s", r.code, r.stderr)
	}
}

// The stand-in agent docs/agents.md shows works as the page says: through
// every phase of a delivery to a merged change, and for a runner step.
func TestDocumentedStandInAgent(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- stand-in agent: begin -->\n```sh\n")
	script, _, ok2 := strings.Cut(rest, "```\n<!-- stand-in agent: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/agents.md has no marked stand-in agent")
	}
	if n := strings.Count(strings.TrimSpace(script), "\n") + 1; n > 10 {
		t.Errorf("the stand-in agent has %d lines; the page promises ten", n)
	}
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	e, _, _ := deliveryEnv(t)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a greeting", "--agent", "command:"+agent,
		"--checkpoints", "none", "--verify", "test -f hello.txt")
	for i := 0; i < 8; i++ {
		r := e.ok("", "", "delivery", "show", "1", "--json")
		if strings.Contains(r.stdout, `"phase": "close"`) {
			break
		}
		e.ok("", "", "delivery", "run", "1")
	}
	r := e.ok("", "", "delivery", "show", "1")
	if !strings.Contains(r.stdout, "closed: delivered") {
		t.Fatalf("the documented agent did not carry the delivery to close:\n%s", r.stdout)
	}
	if got := strings.TrimSpace(e.git("show", "main:hello.txt")); got != "hello" {
		t.Errorf("main:hello.txt = %q", got)
	}

	p := runProject(t, "---\nid: t\nnext: execute\n---\n# Task\n\nDo it.\n")
	p.ok("", "", "run", "init", "--guard", "true")
	if r := p.ok("", "", "run", "step", "--quiet", "--agent", "command:"+agent); !strings.Contains(r.stdout, "complete") {
		t.Errorf("run step with the documented agent:\n%s%s", r.stdout, r.stderr)
	}
}

// Completion offers ids and allowed values; a mistyped command gets a
// suggestion; completion of an unknown shell is an error.
func TestCompletionAndSuggestions(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	e.vars["BATON_SESSION_ID"] = "s1"
	packet := strings.TrimSpace(e.ok("", "", "handoff", "auth refactor", "--next-prompt", "go", "--json").stdout)
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(packet), &p); err != nil {
		t.Fatal(err)
	}
	var l struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(e.ok("", "", "loop", "start", "--json", "go on").stdout), &l); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Delivery struct {
			ID string `json:"id"`
		} `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Complete me", "--json").stdout), &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"packet", "show", ""}, []string{"latest", p.ID}},
		{[]string{"pickup", ""}, []string{p.ID}},
		{[]string{"loop", "status", ""}, []string{l.ID}},
		{[]string{"delivery", "show", ""}, []string{d.Delivery.ID + "\tComplete me"}},
		{[]string{"install", ""}, []string{"claude", "codex", "droid", "pi"}},
		{[]string{"packet", "list", "--status", ""}, []string{"draft", "active", "done", "blocked"}},
		{[]string{"delivery", "list", "--phase", "im"}, []string{"implement"}},
		{[]string{"hook", "stop", "--harness", ""}, []string{"claude", "pi"}},
		{[]string{"delivery", "create", "--agent", ""}, []string{"codex", "command:"}},
	} {
		out := e.ok("", "", append([]string{"__complete"}, c.args...)...).stdout
		for _, w := range c.want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("__complete %q lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	if r := e.run("", "", "completion", "bogus"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "bogus"`) {
		t.Errorf("completion bogus = %d\n%s", r.code, r.stderr)
	}
	if r := e.run("", "", "pakcet", "list"); r.code != 2 || !strings.Contains(r.stderr, "did you mean packet?") {
		t.Errorf("pakcet = %d\n%s", r.code, r.stderr)
	}
	if r := e.run("", "", "loop", "strat"); !strings.Contains(r.stderr, "did you mean start?") {
		t.Errorf("loop strat = %d\n%s", r.code, r.stderr)
	}
}

// lineWatch calls fire once what was written holds want.
type lineWatch struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	fire func()
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.fire()
	}
	return len(p), nil
}

// handoff --file says so when the path does not exist, as files add
// does (the README's example, internal/auth/jwt.go, was accepted
// silently in a repository without it), and keeps it: a packet may name
// a file still to be written.
func TestHandoffFileWarnsOfAMissingPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	r := e.run("", "", "handoff", "finish the auth refactor", "--next-prompt", "go on", "--file", "internal/auth/session.go", "--file", "README.md")
	if r.code != 0 || !strings.Contains(r.stderr, "baton: warning: internal/auth/session.go does not exist; kept as a file still to be written") || strings.Contains(r.stderr, "README.md") {
		t.Errorf("handoff --file internal/auth/session.go = %d\nstderr: %s", r.code, r.stderr)
	}
	if out := e.ok("", "", "pickup", "latest").stdout; !strings.Contains(out, "internal/auth/session.go") {
		t.Errorf("the packet lost the file still to be written:\n%s", out)
	}
}
