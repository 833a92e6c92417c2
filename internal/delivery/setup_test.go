package delivery_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/goproxytest"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/testenv"
)

// boxed gives h's deliveries the box a server gives them: caches in its
// data directory, the set-up's apart. It skips where the kernel cannot
// confine.
func boxed(t testing.TB, h *harness) {
	t.Helper()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	h.svc.Sandbox = h.svc.Sandbox.InDataDir(h.dataDir)
	h.svc.Sandbox.Mode = sandbox.ModeRequired
}

// setupCache is the set-up cache of repository repo in h's data
// directory.
func setupCache(h *harness, repo string) string {
	return sandbox.Confinement{}.InDataDir(h.dataDir).ForProject(repo).SetupCache
}

// goRepo is a repository whose test needs example.test/dep, which only
// proxy serves: a Go module with its go.sum.
func goRepo(t testing.TB, proxy *goproxytest.Server) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	gittest.Git(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	write(t, filepath.Join(dir, "go.mod"), "module example.test/app\n\ngo 1.21\n\nrequire example.test/dep v1.0.0\n")
	write(t, filepath.Join(dir, "go.sum"), proxy.GoSum())
	write(t, filepath.Join(dir, "app_test.go"), "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.test/dep\"\n)\n\n"+
		"func TestAnswer(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(dep.Answer())\n\t}\n}\n")
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "initial commit")
	return dir
}

// goEnv points Go at proxy alone, with nothing to fetch elsewhere.
func goEnv(proxy *goproxytest.Server) []string {
	return []string{"GOPROXY=" + proxy.URL, "GOSUMDB=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly"}
}

