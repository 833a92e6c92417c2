package delivery_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
)

const publicURL = "https://baton.example.com"

// runPhase runs p and fails the test when it failed.
func runPhase(t *testing.T, h *harness, id string, p baton.Phase) *baton.Delivery {
	t.Helper()
	got, err := h.runner.Run(t.Context(), id, p, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.RunStatus == baton.StatusFailed {
		t.Fatalf("%s failed: %s", p, got.Error)
	}
	return got
}

// With a token, each phase posts a commit status baton/<phase> on the
// pull request's head: pending while it runs, then success or failure,
// linking to the delivery's dashboard page. Verify does not wait for
// baton's own statuses: with no CI, it has nothing to verify.
func TestGitHubPhasesPostCommitStatuses(t *testing.T) {
	t.Parallel()
	h, srv, _ := githubSetup(t,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "done"},
		agenttest.Turn{Final: map[string]string{"verdict": "not_pass", "summary": "No test", "feedback": "Add one."}},
	)
	h.svc.PublicURL = publicURL + "/"
	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddBranch("octo/app", "baton/"+d.ID, strings.Repeat("f", 40))
	runPhase(t, h, d.ID, baton.PhasePlan)
	prs := srv.PullRequests("octo/app")
	if len(prs) != 1 {
		t.Fatalf("pull requests = %+v", prs)
	}
	head := prs[0].HeadSHA
	runPhase(t, h, d.ID, baton.PhaseImplement)
	got := runPhase(t, h, d.ID, baton.PhaseReview)
	if got.String() != "implement/pending" {
		t.Fatalf("after a not_pass review: %s", got.String())
	}
	var seen []string
	for _, st := range srv.Statuses("octo/app", head) {
		seen = append(seen, st.Context+"="+st.State)
		if st.TargetURL != publicURL+"/deliveries/"+d.ID {
			t.Errorf("status %s links to %q, want the delivery's page", st.Context, st.TargetURL)
		}
		if st.Creator != githubtest.DefaultViewer {
			t.Errorf("status %s posted by %q", st.Context, st.Creator)
		}
	}
	// Plan has no pull request until it ends: one status, at the end.
	want := "baton/plan=success baton/implement=pending baton/implement=success baton/review=pending baton/review=failure"
	if strings.Join(seen, " ") != want {
		t.Errorf("statuses = %s\nwant       %s", strings.Join(seen, " "), want)
	}
}

// A status that cannot be posted is a warning in the phase's note; the
// phase goes on.
func TestGitHubStatusFailureIsAWarning(t *testing.T) {
	t.Parallel()
	h, srv, _ := githubSetup(t, agenttest.Turn{Final: planText})
	srv.Fail("POST /repos/octo/app/statuses/*", githubtest.ServerError())
	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddBranch("octo/app", "baton/"+d.ID, strings.Repeat("f", 40))
	if got := runPhase(t, h, d.ID, baton.PhasePlan); got.String() != "implement/pending" {
		t.Fatalf("plan with a failing status = %s (%s)", got.String(), got.Error)
	}
	log, _ := h.svc.Store().PhaseLog(t.Context(), d.ID)
	note := ""
	for _, e := range log {
		if e.Phase == baton.PhasePlan && e.Status == baton.StatusSucceeded {
			note = e.Note
		}
	}
	if !strings.Contains(note, "warning: baton/plan not shown on the pull request") {
		t.Errorf("plan note = %q, want the warning", note)
	}
}

// As a GitHub App, each phase is a check run instead: created in
// progress, completed with its conclusion and the phase log as its
// summary, and updated in place while the head does not move.
func TestGitHubAppPhasesAreCheckRuns(t *testing.T) {
	t.Parallel()
	h, srv, _ := githubSetup(t,
		agenttest.Turn{Final: planText},
		agenttest.Turn{Files: []agenttest.File{{Path: "greet.go", Content: "package app\n"}}, Final: "done"},
	)
	h.svc.PublicURL = publicURL
	key, keyPEM := githubtest.TestAppKey()
	srv.AddApp(githubtest.App{ID: 9, Slug: "baton-team", Key: &key.PublicKey})
	srv.Install(9, "octo/app")
	app, err := github.NewApp(9, keyPEM, "")
	if err != nil {
		t.Fatal(err)
	}
	repo := github.Repo{Host: "github.com", Owner: "octo", Name: "app"}
	in, err := app.Installation(t.Context(), srv.URL(), repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := github.New(github.Options{BaseURL: srv.URL(), Installation: in})
	if err != nil {
		t.Fatal(err)
	}
	prev, _ := h.svc.Forge(t.Context(), nil)
	g := &forge.GitHub{Client: c, Repo: repo, RemoteURL: prev.(*forge.GitHub).RemoteURL}
	h.svc.Forge = func(context.Context, *baton.Delivery) (forge.Forge, error) { return g, nil }

	d, _, err := h.svc.Insert(t.Context(), ghNew(cfg()), "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddBranch("octo/app", "baton/"+d.ID, strings.Repeat("f", 40))
	runPhase(t, h, d.ID, baton.PhasePlan)
	runPhase(t, h, d.ID, baton.PhaseImplement)
	runs := srv.CheckRuns("octo/app")
	if len(runs) != 2 {
		t.Fatalf("check runs = %+v, want one per phase", runs)
	}
	for i, name := range []string{"baton/plan", "baton/implement"} {
		cr := runs[i]
		if cr.Name != name || cr.Status != "completed" || cr.Conclusion != "success" || cr.App != "baton-team" ||
			cr.DetailsURL != publicURL+"/deliveries/"+d.ID || !strings.Contains(cr.Summary, "### Phase log") {
			t.Errorf("check run %d = %+v", i, cr)
		}
	}
	if !strings.Contains(runs[1].Summary, "implement succeeded") || !strings.Contains(runs[1].Summary, "`plan succeeded`") {
		t.Errorf("implement's summary does not tell the phase log:\n%s", runs[1].Summary)
	}
	if n := srv.Count("POST /repos/octo/app/statuses/*"); n != 0 {
		t.Errorf("an App posted %d commit statuses besides its check runs", n)
	}
}
