package delivery

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/netpolicy"
)

func TestParseSourceConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseSourceConfig([]byte(`{"verify": "go test ./...", "observe": "curl -fsS localhost:8080/health",
		"observe_window": "2m", "checkpoints": ["plan", "deploy"], "endpoint": "deploy", "merge": "rebase", "max_rounds": 2,
		"timeout": "30m,implement=2h", "agent_args": ["--allowedTools", "Read,Edit"],
		"egress_allow": ["registry.corp.example", "https://artifacts.corp.example:8443/maven"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var cfg baton.DeliveryConfig
	var ep baton.Phase
	var cps []baton.Phase
	if err := c.Apply(&cfg, &ep, &cps); err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout(baton.PhaseImplement) != 2*time.Hour || cfg.Timeout(baton.PhaseReview) != 30*time.Minute || len(cfg.AgentArgs) != 2 {
		t.Errorf("timeouts/args = %v %v %v", cfg.PhaseTimeout, cfg.PhaseTimeouts, cfg.AgentArgs)
	}
	if len(cfg.EgressAllow) != 2 || cfg.EgressAllow[1] != "https://artifacts.corp.example:8443/maven" {
		t.Errorf("EgressAllow = %q", cfg.EgressAllow)
	}
	if cfg.VerifyCommand != "go test ./..." || cfg.ObserveWindow != 2*time.Minute || cfg.MergeMethod != baton.MergeRebase || cfg.MaxRounds != 2 || ep != baton.PhaseDeploy || len(cps) != 2 {
		t.Errorf("Apply = %+v %s %v", cfg, ep, cps)
	}
	for _, bad := range []string{
		`{"verfy": "typo"}`, `{"observe_window": "soon"}`, `{"merge": "octopus"}`, `{"endpoint": "close"}`,
		`{"checkpoints": ["intake"]}`, `{"max_rounds": -1}`, `[]`, `{} {}`, `{"timeout": "-5m"}`, `{"timeout": "close=5m"}`, `{"agent_args": "x"}`,
		`{"egress_allow": ["localhost"]}`, `{"egress_allow": ["https://user:pw@x.example"]}`, `{"egress_allow": "x.example"}`,
	} {
		if _, err := ParseSourceConfig([]byte(bad)); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseSourceConfig(%s) = %v, want Invalid", bad, err)
		}
	}
}

func FuzzParseSourceConfig(f *testing.F) {
	f.Add(`{"verify":"make test","timeout":"10m","checkpoints":["plan"]}`)
	f.Add(`{"max_rounds": 3, "merge": "SQUASH"}`)
	f.Add(`{"observe_window": "1h2m3s"}`)
	f.Add(`{"egress_allow": ["*.corp.example", "10.0.0.1:5432"]}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseSourceConfig([]byte(s))
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("error code %s", baton.ErrorCode(err))
			}
			return
		}
		var cfg baton.DeliveryConfig
		ep := baton.DefaultEndpoint
		var cps []baton.Phase
		if err := c.Apply(&cfg, &ep, &cps); err != nil {
			t.Fatalf("a parsed config does not apply: %v", err)
		}
		if cfg.PhaseTimeout < 0 || cfg.ObserveWindow < 0 || cfg.MaxRounds < 0 || !ep.Runnable() {
			t.Fatalf("parsed an invalid config: %+v %s", cfg, ep)
		}
		if _, err := netpolicy.Parse(cfg.EgressAllow...); err != nil {
			t.Fatalf("parsed an egress entry the box refuses: %v", err)
		}
		for _, p := range cps {
			if !p.Runnable() || strings.Contains(string(p), ",") {
				t.Fatalf("bad checkpoint %q", p)
			}
		}
	})
}
