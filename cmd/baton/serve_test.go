package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
	"github.com/baton-agent/baton/internal/testenv"
)

// serveProc is a running `baton serve` and its output.
type serveProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	url  chan string
	done chan error
}

func (s *serveProc) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

var dashboardURL = regexp.MustCompile(`dashboard (http://[^/ ]+)/`)

// startServe runs the built binary as `baton serve args...` in dir and
// returns once it says where it listens.
func startServe(t *testing.T, env []string, dir string, args ...string) (*serveProc, string) {
	t.Helper()
	s := &serveProc{cmd: exec.Command(batonBin, append([]string{"serve"}, args...)...), url: make(chan string, 1), done: make(chan error, 1)}
	s.cmd.Dir, s.cmd.Env = dir, env
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := dashboardURL.FindStringSubmatch(sc.Text()); m != nil {
				s.url <- strings.Replace(m[1], "0.0.0.0", "127.0.0.1", 1)
			}
		}
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case u := <-s.url:
		return s, u
	case err := <-s.done:
		t.Fatalf("baton serve %s exited: %v\n%s", strings.Join(args, " "), err, s.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("baton serve did not start in 30s\n%s", s.output())
	}
	return nil, ""
}

// stop sends SIGTERM and returns how serve exited.
func (s *serveProc) stop(t *testing.T) error {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("baton serve did not stop 30s after SIGTERM\n%s", s.output())
	}
	return nil
}

func apiCall(t *testing.T, method, url, token, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return resp.StatusCode
}

// slowAgent says it started, notes its process id and works for a
// minute: long enough to be stopped.
const slowAgent = `#!/bin/sh
cat >/dev/null
echo "$$ $(readlink /proc/self/ns/pid)" > "%s"
echo "agent started"
sleep 60
echo "agent finished"
`

