package cli

import (
	"github.com/baton-agent/baton/internal/golden"

	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/goaltree"
)

const calcGoal = `---
id: calc
---
# Build a calculator

A command-line calculator in src/.

## Acceptance
- every source file is free of BUG markers
`

// bugGuard fails, naming the line, while any file under src/ holds "BUG".
const bugGuard = `if grep -rn BUG src; then exit 1; fi`

// runProject is a git repository with GOAL.md committed on main.
func runProject(t *testing.T, goal string) *env {
	t.Helper()
	e := newEnv(t)
	e.gitRepo()
	e.write("GOAL.md", goal)
	e.git("add", "GOAL.md")
	e.git("commit", "-q", "-m", "add the goal")
	return e
}

func children(titles ...string) []map[string]any {
	var kids []map[string]any
	for _, t := range titles {
		kids = append(kids, map[string]any{"title": t, "goal": "implement " + t, "acceptance": []string{t + " works"}, "next": "execute"})
	}
	return kids
}

func answer(status, summary string) map[string]any {
	return map[string]any{"status": status, "summary": summary}
}

// TestRunLifecycle runs a tree of three leaves to completion: a
// decomposition, a retry, a guard failure that the next attempt fixes,
// with claude and then a command agent, through the real command path.
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	e := runProject(t, calcGoal)
	fake := agenttest.New(t,
		agenttest.Turn{Final: map[string]any{"status": "decomposed", "summary": "three parts", "children": children("Lexer", "Parser", "Evaluator")},
			CostUSD: 0.10, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/lexer.txt", Content: "tokens\n"}}, Final: answer("retry", "SUMMARY-LEXER: tokens done, numbers missing"),
			CostUSD: 0.20, InputTokens: 2000, OutputTokens: 200},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/lexer.txt", Content: "tokens numbers\n"}}, Final: answer("done", "lexer complete")},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/parser.txt", Content: "precedence BUG\n"}}, Final: answer("done", "parser complete")},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/parser.txt", Content: "precedence\n"}}, Final: answer("done", "fixed precedence")},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/eval.txt", Content: "eval\n"}}, Final: answer("done", "evaluator complete")},
	)
	e.useFake(fake)

	r := e.ok("", "", "run", "init", "--guard", bugGuard)
	if !strings.Contains(r.stdout, "started run calc") || !strings.Contains(r.stdout, "branch: runner/calc") {
		t.Errorf("run init printed %q", r.stdout)
	}
	if got := strings.TrimSpace(e.git("status", "--porcelain")); got != "" {
		t.Fatalf("run init left uncommitted files:\n%s", got)
	}

	// Three iterations with claude (the config's default agent)...
	r = e.run("", "", "run", "loop", "--max-iterations", "3")
	if r.code != ExitError || !strings.Contains(r.stdout, "stopped at the iteration limit; 1 passed, 2 open, 0 stuck; 3 iterations") {
		t.Fatalf("loop --max-iterations 3 = exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "agent cost $0.30") {
		t.Errorf("loop summary lacks the agent cost: %q", r.stdout)
	}
	// ...and the rest with a command agent, quietly.
	r = e.run("", "", "run", "loop", "--agent", fake.CommandAgent(), "--quiet")
	if r.code != ExitOK || !strings.Contains(r.stdout, "baton run calc: complete; 3 passed, 0 open, 0 stuck; 3 iterations") {
		t.Fatalf("loop = exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "evaluator complete") {
		t.Errorf("--quiet streamed the agent's output:\n%s", r.stderr)
	}
	if n := strings.Count(r.stderr, " status="); n != 3 {
		t.Errorf("loop printed %d status lines, want 3:\n%s", n, r.stderr)
	}

	golden.CheckString(t, "run_lifecycle_commits.golden.txt", e.git("log", "--reverse", "--format=%s", "main..HEAD"))
	golden.CheckString(t, "run_lifecycle_tree.golden.txt", e.ok("", "", "run", "tree").stdout)

	calls := fake.Calls(t)
	if len(calls) != 6 || calls[0].Agent != "claude" || calls[5].Agent != "command" {
		t.Fatalf("agent calls: %d, first %s, last %s", len(calls), calls[0].Agent, calls[len(calls)-1].Agent)
	}
	if !strings.Contains(calls[2].Prompt, "## History (previous attempt)\n\nSUMMARY-LEXER") {
		t.Errorf("the retry's summary did not reach the next attempt:\n%s", calls[2].Prompt)
	}
	if !strings.Contains(calls[4].Prompt, "## Failure (previous attempt)") || !strings.Contains(calls[4].Prompt, "src/parser.txt:1:precedence BUG") {
		t.Errorf("the guard failure did not reach the next attempt:\n%s", calls[4].Prompt)
	}
	for i, c := range calls {
		if i != 2 && strings.Contains(c.Prompt, "## History") || i != 4 && strings.Contains(c.Prompt, "## Failure") {
			t.Errorf("call %d has history or failure it should not have", i)
		}
		if len(c.Schema) == 0 {
			t.Errorf("call %d got no output schema", i)
		}
	}

	r = e.ok("", "", "run", "status", "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("run status --json: %v\n%s", err, r.stdout)
	}
	if st.SchemaVersion != 1 || st.State != "complete" || st.Counts.Passed != 3 || st.Iterations != 6 || st.NextIter != 7 || st.Last.Status != "done" || st.Totals.CostUSD < 0.29 {
		t.Errorf("run status --json = %+v", st)
	}
	r = e.ok("", "", "run", "status")
	for _, want := range []string{"run:        calc (branch runner/calc)", "state:      complete", "leaves:     3 passed, 0 open, 0 stuck, of 3 (4 nodes)", "iterations: 6; last: iter 6 node 3 status=done guard=pass"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run status lacks %q:\n%s", want, r.stdout)
		}
	}
	// Iteration logs: the parser's failed guard and every iteration's meta.
	iter4 := filepath.Join(".agent/context/runner/iterations/calc/4")
	for _, f := range []string{"meta.json", "prompt.txt", "argv.json", "stdout.log", "stderr.log", "output.json", "guard.log", "failure.log", "tree.before.json", "tree.after.json"} {
		if _, err := os.Stat(filepath.Join(e.dir, iter4, f)); err != nil {
			t.Errorf("iteration 4 lacks %s: %v", f, err)
		}
	}
	var meta goaltree.Meta
	if err := json.Unmarshal([]byte(e.read(iter4+"/meta.json")), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Node != "2" || meta.Status != "done" || meta.Guard != "fail" || meta.Attempt != 1 || meta.Prompt == nil || meta.Commit == "" {
		t.Errorf("iteration 4 meta = %+v", meta)
	}
	if got := strings.TrimSpace(e.git("status", "--porcelain")); got != "" {
		t.Errorf("work tree dirty after the run:\n%s", got)
	}
	// Complete is complete: another step runs nothing and exits 0.
	r = e.ok("", "", "run", "step")
	if !strings.Contains(r.stdout, "complete") || len(fake.Calls(t)) != 6 {
		t.Errorf("step on a complete run = %q, %d calls", r.stdout, len(fake.Calls(t)))
	}
}

func TestRunStuckExits3(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: hard\nnext: execute\n---\n# Hard task\n\nDo the hard thing.\n")
	fake := agenttest.New(t)
	fake.SetScript(t, agenttest.Script{Turns: []agenttest.Turn{{Final: answer("retry", "still hard")}}, RepeatLast: true})
	e.useFake(fake)
	e.ok("", "", "run", "init", "--guard", "true")
	r := e.run("", "", "run", "loop", "--quiet")
	if r.code != ExitStuck || !strings.Contains(r.stdout, "stuck on node root (out of attempts); 0 passed, 0 open, 1 stuck; 3 iterations") || !strings.Contains(r.stderr, "node root is out of attempts") {
		t.Fatalf("loop = exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = e.run("", "", "run", "step")
	if r.code != ExitStuck || len(fake.Calls(t)) != 3 {
		t.Errorf("step on a stuck run = exit %d after %d agent calls, want 3 and no new call", r.code, len(fake.Calls(t)))
	}
	if r := e.ok("", "", "run", "tree"); !strings.Contains(r.stdout, "[!] root Hard task (execute, attempts 3/3)") {
		t.Errorf("run tree does not mark the stuck leaf:\n%s", r.stdout)
	}
}

func TestRunSetupCommands(t *testing.T) {
	t.Parallel()
	e := runProject(t, calcGoal)
	fake := agenttest.New(t)
	e.useFake(fake)
	r := e.run("", "", "run", "init", "--goal-file", "nope.md")
	if r.code != ExitError || !strings.Contains(r.stderr, "goal file nope.md not found") {
		t.Errorf("init with a missing goal file = %d %q", r.code, r.stderr)
	}
	r = e.run("", "", "run", "init", "--agent", "gemini")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "unknown agent") {
		t.Errorf("init --agent gemini = %d %q", r.code, r.stderr)
	}
	r = e.ok("", "", "run", "init")
	if !strings.Contains(r.stderr, "no guard set") {
		t.Errorf("init without a guard did not warn: %q", r.stderr)
	}
	r = e.run("", "", "run", "init")
	if r.code != ExitError || !strings.Contains(r.stderr, "already exists in .agent/context/runner (run calc)") {
		t.Errorf("second init = %d %q", r.code, r.stderr)
	}
	r = e.run("", "", "run", "step")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "no guard is configured") {
		t.Errorf("step without a guard = %d %q", r.code, r.stderr)
	}

	// Build the tree by hand.
	e.ok("", "", "run", "add", "--title", "Lexer", "--goal", "split input into tokens", "--accept", "lexes 1+2")
	r = e.ok("", "", "run", "add", "--title", "Parser", "--goal", "parse tokens", "--next", "decompose", "--json")
	var added struct {
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &added); err != nil || added.Node.ID != "2" {
		t.Errorf("run add --json = %q, %v", r.stdout, err)
	}
	r = e.ok("", "", "run", "add", "--parent", "2", "--title", "Precedence", "--goal", "* before +")
	if strings.TrimSpace(r.stdout) != "2.1" {
		t.Errorf("run add under 2 printed %q, want 2.1", r.stdout)
	}
	r = e.run("", "", "run", "add", "--parent", "9", "--title", "x", "--goal", "y")
	if r.code != ExitError || !strings.Contains(r.stderr, `no node "9"`) {
		t.Errorf("run add under a missing node = %d %q", r.code, r.stderr)
	}
	r = e.ok("", "", "run", "validate")
	if !strings.Contains(r.stdout, "ok: 4 nodes, 2 leaves (0 passed, 2 open, 0 stuck)") {
		t.Errorf("run validate = %q", r.stdout)
	}
	golden.CheckString(t, "run_tree.golden.txt", e.ok("", "", "run", "tree").stdout)

	// A hand edit that breaks invariants: validate names the nodes.
	tree := e.read(".agent/context/runner/state/tree.json")
	tree = strings.Replace(tree, `"attempts": 0`, `"attempts": 7`, 1)
	tree = strings.Replace(tree, `"id": "2.1"`, `"id": "1"`, 1)
	e.write(".agent/context/runner/state/tree.json", tree)
	e.write(".agent/context/runner/state/config.toml", "max_attempts = 0\n")
	r = e.run("", "", "run", "validate")
	want := "node root: attempts 7 exceeds max_attempts 3\nnode 1: id is used by another node\n"
	if r.code != ExitUsage || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "max_attempts is 0") {
		t.Errorf("run validate on a broken tree = %d\n%s", r.code, r.stdout)
	}
	r = e.run("", "", "run", "step")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "max_attempts") {
		t.Errorf("step with a broken config = %d %q", r.code, r.stderr)
	}
	if calls := fake.Calls(t); len(calls) != 0 {
		t.Errorf("the agent ran %d times during setup", len(calls))
	}
}