// A repository whose tests need a dependency its registry serves passes
// verify only with its set-up: the set-up alone may reach the registry
// (setup_egress_allow), and the agents' and checks' box reads what it
// downloaded. A second delivery's set-up downloads nothing: the cache is
// the repository's, in baton's data directory.
func TestSetupMakesVerifyPass(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the Go toolchain in boxes")
	proxy := goproxytest.New(t, goproxytest.Dependency("example.test/dep", 20, 2048))
	src := goRepo(t, proxy)
	h := newHarness(t, 0)
	boxed(t, h)
	h.svc.AgentEnv = append(h.svc.AgentEnv, goEnv(proxy)...)
	verify := func(c baton.DeliveryConfig, summary string) *baton.Delivery {
		t.Helper()
		d := newDelivery(src, c)
		d.Summary, d.ID = summary, baton.DeliveryID(src, summary)
		got, _, err := h.svc.Insert(t.Context(), d, "alice")
		if err != nil {
			t.Fatal(err)
		}
		gittest.Git(t, src, "branch", "baton/"+got.ID)
		setState(t, h, got.ID, baton.PhaseVerify)
		got, err = h.runner.Run(t.Context(), got.ID, baton.PhaseVerify, "")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	c := cfg()
	c.VerifyCommand = "go test ./..."
	// The box's build cache starts empty: the first verify compiles the
	// standard library's test dependencies, which takes more than a minute
	// on a busy two-core machine.
	c.PhaseTimeout = 10 * time.Minute
	c.SetupEgressAllow = []string{proxy.Host}
	without := verify(c, "without set-up")
	if without.Phase != baton.PhaseImplement || proxy.Downloads() != 0 {
		t.Fatalf("verify without set-up = %s (%s), %d downloads; want a failed check and no download (only the set-up reaches the registry)",
			without, without.Error, proxy.Downloads())
	}
	c.Setup = []string{"go mod download"}
	first := verify(c, "first with set-up")
	if first.Phase != baton.PhaseDeploy || !strings.Contains(lastNote(t, h, first.ID), "set-up ran in") {
		log, _ := h.svc.Store().PhaseLog(t.Context(), first.ID)
		t.Fatalf("verify with set-up = %s (%s), log %+v", first, first.Error, log)
	}
	if proxy.Downloads() != 1 {
		t.Errorf("the set-up downloaded the dependency %d times, want once", proxy.Downloads())
	}
	second := verify(c, "second with set-up")
	if second.Phase != baton.PhaseDeploy || proxy.Downloads() != 1 {
		t.Errorf("second delivery = %s (%s), %d downloads; want a pass from the cache", second, second.Error, proxy.Downloads())
	}
	if _, err := os.Stat(filepath.Join(setupCache(h, src), "go", "mod", "example.test", "dep@v1.0.0", "dep.go")); err != nil {
		t.Errorf("the dependency is not in the repository's set-up cache: %v", err)
	}
}

// A failing set-up stops the phase with its output: the agent never
// starts, and the live log shows what the set-up printed.
func TestSetupFailureStopsThePhase(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0, agenttest.Turn{Final: planText})
	c := cfg()
	c.Setup = []string{"echo installing", "echo registry.example unreachable >&2; exit 7", "echo never"}
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhasePlan, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "plan/failed" || !strings.Contains(got.Error, "exited 7") || !strings.Contains(got.Error, "registry.example unreachable") {
		t.Fatalf("plan = %s %q, want failed with the set-up's exit and output", got, got.Error)
	}
	if calls := h.fake.Calls(t); len(calls) != 0 {
		t.Errorf("the agent ran %d times after a failed set-up", len(calls))
	}
	evs, err := h.svc.Events(t.Context(), d.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, e := range evs {
		text = append(text, e.Text)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"set-up 1/3: echo installing", "installing", "registry.example unreachable", "exited 7"} {
		if !strings.Contains(all, want) {
			t.Errorf("the live log lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "never") {
		t.Errorf("the set-up went on after a failed command:\n%s", all)
	}
	logs, _ := filepath.Glob(filepath.Join(h.dataDir, "runs", d.ID, "*", "setup.log"))
	if len(logs) != 1 {
		t.Fatalf("setup logs %q", logs)
	}
	if b, _ := os.ReadFile(logs[0]); !strings.Contains(string(b), "[exit 7;") {
		t.Errorf("setup.log = %q", b)
	}
	// The set-up is a step of its own in the timeline, before the plan
	// step it stopped, read from fields: the command that failed, its
	// exit and its output.
	steps := setupSteps(t, h, d.ID)
	if len(steps) != 1 {
		t.Fatalf("set-up steps = %+v, want one", steps)
	}
	st := steps[0]
	if st.Status != "failed" || st.Setup.For != "plan" || st.Setup.Ran != 2 || st.Setup.ExitCode != 7 ||
		!strings.Contains(st.Setup.Output, "registry.example unreachable") || strings.Contains(st.Setup.Output, "never") ||
		st.Setup.Log != filepath.Join(filepath.Base(filepath.Dir(logs[0])), "setup.log") || !strings.Contains(st.Note, "exited 7") {
		t.Errorf("set-up step = %+v %+v", st, *st.Setup)
	}
}

// setupSteps are the set-up steps of id's timeline, each checked to come
// just before a step of the phase it made ready.
func setupSteps(t *testing.T, h *harness, id string) []delivery.StepView {
	t.Helper()
	det, err := h.svc.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	tl := det.View(time.Now()).Timeline
	var out []delivery.StepView
	for i, st := range tl {
		if st.Phase != delivery.SetupStep {
			continue
		}
		out = append(out, st)
		j := i + 1
		for j < len(tl) && tl[j].Phase == delivery.SetupStep {
			j++
		}
		if j == len(tl) || tl[j].Phase != st.Setup.For || tl[j].Attempt != st.Setup.ForAttempt {
			t.Errorf("set-up step %d (for %s %d) is not before its phase's step: %+v", i, st.Setup.For, st.Setup.ForAttempt, tl)
		}
	}
	return out
}

// The set-up runs once per worktree, and again when a file it depends on
// changed (the agent added a lock file): not before every agent phase.
func TestSetupRunsAgainWhenLockFilesChange(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "done"},
		agenttest.Turn{Files: []agenttest.File{{Path: "go.sum", Content: "example.test/dep v1.0.0 h1:x\n"}}, Final: "done"},
		agenttest.Turn{Final: map[string]string{"verdict": "pass", "summary": "fine"}},
	)
	c := cfg()
	c.Setup = []string{`echo ran >> "$BATON_SETUP_LOG"`}
	marks := filepath.Join(t.TempDir(), "marks")
	h.svc.Sandbox.Policy.Write = append(h.svc.Sandbox.Policy.Write, filepath.Dir(marks))
	h.svc.AgentEnv = append(h.svc.AgentEnv, "BATON_SETUP_LOG="+marks)
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(src, c), "alice")
	runs := func() int {
		b, _ := os.ReadFile(marks)
		return strings.Count(string(b), "ran")
	}
	for i, step := range []struct {
		phase baton.Phase
		runs  int
	}{{baton.PhasePlan, 1}, {baton.PhaseImplement, 1}, {baton.PhaseImplement, 1}, {baton.PhaseReview, 2}} {
		setState(t, h, d.ID, step.phase)
		got, err := h.runner.Run(t.Context(), d.ID, step.phase, "")
		if err != nil || got.RunStatus == baton.StatusFailed {
			t.Fatalf("step %d (%s) = %v %v", i, step.phase, got, err)
		}
		if n := runs(); n != step.runs {
			t.Errorf("after step %d (%s) the set-up ran %d times, want %d", i, step.phase, n, step.runs)
		}
	}
	// The set-up's log is one of the logs of the agent run it preceded,
	// and only of those.
	runsSeen, err := h.svc.Store().AgentRuns(t.Context(), d.ID)
	if err != nil || len(runsSeen) != 4 {
		t.Fatalf("agent runs = %d, %v", len(runsSeen), err)
	}
	for i, r := range runsSeen {
		var names []string
		for _, f := range delivery.LogFiles(r) {
			names = append(names, f.Name)
		}
		if want := i == 0 || i == 3; slices.Contains(names, delivery.SetupLog) != want {
			t.Errorf("run %d (%s) logs %q: set-up log wanted %v", i+1, r.Phase, names, want)
		}
	}
	if f, err := delivery.OpenLog(runsSeen[0], delivery.SetupLog); err != nil {
		t.Errorf("OpenLog(setup.log) = %v", err)
	} else {
		f.Close()
	}
	// Each agent phase has its set-up step: one that ran, or one line
	// saying why it did not.
	var got []string
	for _, st := range setupSteps(t, h, d.ID) {
		got = append(got, st.Setup.For+" "+st.Status)
		if st.Status == "skipped" && !strings.Contains(st.Note, "unchanged since it last ran") {
			t.Errorf("skipped set-up note = %q", st.Note)
		}
		if st.Status == "succeeded" && (!strings.HasPrefix(st.Note, "set-up ran in ") || st.Setup.Ran != 1 || st.Setup.ExitCode != 0) {
			t.Errorf("set-up step = %+v %+v", st, *st.Setup)
		}
	}
	if want := []string{"plan succeeded", "implement skipped", "implement skipped", "review succeeded"}; !slices.Equal(got, want) {
		t.Errorf("set-up steps = %q, want %q", got, want)
	}
}

