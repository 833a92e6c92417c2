package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/goproxytest"
)

// The real Claude Code and Codex deliver into a repository whose test
// needs a dependency only its registry (a Go module proxy on this
// machine, which only the set-up may reach) serves: verify passes
// because the set-up installed it, in the plan's worktree and again in
// verify's checkout, from the repository's set-up cache. A second
// delivery whose set-up fails stops at plan with the set-up's output,
// and its agent never starts.

// setupRepo adds to repo a Go module whose test imports example.test/dep
// and an .agent/delivery.json whose set-up downloads it from proxy.
func setupRepo(t *testing.T, env []string, repo string, proxy *goproxytest.Server) {
	t.Helper()
	files := map[string]string{
		"go.mod":               "module example.test/app\n\ngo 1.21\n\nrequire example.test/dep v1.0.0\n",
		"go.sum":               proxy.GoSum(),
		"app_test.go":          "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.test/dep\"\n)\n\nfunc TestAnswer(t *testing.T) {\n\tif dep.Answer() != 42 {\n\t\tt.Fatal(dep.Answer())\n\t}\n}\n",
		".agent/delivery.json": `{"setup": ["go mod download"], "setup_egress_allow": ["` + proxy.Host + `"]}`,
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "a module with a dependency"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// setupDelivery runs the greeting delivery with a set-up through the real
// binary, then a second one whose set-up fails.
func setupDelivery(t *testing.T, env []string, data, repo, agent string, proxy *goproxytest.Server, requests func() []string) {
	t.Helper()
	env = append(env, "GOPROXY="+proxy.URL, "GOSUMDB=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly")
	setupRepo(t, env, repo, proxy)
	realDelivery(t, env, repo, agent, requests, "--verify", "go test ./... && grep -qx 'hello, world' greeting.txt")
	logs, _ := filepath.Glob(filepath.Join(data, "runs", "*", "*", "setup.log"))
	var phases []string
	for _, l := range logs {
		phases = append(phases, strings.SplitN(filepath.Base(filepath.Dir(l)), "-", 3)[2])
		if b, _ := os.ReadFile(l); !strings.Contains(string(b), "$ go mod download\n") || !strings.Contains(string(b), "[exit 0;") {
			t.Errorf("%s:\n%s", l, b)
		}
	}
	// Once in the delivery's worktree (nothing it watches changed after),
	// once in verify's fresh checkout; the registry served the module once.
	if strings.Join(phases, " ") != "plan verify" || proxy.Downloads() != 1 {
		t.Errorf("the set-up ran in %q with %d downloads, want plan and verify and one download", phases, proxy.Downloads())
	}

	before := len(requests())
	if err := os.WriteFile(filepath.Join(repo, ".agent", "delivery.json"),
		[]byte(`{"setup": ["echo fetching; echo 'registry.example: connection refused' >&2; exit 7"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Greet again", "--agent", agent, "--checkpoints", "", "--timeout", "5m")
	cmd := exec.Command(batonBin, "delivery", "run", "2")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "registry.example: connection refused") || !strings.Contains(string(out), "exited 7") {
		t.Errorf("delivery run with a failing set-up = %v:\n%s", err, out)
	}
	var got struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
			Error     string `json:"error"`
		} `json:"delivery"`
	}
	show := batonRun(t, env, repo, "delivery", "show", "2", "--json")
	if err := json.Unmarshal([]byte(show), &got); err != nil || got.Delivery.Phase != "plan" || got.Delivery.RunStatus != "failed" ||
		!strings.Contains(got.Delivery.Error, "registry.example: connection refused") {
		t.Errorf("delivery 2 after a failed set-up = %+v, %v", got.Delivery, err)
	}
	if n := len(requests()) - before; n != 0 {
		t.Errorf("the agent ran after a failed set-up: the model got %d requests", n)
	}
}

func TestRealClaudeDeliverySetup(t *testing.T) {
	t.Parallel()
	claude := realClaude(t)
	proxy := goproxytest.New(t, goproxytest.Dependency("example.test/dep", 20, 1024))
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo := userRepo(t, env)
	url, requests, _ := claudeGreeter(t)
	env = boxedAgentEnv(t, append(env, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=test-key"), claude)
	setupDelivery(t, env, data, repo, "claude", proxy, requests)
}

func TestRealCodexDeliverySetup(t *testing.T) {
	t.Parallel()
	codex := realCodex(t)
	proxy := goproxytest.New(t, goproxytest.Dependency("example.test/dep", 20, 1024))
	home, data, codexHome := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(gitEnv(home, "BATON_DATA_DIR="+data), "CODEX_HOME="+codexHome, "OPENAI_API_KEY=test-key")
	repo := userRepo(t, env)
	url, requests, _ := codexGreeter(t)
	writeCodexConfig(t, codexHome, url, repo)
	env = boxedAgentEnv(t, env, codex)
	setupDelivery(t, env, data, repo, "codex", proxy, requests)
}
