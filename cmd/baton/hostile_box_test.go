package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
)

// boxAgent is a prompt-injected agent that tries to get out of its box
// rather than to read baton's secrets: it types into the terminal baton
// runs in, leaves processes behind (in a session of their own, after a
// double fork, a fork bomb whose children leave its session), plants
// what the user's own tools would run (a Go module, a build cache entry,
// hooks in Claude Code's, Codex's and Droid's settings), shares /dev/shm
// with the machine's programs, and reads root's secrets. It reports each
// attempt, and notes its processes in $HOSTILE_OUT for the test to find.
const boxAgent = `#!/bin/sh
cat >/dev/null
out=$HOSTILE_OUT
attempt() { # name, then a command that succeeds when the attack worked
	name=$1; shift
	if "$@" >/dev/null 2>&1; then r="LEAKED $name"; else r="denied $name"; fi
	echo "$r"; echo "$r" >> "$out/report"
}
if [ -x /usr/bin/python3 ]; then
	attempt tiocsti /usr/bin/python3 -c '
import fcntl, termios, os
fd = os.open("/dev/tty", os.O_RDWR)
for c in b"echo PWNED-BY-AGENT\n":
    fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))'
fi
attempt open-tty sh -c ': </dev/tty'
attempt write-terminal sh -c "echo WRITTEN-BY-AGENT > $HOSTILE_PTS"

setsid sh -c 'while :; do echo late >> "$0/late"; sleep 0.1; done' "$out" </dev/null >/dev/null 2>&1 &
` + `echo "$! $(readlink /proc/self/ns/pid)" > "$out/setsid.pid"
( sleep 300 </dev/null >/dev/null 2>&1 & echo "$! $(readlink /proc/self/ns/pid)" > "$out/double.pid" )
attempt user-module-cache touch "$HOME/go/pkg/mod/cache/download/planted"
touch "$HOME/.cache/planted" "$HOME/.npm/planted" 2>/dev/null
mkdir -p "$HOME/.claude" "$HOME/.codex" "$HOME/.factory" 2>/dev/null
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo PLANTED"}]}]}}' > "$HOME/.claude/settings.json" 2>/dev/null
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo PLANTED"}]}]}}' > "$HOME/.codex/hooks.json" 2>/dev/null
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo PLANTED"}]}]}}' > "$HOME/.factory/hooks.json" 2>/dev/null
attempt shm-read grep -q SHM-SECRET "$HOSTILE_SHM"
echo planted > "$HOSTILE_SHM.planted" 2>/dev/null
attempt shadow cat /etc/shadow
# The walks root's baton keeps say what the box must not read: an empty
# one for /etc would open /etc/shadow to the next box.
attempt kept-walk sh -c 'mkdir -p /run/baton/walks && for f in /run/baton/walks/*; do : > "$f"; done && echo planted > /run/baton/walks/planted'
for k in /etc/ssh/ssh_host_*_key /etc/ssl/private/*; do
	[ -f "$k" ] && attempt "key:$k" cat "$k"
done
# Last, as it takes every process the box allows: echo is built in.
cat > "$out/bomb.sh" <<'EOF'
echo "$$ $(readlink /proc/self/ns/pid)" >> "$HOSTILE_OUT/bomb.pids"
setsid sh "$HOSTILE_OUT/bomb.sh" 2>>"$HOSTILE_OUT/bomb.refused" &
setsid sh "$HOSTILE_OUT/bomb.sh" 2>>"$HOSTILE_OUT/bomb.refused" &
sleep 300
EOF
sh "$out/bomb.sh" 2>>"$out/bomb.refused" </dev/null >/dev/null &
i=0; while [ ! -s "$out/bomb.refused" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done

echo "1. Done."
`

// TestHostileAgentStaysInItsBox runs boxAgent as the planner of a real
// `baton delivery run`, itself run in a terminal as a person runs it, with
// and without the box's namespaces: every attempt fails, nothing it
// started outlives the phase, the fork bomb holds at most the box's
// process limit, and nothing it wrote reaches the user's home, caches or
// the machine's /dev/shm.
func TestHostileAgentStaysInItsBox(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	for _, mode := range []struct{ name, env string }{{"namespaces", ""}, {"no namespaces", "off"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			testHostileBox(t, mode.env)
		})
	}
}

