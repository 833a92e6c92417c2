package delivery_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

func ptr[T any](v T) *T { return &v }

// A request for a local repository layers baton's defaults, the
// repository's .agent/delivery.json and the request's settings, in that
// order; creating the same request again finds the same delivery.
func TestCreateFromRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	src := sourceRepo(t)
	write(t, filepath.Join(src, "docs", "README.md"), "# docs\n") // the request names a directory inside the repository
	write(t, filepath.Join(src, delivery.SourceConfigPath), `{"agent": "codex", "verify": "make test", "checkpoints": ["deploy"], "max_rounds": 2}`)
	req := delivery.Request{
		Repo: filepath.Join(src, "docs"), Summary: "Add a /health endpoint\n\nIt returns 200.", Actor: "alice",
		Settings: delivery.Settings{Verify: ptr("go test ./..."), Timeout: ptr("30m,plan=10m"), AgentArgs: ptr([]string{"--verbose"})},
	}
	d, created, err := h.svc.Create(t.Context(), req)
	if err != nil || !created {
		t.Fatalf("Create = %v created=%v", err, created)
	}
	c := d.Config
	if d.Repository != src || d.Forge != baton.ForgeLocal || d.String() != "plan/pending" || !d.Queued {
		t.Errorf("created %s in %s (%s), queued=%v", d.String(), d.Repository, d.Forge, d.Queued)
	}
	if c.Agent != "codex" || c.VerifyCommand != "go test ./..." || c.MaxRounds != 2 || strings.Join(c.AgentArgs, " ") != "--verbose" {
		t.Errorf("config = %+v, want the file's agent and rounds under the request's verify and agent args", c)
	}
	if c.Timeout(baton.PhasePlan) != 10*time.Minute || c.Timeout(baton.PhaseImplement) != 30*time.Minute {
		t.Errorf("timeouts = %v %v", c.PhaseTimeout, c.PhaseTimeouts)
	}
	if len(d.Checkpoints) != 1 || d.Checkpoints[0] != baton.PhaseDeploy {
		t.Errorf("checkpoints = %v, want the file's [deploy]", d.Checkpoints)
	}
	if r, ok := d.Ref(baton.RoleRequest, "summary"); !ok || r.Label != "Add a /health endpoint" || d.ID != baton.DeliveryID(src, strings.TrimSpace(req.Summary)) {
		t.Errorf("request ref %+v, id %s", r, d.ID)
	}
	req.Settings.Agent = ptr("claude")
	again, created, err := h.svc.Create(t.Context(), req)
	if err != nil || created || again.ID != d.ID || again.Config.Agent != "codex" {
		t.Errorf("second Create = %v created=%v agent %s, want the first delivery unchanged", err, created, again.Config.Agent)
	}
}

// A request that cannot make a delivery is Invalid, and nothing is
// stored.
func TestCreateRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	src := sourceRepo(t)
	for name, req := range map[string]delivery.Request{
		"nothing":                {Summary: "x"},
		"repo without summary":   {Repo: src},
		"window without observe": {Repo: src, Summary: "x", Settings: delivery.Settings{ObserveWindow: ptr(time.Minute)}},
		"not a repository":       {Repo: t.TempDir(), Summary: "x"},
		"unknown agent":          {Repo: src, Summary: "x", Settings: delivery.Settings{Agent: ptr("vim")}},
		"intake checkpoint":      {Repo: src, Summary: "x", Settings: delivery.Settings{Checkpoints: ptr([]baton.Phase{baton.PhaseIntake})}},
		"observe after the end":  {Repo: src, Summary: "x", Settings: delivery.Settings{Endpoint: ptr(baton.PhaseDeploy), Observe: ptr("true")}},
		"not an issue URL":       {IssueURL: "https://example.com/not/an/issue"},
		"unknown merge method":   {Repo: src, Summary: "x", Settings: delivery.Settings{Merge: ptr(baton.MergeMethod("octopus"))}},
	} {
		if _, _, err := h.svc.Create(t.Context(), req); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("%s: Create = %v, want Invalid", name, err)
		}
	}
	if list, err := h.svc.List(t.Context(), baton.DeliveryFilter{}); err != nil || len(list) != 0 {
		t.Errorf("List = %d deliveries, %v; want none", len(list), err)
	}
}

