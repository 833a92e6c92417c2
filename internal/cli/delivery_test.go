package cli

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/golden"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/testenv"
	"github.com/baton-agent/baton/internal/web"
)

// TestMain doubles as baton itself for tests that need a real separate
// process (a worker to kill): with BATON_CLI_HELPER=1 the test binary runs
// cli.Main with the arguments in BATON_CLI_ARGS and the real environment.
func TestMain(m *testing.M) {
	sandbox.Main(egress.Hooks()) // the box's init, when a test starts a confined process
	if os.Getenv("BATON_CLI_HELPER") == "1" {
		args := strings.Split(os.Getenv("BATON_CLI_ARGS"), "\x1f")
		wd, _ := os.Getwd()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		f := &Factory{
			IO: IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, Now: time.Now, Getenv: os.Getenv, WorkDir: wd, Version: "test",
		}
		wireForTest(f, os.Getenv("BATON_CLI_HELPER_DATA"))
		code := Main(ctx, args, f)
		stop()
		os.Exit(code)
	}
	os.Exit(gittest.Main(m)) // git's identity and configuration, fixed for every test
}

// deliveryEnv is a test with a source repository, a data directory and
// the fake agent on PATH.
func deliveryEnv(t *testing.T, turns ...agenttest.Turn) (*env, string, *agenttest.Fake) {
	t.Helper()
	e := newEnv(t)
	e.gitRepo()
	fake := agenttest.New(t, turns...)
	e.useFake(fake) // PATH and the script, for agents started in-process and by helper processes
	data := t.TempDir()
	e.data = data
	e.vars["BATON_ACTOR"] = "alice"
	return e, data, fake
}

func scrubID(s, id string) string { return strings.ReplaceAll(s, id, "$ID") }

// showView decodes `delivery show --json`.
func showView(t *testing.T, out string) showJSON {
	t.Helper()
	var v showJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.SchemaVersion != 1 {
		t.Fatalf("delivery show --json = %s (%v)", out, err)
	}
	return v
}

