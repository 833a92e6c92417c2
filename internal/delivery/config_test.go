package delivery

import (
	"path/filepath"
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
	c, err = ParseSourceConfig([]byte(`{"setup": ["npm ci", "go mod download"], "setup_files": ["web/package-lock.json", "go.sum"],
		"setup_egress_allow": ["127.0.0.1:4873"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var sc baton.DeliveryConfig
	if err := c.Apply(&sc, nil, nil); err != nil || len(sc.Setup) != 2 || sc.SetupFiles[0] != "web/package-lock.json" || sc.SetupEgressAllow[0] != "127.0.0.1:4873" {
		t.Errorf("set-up = %q %q %q, %v", sc.Setup, sc.SetupFiles, sc.SetupEgressAllow, err)
	}
	if cfg.VerifyCommand != "go test ./..." || cfg.ObserveWindow != 2*time.Minute || cfg.MergeMethod != baton.MergeRebase || cfg.MaxRounds != 2 || ep != baton.PhaseDeploy || len(cps) != 2 {
		t.Errorf("Apply = %+v %s %v", cfg, ep, cps)
	}
	for _, bad := range []string{
		`{"verfy": "typo"}`, `{"observe_window": "soon"}`, `{"merge": "octopus"}`, `{"endpoint": "close"}`,
		`{"checkpoints": ["intake"]}`, `{"max_rounds": -1}`, `[]`, `{} {}`, `{"timeout": "-5m"}`, `{"timeout": "close=5m"}`, `{"agent_args": "x"}`,
		`{"egress_allow": ["localhost"]}`, `{"egress_allow": ["https://user:pw@x.example"]}`, `{"egress_allow": "x.example"}`,
		`{"setup": ["  "]}`, `{"setup": "npm ci"}`, `{"setup": ["a\u0000b"]}`, `{"setup": ["` + strings.Repeat("x", 5000) + `"]}`,
		`{"setup": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`,
		`{"setup_files": ["../go.sum"]}`, `{"setup_files": ["/etc/passwd"]}`, `{"setup_files": ["./go.sum"]}`, `{"setup_files": ["a//b"]}`, `{"setup_files": [""]}`,
		`{"setup_from": "dockerfile"}`, `{"setup": ["make deps"], "setup_from": "devcontainer"}`, `{"setup_egress_allow": ["localhost"]}`,
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
	f.Add(`{"setup": ["npm ci"], "setup_files": ["package-lock.json", "web/yarn.lock"], "setup_egress_allow": ["127.0.0.1:4873"]}`)
	f.Add(`{"setup_from": "devcontainer"}`)
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
		if _, err := netpolicy.Parse(cfg.SetupEgressAllow...); err != nil {
			t.Fatalf("parsed a set-up egress entry the box refuses: %v", err)
		}
		if len(cfg.Setup) > 16 || (c.SetupFrom != "" && c.SetupFrom != SetupFromDevcontainer) || (c.SetupFrom != "" && c.Setup != nil) {
			t.Fatalf("parsed a bad set-up: %q from %q", cfg.Setup, c.SetupFrom)
		}
		for _, cmd := range cfg.Setup {
			if strings.TrimSpace(cmd) == "" || len(cmd) > 4096 || strings.ContainsRune(cmd, 0) {
				t.Fatalf("parsed a bad set-up command %q", cmd)
			}
		}
		for _, f := range cfg.SetupFiles {
			if f == "" || filepath.IsAbs(f) || filepath.Clean(f) != f || f == ".." || strings.HasPrefix(f, "../") || f == "." {
				t.Fatalf("parsed a set-up file outside the repository: %q", f)
			}
		}
		for _, p := range cps {
			if !p.Runnable() || strings.Contains(string(p), ",") {
				t.Fatalf("bad checkpoint %q", p)
			}
		}
	})
}