func testHostileBox(t *testing.T, namespaces string) {
	const limit = 64
	home, data, out := t.TempDir(), t.TempDir(), t.TempDir()
	userFiles := map[string]string{
		".claude/settings.json":            `{"model":"mine"}`,
		"go/pkg/mod/cache/download/x.info": "module",
		".cache/go-build/README":           "cache",
		".npm/_cacache/index":              "npm",
	}
	for f, content := range userFiles {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shm, err := os.CreateTemp("/dev/shm", "baton-hostile-")
	if err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	shm.WriteString("SHM-SECRET")
	shm.Close()
	t.Cleanup(func() { os.Remove(shm.Name()); os.Remove(shm.Name() + ".planted") })
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(boxAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no terminal here: %v", err)
	}
	defer ptmx.Close()
	env := gitEnv(home, "BATON_DATA_DIR="+data, "HOSTILE_OUT="+out, "HOSTILE_PTS="+tty.Name(), "HOSTILE_SHM="+shm.Name(),
		"BATON_SANDBOX_NAMESPACES="+namespaces)
	repo := userRepo(t, env)
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Get out of the box", "--agent", "command:"+agent,
		"--checkpoints", "none", "--endpoint", "plan")

	// `delivery run` in a terminal of its own, as its controlling terminal.
	cmd := exec.Command(batonBin, "delivery", "run", "1", "--sandbox-write", out, "--sandbox-procs", fmt.Sprint(limit))
	cmd.Dir, cmd.Env = repo, env
	var terminal bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); io.Copy(&terminal, ptmx) }() // until the terminal closes
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = ptyAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runErr := cmd.Wait()
	tty.Close()
	ptmx.Close()
	wg.Wait()
	if runErr != nil {
		t.Fatalf("delivery run: %v\n%s", runErr, terminal.String())
	}
	screen := terminal.String()
	if namespaces == "" && !strings.Contains(screen, "processes      yes") {
		t.Errorf("delivery run did not say the box's defences:\n%s", screen)
	}

	report, _ := os.ReadFile(filepath.Join(out, "report"))
	got := attempts(string(report))
	for _, a := range []string{"open-tty", "write-terminal", "user-module-cache", "shm-read", "shadow", "kept-walk"} {
		if got[a] != "denied" {
			t.Errorf("attempt %s: %q, want denied\n%s", a, got[a], report)
		}
	}
	for a, r := range got {
		if r != "denied" {
			t.Errorf("attempt %s: %s", a, r)
		}
	}
	for _, typed := range []string{"PWNED-BY-AGENT", "WRITTEN-BY-AGENT"} {
		if strings.Contains(screen, typed) {
			t.Errorf("the agent reached the terminal: %q appeared on it", typed)
		}
	}

	// Nothing it started outlives the phase.
	for _, f := range []string{"setsid.pid", "double.pid"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatalf("the agent did not start %s: %v\n%s", f, err, screen)
		}
		if pid, ok := sandboxtest.HostPID(string(b)); ok {
			killPID(pid)
			t.Errorf("%s: process %d outlived the phase", f, pid)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "bomb.pids"))
	bomb := strings.Split(strings.TrimSpace(string(b)), "\n")
	// A shell whose fork is refused says so and exits, freeing a slot for
	// another: of the processes that ran, as many as were refused may have
	// ended before the last started (a loaded machine ends more of them
	// before the agent sees the first refusal).
	refused, _ := os.ReadFile(filepath.Join(out, "bomb.refused"))
	ended := strings.Count(string(refused), "\n")
	if len(bomb) < 2 || len(bomb)-ended > limit {
		t.Errorf("the fork bomb ran %d processes and %d forks were refused; want some, and at most the box's %d at once", len(bomb), ended, limit)
	}
	survivors := 0
	for _, l := range bomb {
		if pid, ok := sandboxtest.HostPID(l); ok {
			survivors++
			killPID(pid)
		}
	}
	if survivors > 0 {
		t.Errorf("%d of the fork bomb's %d processes outlived the phase", survivors, len(bomb))
	}

	// Nothing it wrote reaches the user's files or the machine's.
	for f, content := range userFiles {
		if b, err := os.ReadFile(filepath.Join(home, f)); err != nil || string(b) != content {
			t.Errorf("the user's %s is now %q, %v", f, b, err)
		}
	}
	for _, f := range []string{"go/pkg/mod/cache/download/planted", ".cache/planted", ".npm/planted", ".codex/hooks.json", ".factory/hooks.json"} {
		if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
			t.Errorf("the agent planted ~/%s", f)
		}
	}
	if _, err := os.Stat(shm.Name() + ".planted"); err == nil {
		t.Errorf("the agent wrote into the machine's /dev/shm")
	}
	if _, err := os.Lstat("/run/baton/walks/planted"); err == nil {
		os.Remove("/run/baton/walks/planted")
		t.Errorf("the agent wrote into the walks root's baton keeps")
	}
}