func TestDeliveryCreateShowListGolden(t *testing.T) {
	t.Parallel()
	e, data, _ := deliveryEnv(t)
	r := e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint\n\nIt returns 200.",
		"--verify", "go test ./...", "--observe", "curl -fsS localhost:8080/health", "--observe-window", "2m", "--json")
	var created struct {
		SchemaVersion int           `json:"schema_version"`
		Created       bool          `json:"created"`
		Delivery      delivery.View `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || !created.Created || created.SchemaVersion != 1 {
		t.Fatalf("create --json = %s (%v)", r.stdout, err)
	}
	d := created.Delivery
	if !strings.HasPrefix(r.stdout, "{\n  \"schema_version\": 1") {
		t.Errorf("JSON does not start with schema_version: %s", r.stdout[:40])
	}
	if d.Repository != e.dir || d.Forge != "local" || d.Phase != "plan" || d.RunStatus != "pending" || !d.Queued || d.Title != "Add a /health endpoint" {
		t.Errorf("created %+v", d)
	}
	if _, err := os.Stat(filepath.Join(data, "baton.db")); err != nil {
		t.Errorf("no database in the data dir: %v", err)
	}

	// Creating again is idempotent.
	r = e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint\n\nIt returns 200.", "--agent", "codex")
	if !strings.Contains(r.stdout, "already exists") || !strings.Contains(r.stdout, d.ID) {
		t.Errorf("second create = %q", r.stdout)
	}

	r = e.ok("", "", "delivery", "show", "1")
	golden.CheckString(t, "delivery_show.golden.txt", scrubID(e.scrub(r.stdout), d.ID))
	r = e.ok("", "", "delivery", "list")
	golden.CheckString(t, "delivery_list.golden.txt", scrubID(e.scrub(r.stdout), d.ID))

	// Bad input is a usage error that says what to do.
	for _, args := range [][]string{
		{"delivery", "create", "--repo", "."},
		{"delivery", "create", "--summary", "x"},
		{"delivery", "create", "--repo", ".", "--summary", "x", "--checkpoints", "intake"},
		{"delivery", "create", "--repo", ".", "--summary", "x", "--agent", "vim"},
		{"delivery", "create", "--repo", ".", "--summary", "x", "--endpoint", "deploy", "--observe", "true"},
		{"delivery", "create", "--issue", "https://example.com/not/an/issue"},
		{"delivery", "show", "nope"},
	} {
		r := e.run("", "", args...)
		if r.code == 0 || r.stderr == "" {
			t.Errorf("baton %v: exit %d, stderr %q; want a failure with a message", args, r.code, r.stderr)
		}
	}
	if r := e.run("", "", "delivery", "approve", "1"); r.code != ExitError || !strings.Contains(r.stderr, "already queued") {
		t.Errorf("approve a queued plan: exit %d %q, want a conflict", r.code, r.stderr)
	}
}

// A person runs the plan in the foreground with live output, approves
// it, and reads the run's log; reject needs a reason and posts it.
func TestDeliveryRunApproveRejectLog(t *testing.T) {
	t.Parallel()
	e, _, fake := deliveryEnv(t,
		agenttest.Turn{Say: []string{"Reading the repository"}, Final: "1. Add the handler.\n2. Test it.", CostUSD: 0.05, InputTokens: 500, OutputTokens: 80},
	)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint", "--checkpoints", "plan,deploy",
		"--agent-arg=--allowedTools=Read,Grep", "--timeout", "30m,plan=10m")
	r := e.ok("", "", "delivery", "run", "1")
	if calls := fake.Calls(t); len(calls) != 1 || !strings.Contains(strings.Join(calls[0].Args, " "), "--allowedTools=Read,Grep") {
		t.Errorf("the agent did not get --agent-arg: %+v", calls)
	}
	if !strings.Contains(r.stdout, "Reading the repository") || !strings.Contains(r.stdout, "plan/succeeded (checkpoint") {
		t.Errorf("delivery run output = %q, want live agent text and the checkpoint", r.stdout)
	}
	if got := e.git("show", "baton/"+deliveryID(t, e)+":docs/plan.md"); got != "1. Add the handler.\n2. Test it.\n" {
		t.Errorf("docs/plan.md = %q", got)
	}
	// watch prints the log and stops: the plan waits for approval.
	r = e.ok("", "", "delivery", "watch", "1", "--interval", "10ms")
	if !strings.Contains(r.stdout, "plan      running") || !strings.Contains(r.stdout, "is plan/succeeded (checkpoint") {
		t.Errorf("delivery watch = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "log", "1")
	if !strings.Contains(r.stdout, "plan") || !strings.Contains(r.stdout, "$0.0500") || !strings.Contains(r.stdout, "500/80") {
		t.Errorf("delivery log = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "log", "1", "--json")
	var logv struct {
		Delivery string           `json:"delivery"`
		Runs     []baton.AgentRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &logv); err != nil || len(logv.Runs) == 0 || logv.Runs[0].Phase != baton.PhasePlan || logv.Runs[0].CostUSD != 0.05 || logv.Runs[0].InputTokens != 500 {
		t.Errorf("delivery log --json = %v\n%s", err, r.stdout)
	}
	r = e.ok("", "", "delivery", "log", "1", "--run", "1", "--json")
	if !strings.Contains(r.stdout, `"final_message": "1. Add the handler.`) {
		t.Errorf("delivery log --run 1 --json:\n%s", r.stdout)
	}
	r = e.ok("", "", "delivery", "log", "1", "--run", "1", "--raw")
	for _, want := range []string{"## System prompt", "You are the planner", "## Prompt\n\nAdd a /health endpoint", "## Final message\n\n1. Add the handler.", "events.jsonl", `"type":"result"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("delivery log --run 1 lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := e.run("", "", "delivery", "reject", "1"); r.code != ExitUsage {
		t.Errorf("reject without a reason: exit %d", r.code)
	}
	// show names the state a decision is made on; --on a state the
	// delivery is not in is refused, saying both.
	if r := e.ok("", "", "delivery", "show", "1"); !regexp.MustCompile(`(?m)^state: +plan/succeeded/1 \(`).MatchString(r.stdout) {
		t.Errorf("delivery show does not name the state to decide on:\n%s", r.stdout)
	}
	if r := e.run("", "", "delivery", "reject", "1", "--on", "plan/succeeded/0", "--reason", "stale"); r.code != ExitError ||
		!strings.Contains(r.stderr, "it was plan/succeeded, it is now plan/succeeded (attempt 1)") {
		t.Errorf("reject --on a state it left: exit %d %q, want a conflict saying what changed", r.code, r.stderr)
	}
	if r := e.run("", "", "delivery", "approve", "1", "--on", "plan/waiting"); r.code != ExitUsage {
		t.Errorf("approve --on nonsense: exit %d %q, want a usage error", r.code, r.stderr)
	}
	if r := e.run("", "", "delivery", "reject", "1", "--reason", "x", "--note", "HEAD requests too"); r.code != ExitUsage || !strings.Contains(r.stderr, "path:line: text") {
		t.Errorf("reject --note without path:line: exit %d %q, want a usage error saying how", r.code, r.stderr)
	}
	if r := e.run("", "", "delivery", "reject", "1", "--reason", "x", "--note", "main.go:1: x"); r.code != ExitUsage || !strings.Contains(r.stderr, "not a file the change lands or docs/plan.md") {
		t.Errorf("reject --note on a file not shown: exit %d %q", r.code, r.stderr)
	}
	r = e.ok("", "", "delivery", "reject", "1", "--on", "plan/succeeded/1", "--reason", "Also cover HEAD requests", "--note", "docs/plan.md:1: and HEAD")
	if !strings.Contains(r.stdout, "plan/pending (queued") {
		t.Errorf("reject = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "show", "1", "--json")
	if !strings.Contains(r.stdout, `"phase_timeout_seconds": 1800`) || !strings.Contains(r.stdout, `"plan": 600`) {
		t.Errorf("delivery show --json does not write durations as seconds:\n%s", r.stdout)
	}
	v := showView(t, r.stdout)
	var rev delivery.RefView
	for _, ref := range v.Delivery.Refs {
		if ref.Role == baton.RoleReview && ref.Type == "review_note" {
			rev = ref
		}
	}
	if !strings.HasPrefix(rev.URL, "file://") {
		t.Fatalf("no review ref for the reject reason: %+v", v.Delivery.Refs)
	}
	if !slices.ContainsFunc(v.Delivery.Refs, func(r delivery.RefView) bool {
		return r.Type == baton.RefReviewLine && r.Label == "docs/plan.md:1" && r.URL == rev.URL
	}) {
		t.Errorf("no review ref for the line note: %+v", v.Delivery.Refs)
	}
	note, err := os.ReadFile(strings.TrimPrefix(rev.URL, "file://"))
	if err != nil || !strings.Contains(string(note), "Also cover HEAD requests") || !strings.Contains(string(note), "rejected by alice") {
		t.Errorf("review note = %q %v", note, err)
	}
	last := v.PhaseLog[len(v.PhaseLog)-1]
	if last.Action != "reject" || last.Actor != "alice" || last.Note != "Also cover HEAD requests" {
		t.Errorf("last log entry = %+v", last)
	}
	if r := e.run("", "", "delivery", "retry", "1"); r.code != ExitError {
		t.Errorf("retry of a pending phase: exit %d, want a conflict", r.code)
	}
	r = e.ok("", "", "delivery", "close", "1", "--reason", "not needed")
	if !strings.Contains(r.stdout, "closed") {
		t.Errorf("close = %q", r.stdout)
	}
}

// Text baton did not write reaches a terminal without its control
// sequences: a summary, an agent's live output, final message, raw log
// and failure, a reject reason, an API caller's name. A window title
// ("\x1b]0;pwned\x07") and a screen clear ("\x1b[2J") in each are
// stripped from delivery run, show, list, watch and log; what the text
// says is kept; --json keeps it, escaped.
func TestDeliveryOutputStripsTerminalControls(t *testing.T) {
	t.Parallel()
	const title, clear = "\x1b]0;pwned\x07", "\x1b[2J"
	e, _, _ := deliveryEnv(t,
		agenttest.Turn{Say: []string{"reading" + title + " the" + clear + " repository"}, Events: []string{title + clear + "raw event line"},
			Final: "1. Add" + clear + " the handler." + title},
		agenttest.Turn{Stderr: "toolchain" + title + " crashed" + clear + "\n", ExitCode: 3, NoResult: true},
	)
	e.vars["BATON_ACTOR"] = "mallory" + title
	outputs := map[string]string{}
	run := func(name string, args ...string) string {
		t.Helper()
		r := e.run("", "", args...)
		outputs[name] = r.stdout + r.stderr
		return r.stdout
	}
	run("create", "delivery", "create", "--repo", ".", "--summary", "Add a"+clear+" health endpoint"+title, "--checkpoints", "plan")
	if out := run("run", "delivery", "run", "1"); !strings.Contains(out, "reading the repository") {
		t.Errorf("delivery run lost the agent's text: %q", out)
	}
	run("reject", "delivery", "reject", "1", "--reason", "Cover"+title+" HEAD"+clear+" requests")
	run("run again", "delivery", "run", "1")
	for name, args := range map[string][]string{
		"show":        {"delivery", "show", "1"},
		"list":        {"delivery", "list"},
		"watch":       {"delivery", "watch", "1", "--interval", "10ms"},
		"log":         {"delivery", "log", "1"},
		"log --run":   {"delivery", "log", "1", "--run", "1", "--raw"},
		"log --run 2": {"delivery", "log", "1", "--run", "2"},
	} {
		run(name, args...)
	}
	for name, out := range outputs {
		if strings.ContainsAny(out, "\x1b\a\u009b\u009d") {
			t.Errorf("delivery %s printed a control sequence: %q", name, out)
		}
	}
	for name, want := range map[string][]string{
		"show":        {"summary:     Add a health endpoint", "Cover HEAD requests", "mallory", "toolchain crashed"},
		"list":        {"Add a health endpoint"},
		"watch":       {"mallory: Cover HEAD requests"},
		"log --run":   {"1. Add the handler.", "raw event line", "Add a health endpoint"},
		"log --run 2": {"toolchain crashed"},
	} {
		for _, w := range want {
			if !strings.Contains(outputs[name], w) {
				t.Errorf("delivery %s lacks %q:\n%s", name, w, outputs[name])
			}
		}
	}
	// JSON is for programs: the text is all there, its controls escaped.
	r := e.ok("", "", "delivery", "show", "1", "--json")
	if !strings.Contains(r.stdout, `Cover\u001b]0;pwned\u0007 HEAD\u001b[2J requests`) {
		t.Errorf("show --json does not carry the reason as it was given:\n%s", r.stdout)
	}
}

// The caps on request text are the core's, so the CLI refuses what the
// API refuses, saying which field and the limit, and changes nothing.
func TestDeliveryCapsRequestText(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	r := e.run("", "", "delivery", "create", "--repo", ".", "--summary", strings.Repeat("x", baton.MaxSummary+1))
	if r.code != ExitUsage || !strings.Contains(r.stderr, "the summary is 65537 bytes, over the limit of 64 KiB (65536 bytes): shorten it") {
		t.Errorf("create with a 64 KiB + 1 summary: exit %d, stderr %q", r.code, r.stderr)
	}
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", strings.Repeat("y", baton.MaxSummary), "--checkpoints", "plan")
	for _, args := range [][]string{
		{"delivery", "reject", "1", "--reason", strings.Repeat("r", baton.MaxReason+1)},
		{"delivery", "close", "1", "--reason", strings.Repeat("r", baton.MaxReason+1)},
	} {
		r := e.run("", "", args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "the reason is 4097 bytes, over the limit of 4 KiB (4096 bytes)") {
			t.Errorf("baton %s with a 4 KiB + 1 reason: exit %d, stderr %q", args[1], r.code, r.stderr)
		}
	}
	if r := e.ok("", "", "delivery", "list"); strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "pending") {
		t.Errorf("after refused requests the list is:\n%s", r.stdout)
	}
}

func deliveryID(t *testing.T, e *env) string {
	t.Helper()
	r := e.ok("", "", "delivery", "list", "--json")
	var out struct {
		Deliveries []delivery.View `json:"deliveries"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Deliveries) == 0 {
		t.Fatalf("list --json = %s %v", r.stdout, err)
	}
	return out.Deliveries[0].ID
}

