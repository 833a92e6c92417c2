package agentrun

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sandbox"
)

// A boxed agent reaches its model API, read from where its own
// configuration names it, and nothing else of this machine's loopback:
// each refusal is in the live log and the result. Codex's configuration
// lives outside the home here (CODEX_HOME=/elsewhere), which the agent
// home takes over inside the box: the model API is still read from the
// user's.
func TestBoxedAgentReachesOnlyItsModelAPI(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() || slices.ContainsFunc(st.Defences, func(d sandbox.Defence) bool {
		return d.Name == sandbox.DefNetwork && !d.Enforced
	}) {
		t.Skip("this host gives a box no network of its own")
	}
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("curl is not installed: the stand-in agent runs it")
	}
	serve := func(text string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, text) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, agent := range []string{"claude", "codex", "droid"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			model, other := serve("model"), serve("baton-api")
			fake := agenttest.New(t, agenttest.Turn{
				Commands: []agenttest.Command{
					{Argv: []string{"sh", "-c", "curl -sf --max-time 10 " + model + "/v1 > model.txt"}},
					{Argv: []string{"sh", "-c", "curl -sf --max-time 10 " + other + "/api/deliveries > other.txt"}, AllowFail: true},
				},
				Final: "done",
			})
			home, elsewhere := t.TempDir(), t.TempDir()
			s := spec(t, fake, agent)
			s.Env = append(s.Env, "HOME="+home)
			switch agent {
			case "claude":
				s.Env = append(s.Env, "ANTHROPIC_BASE_URL="+model)
			case "codex":
				cfg := "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"" + model + "/v1\"\n"
				if err := os.WriteFile(filepath.Join(elsewhere, "config.toml"), []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
				s.Env = append(s.Env, "CODEX_HOME="+elsewhere)
			case "droid":
				if err := os.MkdirAll(filepath.Join(home, ".factory"), 0o700); err != nil {
					t.Fatal(err)
				}
				settings := `{"customModels":[{"model":"m","displayName":"scripted","baseUrl":"` + model + `","provider":"anthropic"}]}`
				if err := os.WriteFile(filepath.Join(home, ".factory", "settings.json"), []byte(settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var live syncBuffer
			s.Live = &live
			s.Confine = &sandbox.Confinement{Mode: sandbox.ModeRequired, Home: t.TempDir(), Policy: fake.Sandbox()}
			res, err := Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, live.String())
			}
			if b, _ := os.ReadFile(filepath.Join(s.Dir, "model.txt")); string(b) != "model" {
				t.Errorf("the agent did not reach its model API: %q\n%s", b, live.String())
			}
			if b, _ := os.ReadFile(filepath.Join(s.Dir, "other.txt")); len(b) != 0 {
				t.Errorf("the agent reached another loopback service: %q", b)
			}
			target := strings.TrimPrefix(other, "http://")
			if !slices.ContainsFunc(res.Refused, func(r netpolicy.RefusalCount) bool { return r.Target() == target }) {
				t.Errorf("Refused = %+v, want %s", res.Refused, target)
			}
			if !strings.Contains(live.String(), "baton: network: refused connection to "+target) {
				t.Errorf("the live log does not say what was refused:\n%s", live.String())
			}
		})
	}
}
