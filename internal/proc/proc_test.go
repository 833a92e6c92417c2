package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
	"github.com/baton-agent/baton/internal/testenv"
)

func TestMain(m *testing.M) {
	sandbox.Main(egress.Hooks()) // the box's init, when a test starts a confined process
	// Helper mode: start a long sleep with GroupAttr, print its pid, wait.
	if os.Getenv("BATON_PROC_HELPER") == "spawn" {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = GroupAttr()
		if err := c.Start(); err != nil {
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(c.Process.Pid) + "\n")
		c.Wait()
		os.Exit(0)
	}
	// Helper mode: run a check that starts a grandchild, which prints its
	// pid, and wait.
	if os.Getenv("BATON_PROC_HELPER") == "check" {
		_, _ = RunCheck(context.Background(), Check{Command: "sleep 60 & echo $!; wait", Live: os.Stdout})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// alive reports whether pid runs; a zombie (dead, not yet reaped by init)
// does not count.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || !strings.Contains(string(b), ") Z ")
}

// waitGone waits for pid to die: at once when it is gone, within 30 s
// on the most loaded machine.
func waitGone(pid int) bool {
	return testenv.Until(30*time.Second, nil, func() bool { return !alive(pid) })
}

func TestRunCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name    string
		command string
		maxLog  int64
		exit    int
		passed  bool
		log     string
		tail    string
		dropped int64
	}{
		{"pass with env and dir", `echo "$CHECK_VAR in $(basename "$PWD")"`, 0, 0, true, "seen in " + filepath.Base(dir) + "\n", "seen in " + filepath.Base(dir) + "\n", 0},
		{"shell syntax works", "true && false || exit 7", 0, 7, false, "", "", 0},
		{"stderr interleaved", "echo out; echo err >&2; exit 1", 0, 1, false, "out\nerr\n", "out\nerr\n", 0},
		{"log capped, tail kept", "printf 'aaaaaaaaaa'; printf 'bbbbb'", 10, 0, true, "aaaaaaaaaa", "aaaaaaaaaabbbbb", 5},
		{"missing command exits 127", "no-such-command-baton", 0, 127, false, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log, live bytes.Buffer
			res, err := RunCheck(t.Context(), Check{Command: tt.command, Dir: dir, Env: []string{"CHECK_VAR=seen"}, Log: &log, MaxLog: tt.maxLog, Live: &live, Timeout: time.Minute})
			if err != nil {
				t.Fatalf("RunCheck(%q) error: %v", tt.command, err)
			}
			if res.ExitCode != tt.exit || res.Passed() != tt.passed || res.Dropped != tt.dropped {
				t.Errorf("RunCheck(%q) = exit %d, passed %v, dropped %d; want %d, %v, %d", tt.command, res.ExitCode, res.Passed(), res.Dropped, tt.exit, tt.passed, tt.dropped)
			}
			if tt.log != "" && log.String() != tt.log {
				t.Errorf("log = %q, want %q", log.String(), tt.log)
			}
			if tt.tail != "" && res.Tail != tt.tail {
				t.Errorf("tail = %q, want %q", res.Tail, tt.tail)
			}
			if !strings.HasPrefix(live.String(), log.String()) {
				t.Errorf("live view %q does not hold the log %q", live.String(), log.String())
			}
		})
	}
}

// A check that runs out of time is stopped with everything it started.
// On a loaded machine the timeout can come before the shell has started
// its background sleep; then nothing was started to survive, and the
// check runs again with a longer timeout until the sleep's pid is known.
func TestRunCheckTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	for timeout := 300 * time.Millisecond; ; timeout *= 4 {
		start := time.Now()
		res, err := RunCheck(t.Context(), Check{Command: "sleep 30 & echo $! > " + pidFile + "; wait", Timeout: timeout, Grace: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.Passed() {
			t.Fatalf("result = %+v, want timed out", res)
		}
		// Well under the sleep's 30 s: the check did not wait for it.
		if d := time.Since(start); d > timeout+15*time.Second {
			t.Errorf("RunCheck took %s after a %s timeout", d, timeout)
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 && timeout < 10*time.Second {
			continue
		}
		if pid == 0 || !waitGone(pid) {
			t.Errorf("background sleep %d survived the timeout", pid)
		}
		return
	}
}

func TestRunCheckCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	// Cancelled once the check is running: it opens the FIFO to say so.
	started := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.Open(started); err == nil {
			f.Close()
		}
		cancel()
	}()
	_, err := RunCheck(ctx, Check{Command: ": > " + started + "; sleep 30", Grace: 100 * time.Millisecond})
	if baton.ErrorCode(err) != baton.Canceled {
		t.Errorf("canceled check error = %v, want Canceled", err)
	}
	_, err = RunCheck(t.Context(), Check{Command: "true", Dir: filepath.Join(t.TempDir(), "missing")})
	if baton.ErrorCode(err) != baton.Unavailable {
		t.Errorf("check in a missing dir error = %v, want Unavailable", err)
	}
}