// Only a repository's set-up writes its cache: neither what an agent's
// code runs (a check, in the agent's box) nor another repository's
// set-up can plant anything in it.
func TestSetupCacheIsTheSetupsAlone(t *testing.T) {
	t.Parallel()
	victim, attacker := sourceRepo(t), sourceRepo(t)
	h := newHarness(t, 0)
	boxed(t, h)
	own, other := setupCache(h, victim), setupCache(h, attacker)
	for _, dir := range []string{own, other} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The victim's own agent code, as its verify command.
	c := cfg()
	c.Setup = []string{`echo mine > "$XDG_CACHE_HOME/../own"`}
	c.VerifyCommand = "sh -c 'echo planted > " + own + "/planted && ls " + own + "'"
	d, _, _ := h.svc.Insert(t.Context(), newDelivery(victim, c), "alice")
	gittest.Git(t, victim, "branch", "baton/"+d.ID)
	setState(t, h, d.ID, baton.PhaseVerify)
	got, err := h.runner.Run(t.Context(), d.ID, baton.PhaseVerify, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != baton.PhaseImplement {
		t.Errorf("an agent's check wrote the set-up cache: verify = %s (%s)", got, lastNote(t, h, got.ID))
	}
	if b, err := os.ReadFile(filepath.Join(own, "own")); err != nil || string(b) != "mine\n" {
		t.Errorf("the set-up's own write = %q, %v", b, err)
	}
	// Another repository's set-up.
	c = cfg()
	c.Setup = []string{"echo planted > " + own + "/planted"}
	a, _, _ := h.svc.Insert(t.Context(), newDelivery(attacker, c), "mallory")
	got, err = h.runner.Run(t.Context(), a.ID, baton.PhasePlan, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "plan/failed" {
		t.Errorf("another repository's set-up = %s (%s), want failed", got, got.Error)
	}
	if _, err := os.Stat(filepath.Join(own, "planted")); err == nil {
		t.Error("something other than the repository's set-up planted a file in its cache")
	}
}

// lastNote is what the last entry of id's phase log says.
func lastNote(t *testing.T, h *harness, id string) string {
	t.Helper()
	log, err := h.svc.Store().PhaseLog(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range log {
		notes = append(notes, e.Note)
	}
	return strings.Join(notes, " | ")
}

// A repository that opts in takes its set-up from its dev container; one
// that opts in without a dev container is told what to do.
func TestCreateTakesSetupFromTheDevcontainer(t *testing.T) {
	t.Parallel()
	src := sourceRepo(t)
	h := newHarness(t, 0)
	write(t, filepath.Join(src, ".agent", "delivery.json"), `{"setup_from": "devcontainer", "setup_files": ["web/package-lock.json"]}`)
	_, _, err := h.svc.Create(t.Context(), delivery.Request{Repo: src, Summary: "no dev container yet", Actor: "alice"})
	if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), ".devcontainer/devcontainer.json") {
		t.Errorf("Create without a dev container = %v, want Invalid naming the file", err)
	}
	write(t, filepath.Join(src, ".devcontainer", "devcontainer.json"), "{\n  // made once\n  \"onCreateCommand\": \"npm ci --prefix web\",\n  \"postCreateCommand\": [\"go\", \"mod\", \"download\"],\n}\n")
	d, _, err := h.svc.Create(t.Context(), delivery.Request{Repo: src, Summary: "with a dev container", Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"npm ci --prefix web", "'go' 'mod' 'download'"}; !slices.Equal(d.Config.Setup, want) || !slices.Equal(d.Config.SetupFiles, []string{"web/package-lock.json"}) {
		t.Errorf("set-up = %q files %q, want %q", d.Config.Setup, d.Config.SetupFiles, want)
	}
}
