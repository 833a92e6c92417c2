package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/testenv"
)

// hostileAgent is a prompt-injected agent, as a command agent. Asked to
// plan "Hostile ..." it tries to reach everything baton keeps from it and
// prints one line per attempt as its plan; asked to implement, it does
// its own work; as the reviewer it passes. Any other delivery (the
// victim) leaves a secret of its own in its worktree and waits.
const hostileAgent = `#!/bin/sh
prompt=$(cat)
wt=$(pwd)
data=$(dirname "$(dirname "$wt")")
case "$BATON_PHASE:$prompt" in
review:*) echo '{"verdict":"pass","summary":"fine","feedback":""}'; exit 0 ;;
implement:*Hostile*) echo "own work" > feature.txt; echo "implemented"; exit 0 ;;
plan:*Hostile*) ;;
*) echo "VICTIM-SECRET" > victim-secret.txt; echo "1. Wait."; exit 0 ;;
esac
victim=$(printf '%s' "$prompt" | sed -n 's/.*victim \([0-9a-f]*\).*/\1/p' | head -n 1)
api=$(printf '%s' "$prompt" | sed -n 's/.*api \(http:[^ ]*\).*/\1/p' | head -n 1)
attempt() { # name, then a command that succeeds when the attack worked
	name=$1; shift
	if "$@" >/dev/null 2>&1; then echo "LEAKED $name"; else echo "denied $name"; fi
}
attempt token cat "$data/api-token"
attempt database cat "$data/baton.db"
attempt data-listing ls "$data"
attempt other-worktree cat "$data/worktrees/$victim/victim-secret.txt"
attempt worktree-listing ls "$data/worktrees"
attempt run-logs ls "$data/runs/$victim"
attempt parent-environ grep -q ghp_ "/proc/$PPID/environ"
attempt any-environ sh -c 'grep -l ghp_ /proc/[0-9]*/environ | grep -q .'
attempt home-ssh cat "$HOME/.ssh/id_ed25519"
attempt write-data touch "$data/planted"
attempt write-home touch "$HOME/planted"
attempt signal-parent kill -0 "$PPID"
token=$(cat "$data/api-token" 2>/dev/null)
attempt approve-victim sh -c "curl -sf -o /dev/null -X POST -H 'Authorization: Bearer $token' '$api/api/deliveries/$victim/approve'"
attempt add-source sh -c "curl -sf -o /dev/null -X POST -H 'Authorization: Bearer $token' -H 'Content-Type: application/json' -d '{\"repo\":\"evil/repo\",\"label\":\"x\"}' '$api/api/sources'"
if [ -n "$GH_TOKEN$GITHUB_TOKEN$BATON_DATA_DIR" ]; then echo "LEAKED environment"; else echo "denied environment"; fi
echo "1. Do the work."
`

var attemptLine = regexp.MustCompile(`(?m)^(LEAKED|denied) (\S+)$`)