type runDetail struct {
	Delivery struct {
		Phase     string `json:"phase"`
		RunStatus string `json:"run_status"`
		Queued    bool   `json:"queued"`
	} `json:"delivery"`
	AgentRuns []struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"agent_runs"`
}

// SIGTERM while an agent runs: the agent is stopped, its run recorded as
// canceled, the phase released to the queue for the next worker, and
// serve exits 0. A non-loopback --addr is refused while no token exists,
// and accepted once one does.
func TestServeStopsCleanlyOnSIGTERM(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "agent.pid")
	// The confined agent may write its pid where the test reads it.
	env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_SANDBOX_WRITE="+filepath.Dir(pidFile))
	src := userRepo(t, env)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf(slowAgent, pidFile)), 0o755); err != nil {
		t.Fatal(err)
	}

	// No token yet: a non-loopback address is refused, and no token is
	// made for it.
	cmd := exec.Command(batonBin, "serve", "--addr", "0.0.0.0:0")
	cmd.Dir, cmd.Env = src, env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "BATON_API_TOKEN") {
		t.Fatalf("serve on 0.0.0.0 without a token: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "api-token")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start left a token file: %v", err)
	}

	s, url := startServe(t, env, src, "--addr", "127.0.0.1:0", "--agent", "command:"+agent, "--poll", "100ms")
	tok, err := os.ReadFile(filepath.Join(data, "api-token"))
	if err != nil {
		t.Fatalf("no token was generated: %v\n%s", err, s.output())
	}
	token := strings.TrimSpace(string(tok))
	var created struct {
		Delivery struct {
			ID string `json:"id"`
		} `json:"delivery"`
	}
	body := fmt.Sprintf(`{"repo":%q,"summary":"Stop me","checkpoints":[]}`, src)
	if code := apiCall(t, "POST", url+"/api/deliveries", token, body, &created); code != http.StatusCreated {
		t.Fatalf("create = %d\n%s", code, s.output())
	}
	id := created.Delivery.ID
	var pid int
	if !testenv.Until(30*time.Second, nil, func() bool {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = sandboxtest.HostPID(string(b)) // the agent runs in its box's pid namespace
		}
		return pid != 0
	}) {
		t.Fatalf("the agent did not start\n%s", s.output())
	}
	var before runDetail
	apiCall(t, "GET", url+"/api/deliveries/"+id, "", "", &before)
	if before.Delivery.RunStatus != "running" || len(before.AgentRuns) != 1 || before.AgentRuns[0].Status != "running" {
		t.Fatalf("before SIGTERM: %+v", before)
	}

	start := time.Now()
	if err := s.stop(t); err != nil {
		t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.output())
	}
	t.Logf("serve stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	if alive(pid) {
		t.Errorf("the agent (pid %d) outlived serve", pid)
	}
	if strings.Count(s.output(), token) != 1 {
		t.Errorf("the first start printed its new token %d times, want once", strings.Count(s.output(), token))
	}

	// The token exists now: a non-loopback address is accepted, and every
	// request there needs the token, reads included.
	s2, url2 := startServe(t, env, src, "--addr", "0.0.0.0:0", "--workers", "0")
	if code := apiCall(t, "GET", url2+"/api/deliveries/"+id, "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("read without a token on 0.0.0.0 = %d, want 401", code)
	}
	var after runDetail
	if code := apiCall(t, "GET", url2+"/api/deliveries/"+id, token, "", &after); code != http.StatusOK {
		t.Fatalf("read with the token = %d\n%s", code, s2.output())
	}
	if d := after.Delivery; d.Phase != "plan" || d.RunStatus != "pending" || !d.Queued {
		t.Errorf("after SIGTERM the delivery is %+v, want plan pending and queued for the next worker", d)
	}
	if len(after.AgentRuns) != 1 || after.AgentRuns[0].Status != "canceled" || !strings.Contains(after.AgentRuns[0].Error, "stopped") {
		t.Errorf("after SIGTERM the agent runs are %+v, want one canceled run", after.AgentRuns)
	}
	if err := s2.stop(t); err != nil {
		t.Errorf("second serve exited with %v\n%s", err, s2.output())
	}
	if strings.Contains(s2.output(), token) {
		t.Errorf("a later start printed the token:\n%s", s2.output())
	}

	// The released phase is a job the next worker takes at once (not
	// after a stuck-job rescue hours later).
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\necho '1. Do it.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s3, url3 := startServe(t, env, src, "--addr", "127.0.0.1:0", "--poll", "100ms")
	var again runDetail
	if !testenv.Until(30*time.Second, nil, func() bool {
		apiCall(t, "GET", url3+"/api/deliveries/"+id, "", "", &again)
		return len(again.AgentRuns) >= 2 && again.AgentRuns[1].Status == "succeeded"
	}) {
		t.Fatalf("the released plan did not run again within 30s: %+v\n%s", again, s3.output())
	}
	if err := s3.stop(t); err != nil {
		t.Errorf("third serve exited with %v\n%s", err, s3.output())
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// DNS rebinding: a page on evil.example whose name now points at
// 127.0.0.1 reaches serve from the user's browser, which still sends
// "Host: evil.example:7070". serve answers such a request with 421 and
// one line, and the names it was given as they are.
func TestServeAnswersOnlyItsOwnHostNames(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_API_TOKEN=host-test-token")
	src := userRepo(t, env)
	_, base := startServe(t, env, src, "--addr", "127.0.0.1:0", "--workers", "0", "--public-url", "https://baton.example.com/")
	body := fmt.Sprintf(`{"repo":%q,"summary":"The secret roadmap"}`, src)
	if code := apiCall(t, "POST", base+"/api/deliveries", "host-test-token", body, nil); code != http.StatusCreated {
		t.Fatalf("create = %d", code)
	}
	get := func(path, host string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/api/deliveries", "/", "/api/settings"} {
		code, text := get(path, "evil.example:7070")
		if code != http.StatusMisdirectedRequest || strings.Count(text, "\n") != 1 || strings.Contains(text, "roadmap") || strings.Contains(text, data) {
			t.Errorf("GET %s with Host evil.example:7070 = %d %q, want 421 and one line", path, code, text)
		}
	}
	for _, host := range []string{strings.TrimPrefix(base, "http://"), "localhost:7070", "baton.example.com"} {
		if code, text := get("/api/deliveries", host); code != http.StatusOK || !strings.Contains(text, "roadmap") {
			t.Errorf("GET /api/deliveries with Host %s = %d, want 200", host, code)
		}
	}
}

// serve names its agents from the harness table: the dashboard's sources
// page offers each agent, and a missing agent's fix says how to install
// it and which agents to pick instead.
func TestServeOffersTheHarnessTable(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_API_TOKEN=table-test-token",
		"PATH="+filepath.Dir(batonBin)+":/usr/bin:/bin") // no agent CLI on it
	src := userRepo(t, env)
	_, base := startServe(t, env, src, "--addr", "127.0.0.1:0", "--workers", "0", "--agent", "codex")
	var settings struct {
		Agent struct {
			Installed bool   `json:"installed"`
			Fix       string `json:"fix"`
		} `json:"agent"`
	}
	if code := apiCall(t, "GET", base+"/api/settings", "table-test-token", "", &settings); code != http.StatusOK {
		t.Fatalf("GET /api/settings = %d", code)
	}
	if want := "Install Codex CLI (npm install -g @openai/codex), or restart with --agent claude, droid, pi or command:<argv>."; settings.Agent.Installed || settings.Agent.Fix != want {
		t.Errorf("agent = %+v, want not installed and fix %q", settings.Agent, want)
	}
	req, _ := http.NewRequest("GET", base+"/sources", nil)
	req.Header.Set("Authorization", "Bearer table-test-token") // signed in: the add form shows
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for _, agent := range []string{"claude", "codex", "droid", "pi"} {
		if !regexp.MustCompile(`<option[^>]*>` + agent + `</option>`).Match(page) {
			t.Errorf("the sources page offers no %s agent", agent)
		}
	}
}