// A process started with GroupAttr dies when baton is SIGKILLed.
func TestGroupAttrDiesWithParent(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signals are Linux only")
	}
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "BATON_PROC_HELPER=spawn")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var buf [32]byte
	n, _ := out.Read(buf[:])
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || !alive(pid) {
		t.Fatalf("helper did not start its child: %q %v", buf[:n], err)
	}
	c.Process.Kill()
	c.Wait()
	if !waitGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("child %d outlived its SIGKILLed parent", pid)
	}
}

// A check's grandchild (what the command started) dies when the process
// running the check is SIGKILLed, not only the check's shell.
func TestCheckGrandchildDiesWithParent(t *testing.T) {
	t.Parallel()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), "BATON_PROC_HELPER=check")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var buf [32]byte
	n, _ := out.Read(buf[:])
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || !alive(pid) {
		t.Fatalf("helper did not start its grandchild: %q %v", buf[:n], err)
	}
	c.Process.Kill()
	c.Wait()
	if !waitGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d outlived its SIGKILLed grandparent", pid)
	}
}

// A released watchdog kills nothing; one whose starter is gone kills the
// group it watches.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		return c
	}
	kept := start()
	wd, err := WatchGroup(kept.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	wd.Release()
	exited := wd.exited
	wd.Release() // twice is harmless
	<-exited     // the watchdog is gone; had it killed, it would have by now
	if !alive(kept.Process.Pid) {
		t.Error("a released watchdog killed its group")
	}
	KillGroup(kept.Process.Pid, syscall.SIGKILL)

	doomed := start()
	wd, err = WatchGroup(doomed.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	wd.w.Close() // what the kernel does when this process dies
	if !waitGone(doomed.Process.Pid) {
		KillGroup(doomed.Process.Pid, syscall.SIGKILL)
		t.Error("the watchdog did not kill the group when its starter went away")
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tl := &Tail{Max: 8}
	tl.Write([]byte("line one\nline two\nlast"))
	if got, cut := tl.Text(); got != "last" || !cut {
		t.Errorf("Text() = %q, %v; want the tail from a line start", got, cut)
	}
	tl = &Tail{Max: 4}
	tl.Write([]byte("aé日本"))
	if b, cut := tl.Bytes(); !cut || string(b) != "本" {
		t.Errorf("Bytes() = %q, %v; want a rune-aligned tail", b, cut)
	}
	tl = &Tail{Max: 8}
	for _, s := range []string{"hello ", "wörld", " and more text", "!"} {
		tl.Write([]byte(s))
	}
	if b, cut := tl.Bytes(); !cut || !utf8.Valid(b) || !strings.HasSuffix("hello wörld and more text!", string(b)) || len(b) > 8 {
		t.Errorf("Bytes() = %q, %v; want a valid UTF-8 suffix of at most 8 bytes, cut", b, cut)
	}
	tl = &Tail{Max: 100}
	tl.Write([]byte("short"))
	if got, cut := tl.Text(); got != "short" || cut {
		t.Errorf("Text() = %q, %v", got, cut)
	}
}

// FuzzTail writes data in chunks and checks Bytes and Text against a
// reference computed from all of data at once: the last Max bytes, cut
// forward to a rune start (at most three bytes) when anything was
// dropped; Text then starts after the first newline, unless that newline
// ends the tail, and is valid UTF-8.
func FuzzTail(f *testing.F) {
	f.Add([]byte("hello\nworld"), 3, 4)
	f.Add([]byte("aé日本\nline two\n"), 5, 1)
	f.Add([]byte("exactly"), 7, 3)
	f.Fuzz(func(t *testing.T, data []byte, max, chunk int) {
		if max <= 0 || max > 1000 || chunk <= 0 {
			return
		}
		tl := &Tail{Max: max}
		for i := 0; i < len(data); i += chunk {
			tl.Write(data[i:min(i+chunk, len(data))])
		}
		want, wantCut := data, len(data) > max
		if wantCut {
			want = data[len(data)-max:]
			for n := 0; n < utf8.UTFMax-1 && len(want) > 0 && !utf8.RuneStart(want[0]); n++ {
				want = want[1:]
			}
		}
		if b, cut := tl.Bytes(); !bytes.Equal(b, want) || cut != wantCut {
			t.Fatalf("Bytes() = %q, %v for %q (max %d, chunk %d); want %q, %v", b, cut, data, max, chunk, want, wantCut)
		}
		wantText := want
		if wantCut {
			if i := bytes.IndexByte(wantText, '\n'); i >= 0 && i < len(wantText)-1 {
				wantText = wantText[i+1:]
			}
		}
		if text, cut := tl.Text(); text != strings.ToValidUTF8(string(wantText), "\uFFFD") || cut != wantCut {
			t.Fatalf("Text() = %q, %v for %q (max %d, chunk %d); want %q", text, cut, data, max, chunk, wantText)
		}
	})
}

// A check never inherits baton's secrets unless asked: GitHub tokens and
// BATON_ credentials are removed, everything else (the agent's own API
// key, PATH, baton's non-secret variables) stays.
func TestRunCheckWithholdsSecrets(t *testing.T) {
	for k, v := range map[string]string{
		"GH_TOKEN": "gh-secret", "GITHUB_TOKEN": "github-secret", "GH_ENTERPRISE_TOKEN": "ghe-secret",
		"BATON_DATABASE_URL": "postgres://baton:pw@db/baton", "BATON_API_TOKEN": "baton-secret",
		"BATON_SESSION_ID": "s1", "ANTHROPIC_API_KEY": "model-key",
	} {
		t.Setenv(k, v)
	}
	env := func(pass ...string) string {
		var log bytes.Buffer
		res, err := RunCheck(t.Context(), Check{Command: "env", Log: &log, PassEnv: pass, Env: []string{"ADDED=yes"}, Timeout: time.Minute})
		if err != nil || !res.Passed() {
			t.Fatalf("env: %v %+v", err, res)
		}
		return log.String()
	}
	got := env()
	for _, secret := range []string{"gh-secret", "github-secret", "ghe-secret", "pw@db", "baton-secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("the check saw %q:\n%s", secret, got)
		}
	}
	for _, kept := range []string{"BATON_SESSION_ID=s1", "ANTHROPIC_API_KEY=model-key", "ADDED=yes", "PATH="} {
		if !strings.Contains(got, kept) {
			t.Errorf("the check lost %q:\n%s", kept, got)
		}
	}
	got = env("GH_TOKEN")
	if !strings.Contains(got, "GH_TOKEN=gh-secret") || strings.Contains(got, "github-secret") {
		t.Errorf("with PassEnv GH_TOKEN the check saw:\n%s", got)
	}
}

func TestSecret(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"GH_TOKEN": true, "GITHUB_TOKEN": true, "github_token": true, "GITHUB_ENTERPRISE_TOKEN": true,
		"BATON_DATABASE_URL": true, "BATON_GITHUB_REMOTE_URL": true, "BATON_PG_DSN": true, "BATON_SIGNING_KEY": true, "BATON_WEBHOOK_SECRET": true,
		"BATON_SESSION_ID": false, "BATON_ROOT": false, "BATON_DELIVERY_ID": false, "ANTHROPIC_API_KEY": false, "PATH": false, "GITHUB_SHA": false,
	} {
		if got := Secret(name); got != want {
			t.Errorf("Secret(%q) = %v, want %v", name, got, want)
		}
	}
	if err := CheckPassEnv([]string{"GH_TOKEN", "A_1"}); err != nil {
		t.Errorf("CheckPassEnv(valid) = %v", err)
	}
	for _, bad := range []string{"", "1X", "GH TOKEN", "GH_TOKEN=x"} {
		if CheckPassEnv([]string{bad}) == nil {
			t.Errorf("CheckPassEnv(%q) = nil, want an error", bad)
		}
	}
}