// An issue request is named after the issue's title, read through the
// GitHub client; a bad token fails without showing it.
func TestCreateFromIssue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	srv := githubtest.NewServer(t)
	srv.RequireToken(ghToken)
	srv.AddIssue("octo/app", githubtest.Issue{Number: 12, Title: "Sessions expire too early"})
	token := ghToken
	h.svc.GitHub = func(ctx context.Context, repo github.Repo) (*github.Client, error) {
		if repo.String() != "octo/app" {
			t.Errorf("GitHub repository = %s", repo)
		}
		return github.New(github.Options{BaseURL: srv.URL(), Token: github.Token(token)})
	}
	url := "https://github.com/octo/app/issues/12"
	d, created, err := h.svc.Create(t.Context(), delivery.Request{IssueURL: url, Actor: "alice"})
	if err != nil || !created {
		t.Fatalf("Create = %v", err)
	}
	if d.Summary != "GitHub Issue #12: Sessions expire too early" || d.Repository != "octo/app" || d.Forge != baton.ForgeGitHub || d.ID != baton.DeliveryID("octo/app", url) {
		t.Errorf("created %+v", d)
	}
	token = "ghp_wrong_token_0123456789abcdefghijklmn"
	_, _, err = h.svc.Create(t.Context(), delivery.Request{IssueURL: "https://github.com/octo/app/issues/13"})
	if err == nil || strings.Contains(err.Error(), "ghp_wrong") || !strings.Contains(err.Error(), "give a summary") {
		t.Errorf("Create with a bad token = %v", err)
	}
}

// Decide takes only a person's decisions; a reject needs its reason.
func TestDecide(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []delivery.Action{delivery.ActForward, "merge"} {
		if _, err := h.svc.Decide(t.Context(), d.ID, a, "bob", ""); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("Decide(%s) = %v, want Invalid", a, err)
		}
	}
	// run starts a waiting phase: the plan is queued already.
	if _, err := h.svc.Decide(t.Context(), d.ID, delivery.ActRun, "bob", ""); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("Decide(run) of a queued plan = %v, want Conflict", err)
	}
	if _, err := h.svc.Decide(t.Context(), d.ID, delivery.ActReject, "bob", " "); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("reject without a reason = %v, want Invalid", err)
	}
	if _, err := h.svc.Decide(t.Context(), "#1", delivery.ActApprove, "bob", ""); baton.ErrorCode(err) != baton.Conflict {
		t.Errorf("approve a queued plan = %v, want Conflict", err)
	}
	got, err := h.svc.Decide(t.Context(), d.ID, delivery.ActClose, "bob", "not needed")
	if err != nil || got.Phase != baton.PhaseClose {
		t.Fatalf("close = %v, %v", got, err)
	}
	det, err := h.svc.Get(t.Context(), d.ID[:6])
	if err != nil {
		t.Fatal(err)
	}
	last := det.PhaseLog[len(det.PhaseLog)-1]
	if last.Actor != "bob" || last.Action != "close" || !strings.HasSuffix(last.Note, ": not needed") {
		t.Errorf("last log entry = %+v", last)
	}
}

// A worker runs queued phases until stopped and logs each result.
func TestWorkerRunsQueuedPhases(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 1, agenttest.Turn{Final: planText})
	c := cfg()
	c.Agent = h.fake.CommandAgent()
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), c), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer // read once Run has returned: nothing writes then
	h.runner.HeartbeatEvery = 100 * time.Millisecond
	w := &delivery.Worker{Runner: h.runner, Lease: time.Second, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	h.waitFor(d.ID, "the plan to run", func(d *baton.Delivery) bool { return d.Phase != baton.PhasePlan })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Worker.Run = %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "delivery="+d.ID+" phase=plan state=implement/pending") {
		t.Errorf("worker log = %q, want the plan's result", out)
	}
}

func TestParseFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase, status, state string
		want                 baton.DeliveryFilter
	}{
		{"", "", "", baton.DeliveryFilter{}},
		{"review", "failed", "", baton.DeliveryFilter{Phase: baton.PhaseReview, RunStatus: baton.StatusFailed}},
		{"close", "succeeded", "closed", baton.DeliveryFilter{Phase: baton.PhaseClose, RunStatus: baton.StatusSucceeded, Closed: true}},
		{"plan", "", "active", baton.DeliveryFilter{Phase: baton.PhasePlan, Open: true}},
		{"", "blocked", "all", baton.DeliveryFilter{RunStatus: baton.StatusBlocked}},
	} {
		got, err := delivery.ParseFilter(tc.phase, tc.status, tc.state)
		if err != nil || got != tc.want {
			t.Errorf("ParseFilter(%q, %q, %q) = %+v, %v; want %+v", tc.phase, tc.status, tc.state, got, err, tc.want)
		}
	}
	// Words no edge offers: the MCP tool once advertised waiting, closed
	// (as a status) and done.
	for _, in := range [][3]string{{"reveiw", "", ""}, {"", "done", ""}, {"", "waiting", ""}, {"", "closed", ""}, {"done", "", ""}, {"", "", "open"}} {
		if _, err := delivery.ParseFilter(in[0], in[1], in[2]); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseFilter(%q, %q, %q) = %v, want Invalid", in[0], in[1], in[2], err)
		}
	}
}

// FuzzParseFilter holds ParseFilter to its vocabulary: it accepts exactly
// the words in FilterPhases (as ParsePhase reads them), FilterStatuses
// and FilterStates, and the filter says what the words said.
func FuzzParseFilter(f *testing.F) {
	f.Add("review", "failed", "active")
	f.Add("", "waiting", "")
	f.Add(" PLAN ", "", "closed")
	f.Fuzz(func(t *testing.T, phase, status, state string) {
		got, err := delivery.ParseFilter(phase, status, state)
		p, perr := baton.ParsePhase(phase)
		phaseOK := phase == "" || perr == nil && slices.Contains(delivery.FilterPhases, p)
		statusOK := status == "" || slices.Contains(delivery.FilterStatuses, baton.RunStatus(status))
		stateOK := state == "" || slices.Contains(delivery.FilterStates, state)
		if ok := phaseOK && statusOK && stateOK; ok != (err == nil) {
			t.Fatalf("ParseFilter(%q, %q, %q) = %v, want ok=%v", phase, status, state, err, ok)
		}
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseFilter(%q, %q, %q) = %v, want Invalid", phase, status, state, err)
			}
			return
		}
		want := baton.DeliveryFilter{RunStatus: baton.RunStatus(status), Open: state == "active", Closed: state == "closed"}
		if phase != "" {
			want.Phase = p
		}
		if got != want {
			t.Fatalf("ParseFilter(%q, %q, %q) = %+v, want %+v", phase, status, state, got, want)
		}
	})
}

// RunNow runs a phase in the foreground; its agent run and raw logs are
// read back by number.
func TestRunNowAndAgentRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0, agenttest.Turn{Final: planText}) // RunNow's runner gives the agent the service's AgentEnv, as a worker's does
	c := cfg()
	c.Agent = h.fake.CommandAgent()
	d, _, err := h.svc.Insert(t.Context(), newDelivery(sourceRepo(t), c, baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var live bytes.Buffer
	got, err := h.svc.RunNow(t.Context(), "#1", "alice", delivery.Settings{}, &live, time.Minute)
	if err != nil || got.String() != "plan/succeeded" {
		t.Fatalf("RunNow = %v, %v; want plan/succeeded at its checkpoint", got, err)
	}
	if !strings.Contains(live.String(), "== "+d.ID+": plan") {
		t.Errorf("live output = %q", live.String())
	}
	run, err := h.svc.AgentRun(t.Context(), d.ID, 1)
	if err != nil || run.Phase != baton.PhasePlan || run.Status != baton.RunSucceeded {
		t.Fatalf("AgentRun(1) = %+v, %v", run, err)
	}
	logs := delivery.LogFiles(run)
	if len(logs) == 0 || logs[0].Size == 0 || filepath.Dir(logs[0].Path) != run.LogDir {
		t.Errorf("LogFiles = %+v, want the run's logs in %s", logs, run.LogDir)
	}
	if _, err := h.svc.AgentRun(t.Context(), d.ID, 2); baton.ErrorCode(err) != baton.NotFound {
		t.Errorf("AgentRun(2) = %v, want NotFound", err)
	}
}
