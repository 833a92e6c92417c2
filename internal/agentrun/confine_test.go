package agentrun

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
	"github.com/baton-agent/baton/internal/testenv"
)

// Every executor runs confined: it writes its working directory and its
// own temporary directory, the files named in its argv (codex's schema
// and last message) go there rather than to LogDir, it cannot write
// beside its working directory, and the run says it was confined.
func TestRunConfined(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			outside := t.TempDir()
			fake := agenttest.New(t, agenttest.Turn{
				Files: []agenttest.File{{Path: "done.txt", Content: "ok\n"}},
				Commands: []agenttest.Command{
					{Argv: []string{"sh", "-c", `echo tmp > "$TMPDIR/scratch"`}},
					{Argv: []string{"touch", filepath.Join(outside, "escaped")}, AllowFail: true},
				},
				Final: `{"verdict":"pass"}`,
			})
			var live syncBuffer
			s := spec(t, fake, agent)
			s.Live = &live
			s.OutputSchema = []byte(`{"type":"object","properties":{"verdict":{"type":"string"}},"required":["verdict"]}`)
			s.Confine = &sandbox.Confinement{Mode: sandbox.ModeRequired, Policy: fake.Sandbox()}
			res, err := Run(t.Context(), s)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if _, err := os.Stat(filepath.Join(s.Dir, "done.txt")); err != nil {
				t.Errorf("the confined agent could not write its working directory: %v", err)
			}
			if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
				t.Error("the confined agent wrote outside its directories")
			}
			if !res.Sandbox.Confined || !strings.Contains(live.String(), "baton: the agent runs confined (Landlock ABI") {
				t.Errorf("report %v, live %q: want the run to say it was confined", res.Sandbox, live.String())
			}
			for _, a := range res.Argv {
				if strings.HasPrefix(a, s.LogDir) {
					t.Errorf("argv names %s in LogDir, which a confined agent cannot write", a)
				}
			}
		})
	}
}

// A user who keeps Codex's state outside the home (CODEX_HOME=/elsewhere)
// runs Codex boxed: the box does not show that directory, so Codex keeps
// its state in the agent home, started there with the user's settings
// and credentials, and its session file (which names the model) is read
// from there. Before, CODEX_HOME named a directory the agent home did not
// have, and Codex refused to start.
func TestRunBoxedCodexWithStateOutsideHome(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	fake := agenttest.New(t, agenttest.Turn{Final: "Planned.", Model: "gpt-from-rollout"})
	home, codexHome, agentHome := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte("model = \"gpt-from-rollout\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(`{"token":"t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := spec(t, fake, "codex")
	s.Env = append(s.Env, "HOME="+home, "CODEX_HOME="+codexHome)
	s.Confine = &sandbox.Confinement{Mode: sandbox.ModeRequired, Home: agentHome, Policy: fake.Sandbox()}
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Model != "gpt-from-rollout" {
		t.Errorf("Model = %q, want the one in the session file Codex kept", res.Model)
	}
	if !s.Confine.ShowsHome() {
		return // the agent home is reached through CODEX_HOME itself
	}
	if b, err := os.ReadFile(filepath.Join(agentHome, ".codex", "config.toml")); err != nil || !strings.Contains(string(b), "gpt-from-rollout") {
		t.Errorf("the agent home's config.toml = %q, %v; want the user's", b, err)
	}
	if dest, err := os.Readlink(filepath.Join(agentHome, ".codex", "auth.json")); err != nil || dest != filepath.Join(codexHome, "auth.json") {
		t.Errorf("the agent home's auth.json links to %q, %v; want the user's", dest, err)
	}
	if sessions, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*")); len(sessions) > 0 {
		t.Errorf("the boxed Codex wrote sessions into the user's CODEX_HOME: %v", sessions)
	}
}

// A run in a box whose pid namespace ends with its init starts no
// watchdog beside it (the box ends everything the agent started when
// baton dies: sandbox.TestBoxDiesWithBaton); one in a box without
// namespaces keeps its watchdog. Not parallel: it lists this process's
// children, and another test's run would show its own.
func TestBoxedRunStartsNoWatchdog(t *testing.T) {
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	bin := t.TempDir()
	script := filepath.Join(bin, "agent.sh")
	// The agent says it runs, then waits for the test to have looked.
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\n: > running\nread -r line < look.fifo\necho done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, noNS := range []bool{false, true} {
		t.Run(map[bool]string{false: "namespaces", true: "no namespaces"}[noNS], func(t *testing.T) {
			mode := sandbox.ModeRequired // which a box without namespaces does not meet
			if noNS {
				mode = sandbox.ModeAuto
			}
			s := Spec{Agent: "command:" + script, Prompt: "go", Dir: t.TempDir(), LogDir: t.TempDir()}
			s.Confine = &sandbox.Confinement{Mode: mode, NoNamespaces: noNS, Policy: sandbox.Policy{Write: []string{s.Dir}}}
			fifo := filepath.Join(s.Dir, "look.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			type ran struct {
				res *Result
				err error
			}
			done := make(chan ran, 1)
			go func() { res, err := Run(t.Context(), s); done <- ran{res, err} }()
			if !testenv.Until(time.Minute, nil, func() bool { _, err := os.Stat(filepath.Join(s.Dir, "running")); return err == nil || len(done) > 0 }) {
				t.Fatal("the agent never said it runs")
			}
			children := sandboxtest.ChildrenOfRun(noNS, func() bool { return len(done) > 0 })
			sandboxtest.Release(fifo, done)
			r := <-done
			if r.err != nil {
				t.Fatalf("Run: %v", r.err)
			}
			sandboxtest.CheckWatchdog(t, noNS, r.res.Sandbox.EndsWithInit, children)
		})
	}
}