// A check in a box whose pid namespace ends with its init starts no
// watchdog beside it; one in a box without namespaces starts one. Not
// parallel: it lists this process's children, and another test's check
// would show its own.
func TestBoxedCheckStartsNoWatchdog(t *testing.T) {
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	for _, noNS := range []bool{false, true} {
		t.Run(map[bool]string{false: "namespaces", true: "no namespaces"}[noNS], func(t *testing.T) {
			mode := sandbox.ModeRequired // which a box without namespaces does not meet
			if noNS {
				mode = sandbox.ModeAuto
			}
			dir := t.TempDir()
			fifo := filepath.Join(dir, "look.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			c := Check{Command: ": > running; read -r line < look.fifo", Dir: dir,
				Confine: &sandbox.Confinement{Mode: mode, NoNamespaces: noNS, Policy: sandbox.System(sandbox.EnvFrom(os.Environ()))}}
			type ran struct {
				res CheckResult
				err error
			}
			done := make(chan ran, 1)
			go func() { res, err := RunCheck(t.Context(), c); done <- ran{res, err} }()
			if !testenv.Until(time.Minute, nil, func() bool { _, err := os.Stat(filepath.Join(dir, "running")); return err == nil || len(done) > 0 }) {
				t.Fatal("the check never said it runs")
			}
			children := sandboxtest.ChildrenOfRun(noNS, func() bool { return len(done) > 0 })
			sandboxtest.Release(fifo, done)
			r := <-done
			if r.err != nil || !r.res.Passed() {
				t.Fatalf("RunCheck: %+v, %v", r.res, r.err)
			}
			sandboxtest.CheckWatchdog(t, noNS, r.res.Sandbox.EndsWithInit, children)
		})
	}
}