func TestRunRefusesBeforeRecording(t *testing.T) {
	t.Parallel()
	e := runProject(t, calcGoal)
	fake := agenttest.New(t)
	e.useFake(fake)
	e.ok("", "", "run", "init", "--guard", "true")
	head := e.git("rev-parse", "HEAD")

	e.agentEnv = append(e.agentEnv, "PATH="+filepath.Dir(mustLookPath(t, "git"))+string(os.PathListSeparator)+filepath.Dir(mustLookPath(t, "sh")))
	r := e.run("", "", "run", "step", "--agent", "droid")
	if r.code != ExitError || !strings.Contains(r.stderr, "droid is not installed") || !strings.Contains(r.stderr, "--agent claude") {
		t.Errorf("step with a missing agent = %d %q", r.code, r.stderr)
	}
	e.write("mine.txt", "uncommitted")
	r = e.run("", "", "run", "step")
	if r.code != ExitError || !strings.Contains(r.stderr, "uncommitted changes (mine.txt)") {
		t.Errorf("step on a dirty tree = %d %q", r.code, r.stderr)
	}
	if got := e.git("rev-parse", "HEAD"); got != head {
		t.Errorf("a refused step committed: HEAD %s, was %s", got, head)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".agent/context/runner/iterations/calc/1")); err == nil {
		t.Error("a refused step left an iteration directory")
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found: %v", name, err)
	}
	return p
}