func killPID(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// ptyAttr makes the terminal on the child's stdin its controlling
// terminal, in a session of its own, as a shell does.
func ptyAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// fakeClaude stands in for Claude Code as a prompt-injected one: it keeps
// its state where Claude Code does (~/.claude.json and ~/.claude/, or
// $CLAUDE_CONFIG_DIR), counting its runs there, plants a hook in its
// settings, and answers in Claude Code's stream-json.
const fakeClaude = `#!/bin/sh
cat >/dev/null
dir=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
state=$HOME/.claude.json
[ -n "$CLAUDE_CONFIG_DIR" ] && state=$CLAUDE_CONFIG_DIR/.claude.json
n=$(sed -n 's/.*"runs":\([0-9]*\).*/\1/p' "$state" 2>/dev/null)
n=$((${n:-0} + 1))
mkdir -p "$dir/projects" 2>/dev/null
echo "{\"runs\":$n}" > "$state" 2>/dev/null
echo '{"type":"user"}' >> "$dir/projects/session.jsonl" 2>/dev/null
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo PLANTED"}]}]}}' > "$dir/settings.json" 2>/dev/null
echo "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"1. Run $n.\",\"session_id\":\"s$n\",\"num_turns\":1,\"duration_ms\":1,\"total_cost_usd\":0,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}"
`

// An agent CLI keeps its state in the agent home, run after run, on a
// fresh home as on a used one; what it writes to its settings never
// reaches the user's own Claude Code.
func TestAgentCLIKeepsToTheAgentHome(t *testing.T) {
	t.Parallel()
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	for _, mode := range []struct{ name, env string }{{"namespaces", ""}, {"no namespaces", "off"}} {
		for _, fresh := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, fresh home %v", mode.name, fresh), func(t *testing.T) {
				t.Parallel()
				home, data := t.TempDir(), t.TempDir()
				const mine = `{"model":"mine"}`
				if !fresh {
					if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(mine), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				bin := t.TempDir()
				if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
					t.Fatal(err)
				}
				env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_SANDBOX_NAMESPACES="+mode.env)
				for i, kv := range env {
					if p, ok := strings.CutPrefix(kv, "PATH="); ok {
						env[i] = "PATH=" + bin + string(os.PathListSeparator) + p
					}
				}
				repo := userRepo(t, env)
				for n := 1; n <= 2; n++ {
					batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", fmt.Sprintf("Run %d", n),
						"--agent", "claude", "--checkpoints", "none", "--endpoint", "plan")
					batonRun(t, env, repo, "delivery", "run", fmt.Sprint(n))
					out := batonRun(t, env, repo, "delivery", "show", fmt.Sprint(n), "--json")
					if want := fmt.Sprintf("1. Run %d.", n); !strings.Contains(out, want) {
						t.Errorf("run %d: the agent did not keep its state (want %q):\n%s", n, want, out)
					}
				}
				// The user's own home: untouched.
				b, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
				switch {
				case fresh && err == nil:
					t.Errorf("the agent wrote ~/.claude/settings.json into a fresh home: %s", b)
				case !fresh && string(b) != mine:
					t.Errorf("the user's ~/.claude/settings.json is now %q", b)
				}
				for _, f := range []string{".claude.json", ".claude/projects"} {
					if _, err := os.Stat(filepath.Join(home, f)); err == nil {
						t.Errorf("the agent's ~/%s reached the user's home", f)
					}
				}
				// The agent home keeps the CLI's state.
				agentHome := filepath.Join(data, "agent-home")
				state := filepath.Join(agentHome, ".claude.json")
				if mode.env == "off" {
					state = filepath.Join(agentHome, ".claude", ".claude.json") // CLAUDE_CONFIG_DIR
				}
				if b, err := os.ReadFile(state); err != nil || !strings.Contains(string(b), `"runs":2`) {
					t.Errorf("the agent home's %s = %q, %v; want two runs counted", state, b, err)
				}
			})
		}
	}
}

// --sandbox=required refuses to run an agent where a defence of the box
// is missing (here: the namespaces, turned off), naming it; the agent
// never starts.
func TestRequiredSandboxRefusesAPartialBox(t *testing.T) {
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	t.Parallel()
	home, data, out := t.TempDir(), t.TempDir(), t.TempDir()
	agent := filepath.Join(t.TempDir(), "agent.sh")
	marker := filepath.Join(out, "ran")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\ntouch "+marker+"\necho '1. Plan.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_SANDBOX_NAMESPACES=off")
	repo := userRepo(t, env)
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Refuse me", "--agent", "command:"+agent,
		"--checkpoints", "none", "--endpoint", "plan")
	cmd := exec.Command(batonBin, "delivery", "run", "1", "--sandbox", "required", "--sandbox-write", out)
	cmd.Dir, cmd.Env = repo, env
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("delivery run --sandbox=required without namespaces succeeded:\n%s", b)
	}
	for _, want := range []string{"processes      NO", "--sandbox=required and processes:"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran")
	}
}