// helper starts baton as a separate process (this test binary in helper
// mode) in dir and returns it with its combined output.
type helperProc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func startHelper(t *testing.T, e *env, args ...string) *helperProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = e.dir
	cmd.Env = e.childEnv("BATON_CLI_HELPER=1", "BATON_CLI_ARGS="+strings.Join(args, "\x1f"), "BATON_CLI_HELPER_DATA="+e.data)
	h := &helperProc{cmd: cmd}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			h.mu.Lock()
			h.out.WriteString(sc.Text() + "\n")
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return h
}

func (h *helperProc) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.String()
}

// waitDelivery waits until the database's one delivery meets cond.
func waitDelivery(t *testing.T, dbPath, what string, cond func(*baton.Delivery, []baton.AgentRun) bool, logs func() string) *baton.Delivery {
	t.Helper()
	db, err := sqlstore.OpenSQLite(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := sqlstore.New(sqlstore.SQLite, sqlstore.SQL(db))
	// Another process writes the database: no event reaches this one.
	var ds []*baton.Delivery
	if testenv.Until(60*time.Second, nil, func() bool {
		var err error
		ds, err = st.FindDeliveries(context.Background(), baton.DeliveryFilter{})
		if err != nil || len(ds) != 1 {
			return false
		}
		runs, _ := st.AgentRuns(context.Background(), ds[0].ID)
		return cond(ds[0], runs)
	}) {
		return ds[0]
	}
	state := "none"
	if len(ds) == 1 {
		state = ds[0].String() + " " + ds[0].Error
	}
	t.Fatalf("timed out waiting for %s (delivery %s)\n%s", what, state, logs())
	return nil
}

// A worker process is killed with SIGKILL while its agent runs; another
// worker takes the phase over once the heartbeat is stale, and the
// delivery finishes. Nothing is left running.
func TestKilledWorkerIsRecovered(t *testing.T) {
	t.Parallel()
	e, data, fake := deliveryEnv(t,
		agenttest.Turn{Final: "never delivered", Sleep: 20 * time.Second}, // attempt 1: its worker dies
		agenttest.Turn{Final: "1. The plan, second attempt."},
	)
	dbPath := filepath.Join(data, "baton.db")
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Survive a dead worker", "--checkpoints", "none", "--endpoint", "plan")
	workerArgs := []string{"worker", "--lease", "2s", "--heartbeat", "200ms", "--poll", "50ms"}
	w1 := startHelper(t, e, workerArgs...)
	// Kill the worker once its agent has really started (the run row is
	// written just before): the fake has then taken its first turn.
	d := waitDelivery(t, dbPath, "the agent to start under worker 1", func(d *baton.Delivery, runs []baton.AgentRun) bool {
		return d.RunStatus == baton.StatusRunning && len(runs) == 1 && runs[0].Status == baton.RunRunning && len(fake.Calls(t)) == 1
	}, w1.output)
	if err := w1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = w1.cmd.Wait()
	owner := d.Owner

	w2 := startHelper(t, e, workerArgs...)
	d = waitDelivery(t, dbPath, "worker 2 to finish the delivery", func(d *baton.Delivery, _ []baton.AgentRun) bool {
		return d.Phase == baton.PhaseClose || d.RunStatus == baton.StatusFailed
	}, func() string { return "worker 1:\n" + w1.output() + "worker 2:\n" + w2.output() })
	if d.String() != "close/succeeded" {
		t.Fatalf("delivery ended %s (%s)\nworker 2:\n%s", d.String(), d.Error, w2.output())
	}
	if err := w2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := w2.cmd.Wait(); err != nil {
		t.Errorf("worker 2 did not stop cleanly on SIGINT: %v\n%s", err, w2.output())
	}

	r := e.ok("", "", "delivery", "show", "1", "--json")
	v := showView(t, r.stdout)
	if len(v.AgentRuns) != 2 || v.AgentRuns[0].Status != string(baton.RunFailed) || !strings.Contains(v.AgentRuns[0].Error, owner+" lost") ||
		v.AgentRuns[1].Status != string(baton.RunSucceeded) {
		t.Errorf("agent runs = %+v, want the lost run failed and the second succeeded", v.AgentRuns)
	}
	var lose *delivery.PhaseLogView
	for i, en := range v.PhaseLog {
		if en.Action == "lose" {
			lose = &v.PhaseLog[i]
		}
		if en.EndedAt == nil {
			t.Errorf("entry %d (%s/%s) never ended", i, en.Phase, en.Status)
		}
	}
	if lose == nil || lose.Status != string(baton.StatusPending) || !strings.Contains(lose.Note, "no heartbeat since") {
		t.Errorf("no lose entry in the phase log: %+v", v.PhaseLog)
	}
	if !strings.Contains(w2.output(), "recovered 1 phase") {
		t.Errorf("worker 2 did not report the recovery:\n%s", w2.output())
	}
	if got := e.git("show", "baton/"+v.Delivery.ID+":docs/plan.md"); got != "1. The plan, second attempt.\n" {
		t.Errorf("plan = %q", got)
	}
}

// --issue names the delivery after the issue's title, read through the
// GitHub API (githubtest here), and makes a GitHub delivery; the request
// ref is the issue URL, and creating again finds the same delivery.
func TestDeliveryCreateFromIssue(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	srv := githubtest.NewServer(t)
	srv.RequireToken("ghp_cli_test_token_0123456789abcdefghij")
	srv.AddIssue("octo/app", githubtest.Issue{Number: 12, Title: "Sessions expire too early"})
	e.setEnv(srv.Env()...)
	e.vars["GH_TOKEN"] = "ghp_cli_test_token_0123456789abcdefghij"
	url := "https://github.com/octo/app/issues/12"
	r := e.ok("", "", "delivery", "create", "--issue", url, "--agent", "codex", "--json")
	var out struct {
		Created  bool            `json:"created"`
		Delivery *baton.Delivery `json:"delivery"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	d := out.Delivery
	if !out.Created || d.Summary != "GitHub Issue #12: Sessions expire too early" || d.Repository != "octo/app" || d.Forge != baton.ForgeGitHub || d.Config.Agent != "codex" {
		t.Fatalf("created %+v", d)
	}
	if req, ok := d.Ref(baton.RoleRequest, "github_issue"); !ok || req.URL != url || d.ID != baton.DeliveryID("octo/app", url) {
		t.Errorf("request ref %+v, id %s", req, d.ID)
	}
	r = e.ok("", "", "delivery", "create", "--issue", url)
	if !strings.Contains(r.stdout, "already exists") {
		t.Errorf("second create = %q", r.stdout)
	}
	// A wrong token fails with a message that does not show it.
	e.vars["GH_TOKEN"] = "ghp_wrong_token_0123456789abcdefghijklmn"
	r = e.run("", "", "delivery", "create", "--issue", "https://github.com/octo/app/issues/13")
	if r.code == 0 || strings.Contains(r.stderr, "ghp_wrong") {
		t.Errorf("create with a bad token: exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGINT stops a worker gracefully: its running agent is interrupted and
// the phase goes back to the queue, where the next worker finishes it.
func TestWorkerInterruptReleasesPhase(t *testing.T) {
	t.Parallel()
	e, data, fake := deliveryEnv(t,
		agenttest.Turn{Final: "interrupted", Sleep: 20 * time.Second},
		agenttest.Turn{Final: "1. The plan, after the restart."},
	)
	dbPath := filepath.Join(data, "baton.db")
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Survive a restart", "--checkpoints", "none", "--endpoint", "plan")
	workerArgs := []string{"worker", "--lease", "2s", "--heartbeat", "200ms", "--poll", "50ms"}
	w1 := startHelper(t, e, workerArgs...)
	waitDelivery(t, dbPath, "the agent to start", func(d *baton.Delivery, runs []baton.AgentRun) bool {
		return d.RunStatus == baton.StatusRunning && len(fake.Calls(t)) == 1
	}, w1.output)
	start := time.Now()
	if err := w1.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := w1.cmd.Wait(); err != nil {
		t.Fatalf("worker exit after SIGINT: %v\n%s", err, w1.output())
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("the worker took %s to stop", time.Since(start))
	}
	d := waitDelivery(t, dbPath, "the release", func(d *baton.Delivery, _ []baton.AgentRun) bool { return true }, w1.output)
	if d.String() != "plan/pending" || !d.Queued {
		t.Fatalf("after SIGINT the delivery is %s queued=%v, want plan/pending queued\n%s", d.String(), d.Queued, w1.output())
	}
	w2 := startHelper(t, e, workerArgs...)
	d = waitDelivery(t, dbPath, "worker 2 to finish", func(d *baton.Delivery, _ []baton.AgentRun) bool {
		return d.Phase == baton.PhaseClose || d.RunStatus == baton.StatusFailed
	}, w2.output)
	if d.String() != "close/succeeded" {
		t.Fatalf("delivery ended %s (%s)", d.String(), d.Error)
	}
	_ = w2.cmd.Process.Signal(os.Interrupt)
	_ = w2.cmd.Wait()
}

// show warns when a running delivery's heartbeat is stale.
func TestDeliveryShowWarnsOfDeadWorker(t *testing.T) {
	t.Parallel()
	e, data, _ := deliveryEnv(t, agenttest.Turn{Final: "1. Recovered plan."})
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Stale")
	db, err := sqlstore.OpenSQLite(filepath.Join(data, "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	st := sqlstore.New(sqlstore.SQLite, sqlstore.SQL(db))
	d, err := st.FindDeliveryBySeq(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	d.RunStatus, d.Attempt, d.Owner, d.HeartbeatAt = baton.StatusRunning, 1, "worker:gone:1", e.now.Add(-5*time.Minute)
	if err := st.UpdateDelivery(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := e.ok("", "", "delivery", "show", "1")
	if !strings.Contains(r.stdout, "warning: no heartbeat for 5m0s") {
		t.Errorf("show = %q", r.stdout)
	}
	// delivery run recovers it first (the lease has passed), then runs it.
	r = e.ok("", "", "delivery", "run", "1", "--lease", "1m")
	if !strings.Contains(r.stdout, "is plan/succeeded (checkpoint") {
		t.Errorf("delivery run after a dead worker = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "show", "1", "--json")
	v := showView(t, r.stdout)
	var actions []string
	for _, en := range v.PhaseLog {
		actions = append(actions, en.Action)
	}
	if got := strings.Join(actions, ","); got != "create,create,lose,run,forward" {
		t.Errorf("log actions = %s, want the loss recorded before the new run", got)
	}
}

// Agents follow issue text anyone can write: they never inherit baton's
// GitHub token or its BATON_ credentials unless the delivery asks for one
// by name, and `delivery show` says when it does.
func TestDeliveryAgentGetsNoSecrets(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "agent.env")
	dump := agenttest.Turn{Commands: []agenttest.Command{{Argv: []string{"sh", "-c", "env > " + envFile}}}, Final: "1. Plan."}
	e, _, _ := deliveryEnv(t, dump, dump)
	e.allowWrite(filepath.Dir(envFile))
	t.Setenv("GH_TOKEN", "gh-secret")
	t.Setenv("GITHUB_TOKEN", "github-secret")
	t.Setenv("BATON_DATABASE_URL", "postgres://baton:pw@db/x")
	t.Setenv("BATON_DATA_DIR", "/where/baton/keeps/its/token")
	agentEnv := func() string {
		t.Helper()
		b, err := os.ReadFile(envFile)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "No secrets")
	e.ok("", "", "delivery", "run", "1")
	if got := agentEnv(); strings.Contains(got, "gh-secret") || strings.Contains(got, "github-secret") || strings.Contains(got, "pw@db") || strings.Contains(got, "/where/baton/keeps") || !strings.Contains(got, "PATH=") {
		t.Errorf("the agent's environment:\n%s", got)
	}
	if r := e.ok("", "", "delivery", "show", "1"); strings.Contains(r.stdout, "secrets:") {
		t.Errorf("show mentions secrets for a delivery that passes none:\n%s", r.stdout)
	}

	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "With the token", "--pass-env", "GH_TOKEN")
	e.ok("", "", "delivery", "run", "2")
	if got := agentEnv(); !strings.Contains(got, "GH_TOKEN=gh-secret") || strings.Contains(got, "github-secret") {
		t.Errorf("with --pass-env GH_TOKEN the agent's environment:\n%s", got)
	}
	if r := e.ok("", "", "delivery", "show", "2"); !strings.Contains(r.stdout, "secrets:     GH_TOKEN passed to agents and commands") {
		t.Errorf("show does not say the token is passed:\n%s", r.stdout)
	}
	if r := e.run("", "", "delivery", "create", "--repo", ".", "--summary", "x", "--pass-env", "GH TOKEN"); r.code == 0 || !strings.Contains(r.stderr, "pass-env") {
		t.Errorf("a bad --pass-env name: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A `baton delivery run` killed with SIGKILL, with no worker running:
// what its agent started dies with it (a grandchild, not only the agent),
// and the next `run` recovers the phase at once, since its owner was a
// process of this machine that no longer exists. While the owner lives,
// run and retry say when its lease runs out.
func TestKilledRunRecoversAtOnce(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	e, data, fake := deliveryEnv(t,
		agenttest.Turn{ // attempt 1: a background server, then a long think; its `run` is killed
			Commands: []agenttest.Command{{Argv: []string{"sh", "-c", "sleep 60 & " + sandboxtest.WhoAmIOf("!") + " > " + pidFile + "; wait"}, Background: true}},
			Sleep:    60 * time.Second, Final: "never delivered",
		},
		agenttest.Turn{Final: "1. The plan, second attempt."},
	)
	e.allowWrite(filepath.Dir(pidFile))
	e.now = time.Now().UTC() // the helper process writes heartbeats with the real clock
	dbPath := filepath.Join(data, "baton.db")
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Survive a killed run", "--checkpoints", "none", "--endpoint", "plan")
	run1 := startHelper(t, e, "delivery", "run", "1")
	waitDelivery(t, dbPath, "the agent to start its server", func(d *baton.Delivery, runs []baton.AgentRun) bool {
		b, _ := os.ReadFile(pidFile)
		return d.RunStatus == baton.StatusRunning && len(runs) == 1 && len(fake.Calls(t)) == 1 && strings.HasSuffix(string(b), "\n")
	}, run1.output)
	b, _ := os.ReadFile(pidFile)
	grandchild, ok := sandboxtest.HostPID(string(b)) // it runs in the agent's box
	if !ok {
		t.Fatalf("the agent's background process is not running: %q", b)
	}

	// While it runs, another run and a retry say who runs it and when its
	// lease runs out.
	for _, args := range [][]string{{"delivery", "run", "1"}, {"delivery", "retry", "1"}} {
		r := e.run("", "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "run by run:") || !strings.Contains(r.stderr, "its lease runs out at") || !strings.Contains(r.stderr, "`baton delivery run 1` takes over then") {
			t.Errorf("baton %v while the phase runs: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}

	if err := run1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run1.cmd.Wait()
	if !testenv.Until(10*time.Second, nil, func() bool { return syscall.Kill(grandchild, 0) != nil || zombie(grandchild) }) {
		syscall.Kill(grandchild, syscall.SIGKILL)
		t.Fatalf("the agent's background process %d outlived the killed `delivery run`", grandchild)
	}

	if r := e.ok("", "", "delivery", "show", "1"); !strings.Contains(r.stdout, "is gone (no process of that id on this machine)") {
		t.Errorf("show after the kill = %q", r.stdout)
	}
	// At once, not after the 30 s lease.
	r := e.ok("", "", "delivery", "run", "1")
	if !strings.Contains(r.stdout, "1. The plan, second attempt.") || !strings.Contains(r.stdout, "is closed: delivered") {
		t.Errorf("delivery run after a killed run = %q", r.stdout)
	}
	r = e.ok("", "", "delivery", "show", "1", "--json")
	v := showView(t, r.stdout)
	var lose *delivery.PhaseLogView
	for i, en := range v.PhaseLog {
		if en.Action == "lose" {
			lose = &v.PhaseLog[i]
		}
	}
	if lose == nil || !strings.Contains(lose.Note, "its process is gone") {
		t.Errorf("no lose entry naming the dead process: %+v", v.PhaseLog)
	}
}

// zombie reports whether pid is dead but not yet reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && strings.Contains(string(b), ") Z ")
}

// `delivery show --json` and `list --json` print the delivery view, the
// one the HTTP API returns: the same fields and values, read from the
// same database, with schema_version in front.
func TestDeliveryJSONIsTheAPIView(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t, agenttest.Turn{Final: "1. Add the handler.", CostUSD: 0.25, InputTokens: 10, OutputTokens: 3})
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint\n\nIt returns 200.", "--timeout", "30m,plan=10m")
	e.ok("", "", "delivery", "run", "1")
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Second")

	svc, err := (&Factory{Getenv: func(k string) string { return e.vars[k] }, Now: func() time.Time { return e.now }}).deliveriesForTest(t, e.data)
	if err != nil {
		t.Fatal(err)
	}
	h := (&web.Server{Deliveries: svc, Open: true, Now: func() time.Time { return e.now }}).Handler()
	api := func(path string) map[string]any {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.Host = "localhost"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
		return decodeObject(t, rec.Body.String())
	}
	cli := func(args ...string) map[string]any {
		t.Helper()
		v := decodeObject(t, e.ok("", "", args...).stdout)
		if v["schema_version"] != 1.0 {
			t.Errorf("baton %v: schema_version = %v, want 1", args, v["schema_version"])
		}
		delete(v, "schema_version")
		return v
	}

	show, get := cli("delivery", "show", "1", "--json"), api("/api/deliveries/1")
	if diff := cmp.Diff(get, show); diff != "" {
		t.Errorf("delivery show --json differs from GET /api/deliveries/1 (-api +cli):\n%s", diff)
	}
	if runs := show["agent_runs"].([]any); len(runs) != 1 || runs[0].(map[string]any)["cost_usd"] != 0.25 {
		t.Errorf("show --json agent_runs = %v, want the plan's run", runs)
	}
	list, page := cli("delivery", "list", "--json"), api("/api/deliveries")
	if diff := cmp.Diff(page["deliveries"], list["deliveries"]); diff != "" || len(list["deliveries"].([]any)) != 2 {
		t.Errorf("delivery list --json differs from GET /api/deliveries (-api +cli):\n%s", diff)
	}
	active := cli("delivery", "list", "--json", "--state", "active", "--status", "succeeded")
	if ds := active["deliveries"].([]any); len(ds) != 1 || ds[0].(map[string]any)["title"] != "Add a /health endpoint" || ds[0].(map[string]any)["waiting_for_person"] != true {
		t.Errorf("list --state active --status succeeded = %v, want the planned delivery, waiting for a person", ds)
	}
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, s)
	}
	return v
}

// deliveriesForTest opens the delivery service a command would, closed
// at the end of the test.
func (f *Factory) deliveriesForTest(t *testing.T, data string) (*delivery.Service, error) {
	wireForTest(f, data)
	svc, err := f.Deliveries(t.Context(), DeliveriesOptions{})
	if err == nil {
		t.Cleanup(svc.Close)
	}
	return svc, err
}

// An agent that reports no cost or tokens (a command agent, codex's
// cost) is unknown, not free: "—", never "$0.0000" or "0 in / 0 out".
func TestUnknownCostIsADash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		usd     float64
		in, out int64
		want    string
	}{
		{0, 0, 0, "— —"},
		{0.05, 500, 80, "$0.0500 500/80"},
		{0, 1200, 30, "— 1200/30"},
	} {
		if got := costText(c.usd) + " " + tokensText(c.in, c.out, "%d/%d"); got != c.want {
			t.Errorf("cost %v tokens %d/%d = %q, want %q", c.usd, c.in, c.out, got, c.want)
		}
	}
}

// serve's in-process workers take worker's flags, checked the same way.
func TestServeAndWorkerShareWorkerFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, cmd := range []string{"serve", "worker"} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--lease", "5s", "--heartbeat", "5s"}, "--lease (5s) must be more than twice --heartbeat (5s)"},
			{[]string{"--rescue-after", "0s"}, "--poll and --rescue-after must be positive"},
			{[]string{"--workers", "-1"}, "--workers must be at least"},
		} {
			r := e.run("", "", append([]string{cmd}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("baton %s %v: exit %d, stderr %q; want 2 and %q", cmd, tc.args, r.code, r.stderr, tc.want)
			}
		}
	}
}

// delivery say stores a message for the agent of a queued or running
// phase, and says why it cannot when none runs.
func TestDeliverySay(t *testing.T) {
	t.Parallel()
	e, _, _ := deliveryEnv(t)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint")
	r := e.ok("", "", "delivery", "say", "1", "Use", "the existing router", "--json")
	var out struct {
		SchemaVersion int           `json:"schema_version"`
		Message       baton.Message `json:"message"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.SchemaVersion != 1 {
		t.Fatalf("say --json = %s (%v)", r.stdout, err)
	}
	if m := out.Message; m.Text != "Use the existing router" || m.Phase != baton.PhasePlan || m.Actor == "" || m.ID == 0 {
		t.Errorf("say --json message = %+v", m)
	}
	if r := e.ok("", "", "delivery", "say", "1", "And keep it small"); !strings.Contains(r.stdout, "is queued") {
		t.Errorf("say = %q", r.stdout)
	}
	if r := e.run("", "", "delivery", "say", "1"); r.code != ExitUsage {
		t.Errorf("say without a message: exit %d, %q", r.code, r.stderr)
	}
	e.ok("", "", "delivery", "close", "1")
	if r := e.run("", "", "delivery", "say", "1", "Too late"); r.code == 0 || !strings.Contains(r.stderr, "closed") {
		t.Errorf("say to a closed delivery: exit %d, %q", r.code, r.stderr)
	}
}

// A set-up is a step of its own in `delivery show`: a row in the phase
// log with its outcome, exit, time and the phase it made ready, a
// skipped one in one line, and a failed one's output below the log;
// --json carries the same as fields of its timeline step.
func TestDeliveryShowsItsSetup(t *testing.T) {
	e, _, _ := deliveryEnv(t,
		agenttest.Turn{Final: "1. Add the handler."},
		agenttest.Turn{Files: []agenttest.File{{Path: "health.go", Content: "package app\n"}}, Final: "done"},
	)
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /health endpoint", "--checkpoints", "none",
		"--setup", "echo installing", "--setup", "echo installed")
	e.ok("", "", "delivery", "run", "1") // plan, after its set-up
	e.ok("", "", "delivery", "run", "1") // implement: nothing changed, so no set-up
	e.ok("", "", "delivery", "create", "--repo", ".", "--summary", "Add a /ready endpoint", "--checkpoints", "none",
		"--setup", "echo fetching", "--setup", "echo registry.example unreachable >&2; exit 7", "--setup", "echo never")
	if r := e.run("", "", "delivery", "run", "2"); r.code == 0 {
		t.Errorf("delivery run of a failing set-up exited 0: %s", r.stdout)
	}
	took := regexp.MustCompile(`(ran in|after) [0-9.]+[µmn]?s`)
	worker := regexp.MustCompile(`run:[^ ]+`)
	// What varies from run to run: times, the worker's name (its pid),
	// what the host confines, and so the columns' widths.
	dur := regexp.MustCompile(`  [0-9.]+[µmn]?s(\+?)  `)
	box := regexp.MustCompile(`\[exit (\d+); [^\]]*\]`)
	spaces := regexp.MustCompile(` {2,}`)
	for _, n := range []string{"1", "2"} {
		d := e.ok("", "", "delivery", "show", n, "--json")
		v := showView(t, d.stdout)
		out := e.ok("", "", "delivery", "show", n).stdout
		out = strings.ReplaceAll(out, filepath.Join(e.data, "runs", v.Delivery.ID), "$RUNS")
		out = took.ReplaceAllString(scrubID(e.scrub(out), v.Delivery.ID), "$1 X")
		out = worker.ReplaceAllString(out, "run:WORKER")
		out = box.ReplaceAllString(dur.ReplaceAllString(out, "  X$1  "), "[exit $1; …]")
		out = spaces.ReplaceAllString(out, "  ")
		golden.CheckString(t, "delivery_show_setup_"+n+".golden.txt", out)
		var steps []string
		for _, st := range v.Timeline {
			s := st.Phase + " " + st.Status
			if st.Setup != nil {
				s += fmt.Sprintf(" for %s, %d of %d run, exit %d", st.Setup.For, st.Setup.Ran, len(st.Setup.Commands), st.Setup.ExitCode)
			}
			steps = append(steps, s)
		}
		want := map[string][]string{
			"1": {"setup succeeded for plan, 2 of 2 run, exit 0", "plan succeeded",
				"setup skipped for implement, 0 of 2 run, exit 0", "implement succeeded", "review pending"},
			"2": {"setup failed for plan, 2 of 3 run, exit 7", "plan failed"},
		}[n]
		if !slices.Equal(steps, want) {
			t.Errorf("delivery %s timeline = %q, want %q", n, steps, want)
		}
	}
}