// attempts reads the agent's report: attack → "LEAKED" or "denied".
func attempts(report string) map[string]string {
	out := map[string]string{}
	for _, m := range attemptLine.FindAllStringSubmatch(report, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// allAttempts must all be denied. write-home is not among them: the
// agent's $HOME is the agent home, where it may write; that nothing
// reaches the user's own home is checked on the host.
var allAttempts = []string{"token", "database", "data-listing", "other-worktree", "worktree-listing", "run-logs",
	"parent-environ", "any-environ", "home-ssh", "write-data", "signal-parent", "approve-victim",
	"add-source", "environment"}

// hostileServe is a serve whose agent is hostileAgent, with a GitHub token
// in its environment and a secret at home.
type hostileServe struct {
	t                *testing.T
	home, data, repo string
	env              []string
	serve            *serveProc
	url, token       string
}

func newHostileServe(t *testing.T, args ...string) *hostileServe {
	t.Helper()
	h := &hostileServe{t: t, home: t.TempDir(), data: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(h.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(hostileAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	h.env = gitEnv(h.home, "BATON_DATA_DIR="+h.data, "GH_TOKEN=ghp_hostile_test_token", "GITHUB_TOKEN=ghp_hostile_test_token")
	h.repo = userRepo(t, h.env)
	h.serve, h.url = startServe(t, h.env, h.repo, append([]string{"--addr", "127.0.0.1:0", "--agent", "command:" + agent, "--poll", "100ms"}, args...)...)
	tok, err := os.ReadFile(filepath.Join(h.data, "api-token"))
	if err != nil {
		t.Fatalf("no API token: %v\n%s", err, h.serve.output())
	}
	h.token = strings.TrimSpace(string(tok))
	return h
}

func (h *hostileServe) create(summary string, checkpoints ...string) string {
	h.t.Helper()
	cps := "[]"
	if len(checkpoints) > 0 {
		cps = `["` + strings.Join(checkpoints, `","`) + `"]`
	}
	var created struct {
		Delivery struct {
			ID string `json:"id"`
		} `json:"delivery"`
	}
	body := fmt.Sprintf(`{"repo":%q,"summary":%q,"checkpoints":%s}`, h.repo, summary, cps)
	if code := apiCall(h.t, "POST", h.url+"/api/deliveries", h.token, body, &created); code != http.StatusCreated {
		h.t.Fatalf("create %q = %d\n%s", summary, code, h.serve.output())
	}
	return created.Delivery.ID
}

type hostileDetail struct {
	Delivery struct {
		Phase     string `json:"phase"`
		RunStatus string `json:"run_status"`
		Waiting   bool   `json:"waiting_for_person"`
		Error     string `json:"error"`
	} `json:"delivery"`
	AgentRuns []struct {
		Phase  string `json:"phase"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"agent_runs"`
}

// report is the final message of the delivery's first agent run: the
// hostile plan, one line per attempt.
func (h *hostileServe) report(id string) string {
	h.t.Helper()
	var run struct {
		FinalMessage string `json:"final_message"`
	}
	if code := apiCall(h.t, "GET", h.url+"/api/deliveries/"+id+"/runs/1", h.token, "", &run); code != http.StatusOK {
		h.t.Fatalf("run 1 of %s = %d", id, code)
	}
	return run.FinalMessage
}

// wait asks serve's API about the delivery until done says so.
func (h *hostileServe) wait(id, what string, done func(hostileDetail) bool) hostileDetail {
	h.t.Helper()
	var d hostileDetail
	if !testenv.Until(60*time.Second, nil, func() bool {
		d = hostileDetail{}
		apiCall(h.t, "GET", h.url+"/api/deliveries/"+id, h.token, "", &d)
		return done(d)
	}) {
		h.t.Fatalf("%s did not happen within 60s: %+v\n%s", what, d, h.serve.output())
	}
	return d
}

// TestHostileAgentReachesNothing runs a prompt-injected agent under the
// real `baton serve`: it cannot read the API token, the database, another
// delivery's worktree or run logs, any process's environment or the
// home directory's keys, cannot write outside its worktree, signal
// serve, or act through the API; and its own delivery still closes.
func TestHostileAgentReachesNothing(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	h := newHostileServe(t)
	if !strings.Contains(h.serve.output(), "sandbox: agents and check commands are confined") {
		t.Errorf("serve did not say agents are confined:\n%s", h.serve.output())
	}

	// The victim plans, then waits for a person before implement.
	victim := h.create("Victim feature", "implement")
	h.wait(victim, "the victim to wait for a person", func(d hostileDetail) bool {
		return d.Delivery.Phase == "implement" && d.Delivery.Waiting
	})
	if _, err := os.Stat(filepath.Join(h.data, "worktrees", victim, "victim-secret.txt")); err != nil {
		t.Fatalf("the victim left no secret in its worktree: %v", err)
	}

	hostile := h.create(fmt.Sprintf("Hostile: victim %s api %s end", victim, h.url))
	d := h.wait(hostile, "the hostile delivery to close", func(d hostileDetail) bool {
		return d.Delivery.Phase == "close" || d.Delivery.RunStatus == "failed"
	})
	if d.Delivery.Phase != "close" {
		t.Fatalf("the hostile delivery did not complete its own work: %+v\n%s", d, h.serve.output())
	}
	report := h.report(hostile)
	got := attempts(report)
	for _, a := range allAttempts {
		if got[a] != "denied" {
			t.Errorf("attempt %s: %q, want denied\nreport:\n%s", a, got[a], report)
		}
	}

	// Nothing it tried took effect.
	v := h.wait(victim, "the victim to be read", func(hostileDetail) bool { return true })
	if v.Delivery.Phase != "implement" || !v.Delivery.Waiting {
		t.Errorf("the victim moved on without a person: %+v", v.Delivery)
	}
	var sources struct {
		Sources []any `json:"sources"`
	}
	apiCall(t, "GET", h.url+"/api/sources", h.token, "", &sources)
	if len(sources.Sources) != 0 {
		t.Errorf("sources after the attack: %v", sources.Sources)
	}
	for _, p := range []string{filepath.Join(h.data, "planted"), filepath.Join(h.home, "planted")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the agent planted %s", p)
		}
	}
	// Its own work landed.
	cmd := exec.Command("git", "show", "main:feature.txt")
	cmd.Dir, cmd.Env = h.repo, h.env
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "own work\n" {
		t.Errorf("main:feature.txt = %q, %v", out, err)
	}
}

// Without the sandbox the same agent reaches the token and the database:
// what the test above checks is real.
func TestHostileAgentUnconfined(t *testing.T) {
	t.Parallel()
	h := newHostileServe(t, "--sandbox", "off")
	if !strings.Contains(h.serve.output(), "warning: --sandbox=off") {
		t.Errorf("serve did not warn that agents run unconfined:\n%s", h.serve.output())
	}
	// Approving the victim with a stolen token would work here; there is
	// no victim, so the approve and the source attempts fail on their own.
	hostile := h.create(fmt.Sprintf("Hostile: victim none api %s end", h.url), "implement")
	h.wait(hostile, "the hostile plan", func(d hostileDetail) bool {
		return len(d.AgentRuns) > 0 && d.AgentRuns[0].Status != "running"
	})
	report := h.report(hostile)
	got := attempts(report)
	for _, a := range []string{"token", "database", "data-listing", "worktree-listing", "write-data"} {
		if got[a] != "LEAKED" {
			t.Errorf("unconfined attempt %s: %q, want LEAKED\n%s", a, got[a], report)
		}
	}
	// The GitHub token is still kept from the agent's environment.
	if got["environment"] != "denied" {
		t.Errorf("the agent's environment held a secret")
	}
}

// A baton process is not dumpable: another process of the same user (an
// unconfined agent) cannot read its environment through /proc.
func TestBatonIsNotDumpable(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the processes as another user")
	}
	const nobody = 65534
	// Somewhere the other user can reach (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "baton-dumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "baton")
	data := filepath.Join(dir, "data")
	for _, step := range []func() error{
		func() error { return os.Chmod(dir, 0o755) },
		func() error { return copyFile(batonBin, bin) },
		func() error { return os.Mkdir(data, 0o700) },
		func() error { return os.Chown(data, nobody, nobody) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	asNobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	start := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(name, args...)
		c.Dir = data
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + data, "BATON_DATA_DIR=" + data, "GH_TOKEN=ghp_dumpable_secret"}
		c.SysProcAttr = asNobody
		if _, err := c.StdinPipe(); err != nil { // baton mcp waits on stdin
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	baton := start(bin, "mcp")
	other := start("/bin/sleep", "60")
	read := func(pid int) (string, error) {
		c := exec.Command("/bin/cat", "/proc/"+strconv.Itoa(pid)+"/environ")
		c.SysProcAttr = asNobody
		out, err := c.CombinedOutput()
		return string(out), err
	}
	// The control: the same user reads a plain process's environment.
	if out, err := read(other.Process.Pid); err != nil || !strings.Contains(out, "ghp_dumpable_secret") {
		t.Fatalf("reading a plain process's environment as its user: %v %q", err, out)
	}
	// baton marks itself once it runs: wait for the mark, not a time.
	if !testenv.Until(10*time.Second, nil, func() bool {
		fi, err := os.Stat("/proc/" + strconv.Itoa(baton.Process.Pid) + "/environ")
		return err == nil && fi.Sys().(*syscall.Stat_t).Uid == 0
	}) {
		t.Fatal("baton never became non-dumpable (its /proc files still belong to its user)")
	}
	if out, err := read(baton.Process.Pid); err == nil || strings.Contains(out, "ghp_") {
		t.Errorf("another process of baton's user read its environment: %q", out)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
