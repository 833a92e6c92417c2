package baton

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAddRefReplacesWorkRefOfSameType(t *testing.T) {
	t.Parallel()
	d := &Delivery{Refs: []Ref{{Role: RoleRequest, Type: "github_issue", URL: "https://github.com/o/r/issues/1"}}}
	d.AddRef(Ref{Role: RoleWork, Type: "branch", Label: "baton/x"})
	d.AddRef(Ref{Role: RoleWork, Type: "pr", URL: "https://github.com/o/r/pull/2"})
	d.AddRef(Ref{Role: RoleWork, Type: "pr", URL: "https://github.com/o/r/pull/3"})
	d.AddRef(Ref{Role: RoleReview, Type: "pr_review", URL: "https://github.com/o/r/pull/3#r1"})
	d.AddRef(Ref{Role: RoleReview, Type: "pr_review", URL: "https://github.com/o/r/pull/3#r2"})
	d.AddRef(Ref{Role: RoleReview, Type: "pr_review", URL: "https://github.com/o/r/pull/3#r1", Label: "again"})
	want := []Ref{
		{Role: RoleRequest, Type: "github_issue", URL: "https://github.com/o/r/issues/1"},
		{Role: RoleWork, Type: "branch", Label: "baton/x"},
		{Role: RoleWork, Type: "pr", URL: "https://github.com/o/r/pull/3"},
		{Role: RoleReview, Type: "pr_review", URL: "https://github.com/o/r/pull/3#r1", Label: "again"},
		{Role: RoleReview, Type: "pr_review", URL: "https://github.com/o/r/pull/3#r2"},
	}
	if diff := cmp.Diff(want, d.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if r, ok := d.Ref(RoleWork, ""); !ok || r.Type != "pr" {
		t.Errorf("Ref(work) = %+v", r)
	}
}

func TestDeliveryIDIsStable(t *testing.T) {
	t.Parallel()
	a := DeliveryID("octo/app", "https://github.com/octo/app/issues/12")
	if a != DeliveryID("octo/app", "https://github.com/octo/app/issues/12") || len(a) != 12 || !ValidID(a) {
		t.Errorf("DeliveryID = %q", a)
	}
	if a == DeliveryID("octo/app", "https://github.com/octo/app/issues/13") || a == DeliveryID("octo/other", "https://github.com/octo/app/issues/12") {
		t.Error("different requests share an id")
	}
}

func TestParseCheckpoints(t *testing.T) {
	t.Parallel()
	got, err := ParseCheckpoints(" deploy, plan ,plan,VERIFY")
	if err != nil || !cmp.Equal(got, []Phase{PhasePlan, PhaseVerify, PhaseDeploy}) {
		t.Errorf("ParseCheckpoints = %v %v", got, err)
	}
	for _, s := range []string{"", "none", "NONE"} {
		if got, err := ParseCheckpoints(s); err != nil || len(got) != 0 {
			t.Errorf("ParseCheckpoints(%q) = %v %v", s, got, err)
		}
	}
	for _, s := range []string{"intake", "close", "plan,nope"} {
		if _, err := ParseCheckpoints(s); ErrorCode(err) != Invalid {
			t.Errorf("ParseCheckpoints(%q) = %v, want Invalid", s, err)
		}
	}
}

func TestDeliveryValidate(t *testing.T) {
	t.Parallel()
	ok := Delivery{ID: "abc", Summary: "s", Repository: "/r", Forge: ForgeLocal, Phase: PhasePlan, RunStatus: StatusPending,
		Endpoint: PhaseObserve, Checkpoints: []Phase{PhasePlan}, Config: DeliveryConfig{ObserveCommand: "true"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Delivery){
		"bad id":             func(d *Delivery) { d.ID = "../x" },
		"no summary":         func(d *Delivery) { d.Summary = " " },
		"bad forge":          func(d *Delivery) { d.Forge = "gitlab" },
		"bad endpoint":       func(d *Delivery) { d.Endpoint = PhaseClose },
		"intake checkpoint":  func(d *Delivery) { d.Checkpoints = []Phase{PhaseIntake} },
		"observe after end":  func(d *Delivery) { d.Endpoint = PhaseDeploy },
		"bad merge":          func(d *Delivery) { d.Config.MergeMethod = "octopus" },
		"negative max round": func(d *Delivery) { d.Config.MaxRounds = -1 },
	} {
		d := ok
		mut(&d)
		if err := d.Validate(); ErrorCode(err) != Invalid {
			t.Errorf("%s: Validate = %v, want Invalid", name, err)
		}
	}
}

func TestParseTimeouts(t *testing.T) {
	t.Parallel()
	def, per, err := ParseTimeouts(" 45m, implement=90m ,plan=10m")
	if err != nil || def != 45*time.Minute || per[PhaseImplement] != 90*time.Minute || per[PhasePlan] != 10*time.Minute || len(per) != 2 {
		t.Fatalf("ParseTimeouts = %v %v %v", def, per, err)
	}
	c := DeliveryConfig{PhaseTimeout: def, PhaseTimeouts: per}
	if c.Timeout(PhaseReview) != 45*time.Minute || c.Timeout(PhaseImplement) != 90*time.Minute {
		t.Errorf("Timeout = %s %s", c.Timeout(PhaseReview), c.Timeout(PhaseImplement))
	}
	if (DeliveryConfig{}).Timeout(PhasePlan) != DefaultPhaseTimeout {
		t.Error("zero config has no default timeout")
	}
	for _, s := range []string{"", "soon", "-5m", "0s", "45m,30m", "close=5m", "plan=1m,plan=2m", "plan=", "=5m", "plan:5m"} {
		if _, _, err := ParseTimeouts(s); ErrorCode(err) != Invalid {
			t.Errorf("ParseTimeouts(%q) = %v, want Invalid", s, err)
		}
	}
}

func FuzzParseTimeouts(f *testing.F) {
	f.Add("45m")
	f.Add("plan=10m,implement=1h30m")
	f.Add("verify=5s, 2h ,observe=1m")
	f.Fuzz(func(t *testing.T, s string) {
		def, per, err := ParseTimeouts(s)
		if err != nil {
			if ErrorCode(err) != Invalid {
				t.Fatalf("error code %s", ErrorCode(err))
			}
			return
		}
		if def < 0 || def == 0 && len(per) == 0 {
			t.Fatalf("ParseTimeouts(%q) = %v %v: nothing parsed", s, def, per)
		}
		c := DeliveryConfig{PhaseTimeout: def, PhaseTimeouts: per}
		for p, d := range per {
			if !p.Runnable() || d <= 0 || c.Timeout(p) != d {
				t.Fatalf("ParseTimeouts(%q): %s=%s", s, p, d)
			}
		}
		for _, p := range Phases {
			if c.Timeout(p) <= 0 {
				t.Fatalf("no timeout for %s", p)
			}
		}
	})
}

func TestDeliveryTitle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ summary, want string }{
		{"Add a health endpoint", "Add a health endpoint"},
		{"\n  Add a health endpoint\nCover HEAD requests too.\n", "Add a health endpoint"},
		{"one\r\ntwo", "one\r"},
		{"", ""},
	} {
		d := &Delivery{Summary: tc.summary}
		if got := d.Title(); got != tc.want {
			t.Errorf("Delivery{Summary: %q}.Title() = %q, want %q", tc.summary, got, tc.want)
		}
	}
}

func TestDeliveryWaitsForPerson(t *testing.T) {
	t.Parallel()
	waits := map[string]bool{
		// A checkpoint phase nobody started yet.
		"plan/pending": true, "deploy/pending": true,
		// Results to approve, failures and blocks to decide on.
		"plan/succeeded": true, "review/blocked": true, "implement/failed": true, "verify/failed": true,
		// Closed deliveries wait for no one, whatever their status.
		"close/succeeded": false, "close/failed": false, "close/pending": false,
		// Workers' turn.
		"plan/pending queued": false, "implement/running": false, "deploy/running": false,
		// intake is done at create: nothing to start.
		"intake/pending": false,
	}
	for state, want := range waits {
		var d Delivery
		phase, rest, _ := strings.Cut(state, "/")
		status, queued, _ := strings.Cut(rest, " ")
		d.Phase, d.RunStatus, d.Queued = Phase(phase), RunStatus(status), queued == "queued"
		if got := d.WaitsForPerson(); got != want {
			t.Errorf("Delivery{%s}.WaitsForPerson() = %v, want %v", state, got, want)
		}
	}
}