// helperEnv makes the test binary run baton's Main instead of the tests.
const helperEnv = "BATON_TEST_RUN_MAIN"

// TestRunHelperProcess is baton itself when the test binary is started by
// startBaton; otherwise it does nothing.
func TestRunHelperProcess(t *testing.T) {
	t.Parallel()
	raw := os.Getenv(helperEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	f := &Factory{IO: IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, Now: time.Now, Getenv: os.Getenv, WorkDir: wd, Version: "test"}
	wireForTest(f, "")
	os.Exit(Main(context.Background(), args, f))
}

// TestRunResumesAfterKill kills a real `baton run loop` process with
// SIGKILL while its agent works, then resumes: the interrupted iteration is
// recorded (no attempt spent, its partial work committed) and the run
// completes.
func TestRunResumesAfterKill(t *testing.T) {
	t.Parallel()
	e := runProject(t, "---\nid: calc\nnext: execute\n---\n# Write calc.txt\n\nWrite calc.txt.\n")
	pidFile := filepath.Join(t.TempDir(), "agent.pid")
	fake := agenttest.New(t,
		agenttest.Turn{
			Files:    []agenttest.File{{Path: "partial.txt", Content: "half done\n"}},
			Commands: []agenttest.Command{{Argv: []string{"sh", "-c", `echo $PPID > "$1"`, "sh", pidFile}}},
			Say:      []string{"AGENT-AT-WORK"},
			Sleep:    10 * time.Minute,
		},
		agenttest.Turn{Files: []agenttest.File{{Path: "calc.txt", Content: "42\n"}}, Final: answer("done", "wrote calc.txt")},
	)
	e.useFake(fake)
	e.allowWrite(filepath.Dir(pidFile))
	e.ok("", "", "run", "init", "--guard", "test -f calc.txt")

	args, _ := json.Marshal([]string{"run", "loop"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunHelperProcess$")
	cmd.Dir = e.dir
	cmd.Env = e.childEnv(helperEnv + "=" + string(args))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAgent := func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(-pid, syscall.SIGKILL) // the agent leads its process group
			}
		}
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); killAgent() })

	working := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "AGENT-AT-WORK") {
				close(working)
				break
			}
		}
		for sc.Scan() { // drain so the process never blocks on stderr
		}
	}()
	select {
	case <-working:
	case <-time.After(2 * time.Minute):
		t.Fatal("the agent never reported working")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killAgent()

	st := e.read(".agent/context/runner/state/run_state.json")
	if !strings.Contains(st, `"in_flight"`) {
		t.Fatalf("run_state after the kill has no in_flight:\n%s", st)
	}
	r := e.run("", "", "run", "status")
	if !strings.Contains(r.stdout, "in flight:  iteration 1 on node root") {
		t.Errorf("run status does not show the interrupted iteration:\n%s", r.stdout)
	}

	r = e.run("", "", "run", "loop", "--quiet")
	if r.code != ExitOK || !strings.Contains(r.stdout, "complete; 1 passed") {
		t.Fatalf("resumed loop = exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "recovered=interrupted") {
		t.Errorf("the resumed loop did not say it recovered iteration 1:\n%s", r.stderr)
	}
	want := "baton run calc: init\nbaton run calc iter 1: node root status=runner_error guard=skipped\nbaton run calc iter 2: node root status=done guard=pass\n"
	if diff := cmp.Diff(want, e.git("log", "--reverse", "--format=%s", "main..HEAD")); diff != "" {
		t.Errorf("commits mismatch (-want +got):\n%s", diff)
	}
	if got := e.git("show", "HEAD~1:partial.txt"); got != "half done\n" {
		t.Errorf("the killed agent's partial work at iteration 1 = %q", got)
	}
	if log := e.read(".agent/context/runner/iterations/calc/1/runner_error.log"); !strings.Contains(log, "interrupted") {
		t.Errorf("runner_error.log = %q", log)
	}
	calls := fake.Calls(t)
	if len(calls) != 2 || strings.Contains(calls[1].Prompt, "## History") || strings.Contains(calls[1].Prompt, "interrupted") || !strings.Contains(calls[1].Prompt, "attempt: 1 of 3") {
		t.Errorf("the attempt after the kill should be attempt 1 with no history:\n%s", calls[len(calls)-1].Prompt)
	}
}
