package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// concurrentAgent answers as planner, implementer or reviewer at once. The
// implementer writes a file named after the branch it is on, so no two
// deliveries touch the same path and every merge is clean.
const concurrentAgent = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
*"You are the planner"*) echo "1. Write the file." ;;
*) f=$(git rev-parse --abbrev-ref HEAD | tr / -); echo "$f" > "$f.txt"; echo done ;;
esac
`

// workerProc is a `baton worker` process and its output.
type workerProc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (w *workerProc) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// startWorker starts the real binary as `baton worker args...` with env.
func startWorker(t *testing.T, env []string, args ...string) *workerProc {
	t.Helper()
	cmd := exec.Command(batonBin, append([]string{"worker"}, args...)...)
	cmd.Env = env
	w := &workerProc{cmd: cmd}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			w.mu.Lock()
			w.out.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return w
}

// stop interrupts the worker and waits for it to exit cleanly.
func (w *workerProc) stop(t *testing.T) {
	t.Helper()
	if w.cmd.ProcessState != nil {
		return
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("worker did not stop cleanly: %v\n%s", err, w.output())
	}
}

// gitOut runs git in dir and returns its trimmed output, failing the test
// on an error.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitEnv is an environment with a fixed git identity and no user or
// system git configuration.
func gitEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BATON_") || strings.HasPrefix(k, "GIT_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = withBatonOnPath(append(env, "HOME="+home, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.com"))
	return append(env, extra...)
}

// withBatonOnPath puts the binary under test first on PATH, as `go
// install` puts baton on a user's: project files (commands, .mcp.json)
// call baton from PATH.
func withBatonOnPath(env []string) []string {
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + filepath.Dir(batonBin) + string(os.PathListSeparator) + p
			return env
		}
	}
	return append(env, "PATH="+filepath.Dir(batonBin))
}

// userRepo makes a repository with main checked out and one commit, as a
// user's clone is.
func userRepo(t *testing.T, env []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial commit"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// batonRun runs the real binary and fails the test when it exits non-zero.
func batonRun(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(batonBin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("baton %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitAllClosed waits until n deliveries are closed, failing as soon as
// one fails or is blocked, or after the deadline. The workers are other
// processes: the database is read.
func waitAllClosed(t *testing.T, st *sqlstore.Store, n int, deadline time.Duration, logs func() string) []*baton.Delivery {
	t.Helper()
	ctx := context.Background()
	var ds []*baton.Delivery
	var err error
	var bad *baton.Delivery
	closed := 0
	testenv.Until(deadline, nil, func() bool {
		if ds, err = st.FindDeliveries(ctx, baton.DeliveryFilter{}); err != nil {
			return true
		}
		closed = 0
		for _, d := range ds {
			switch {
			case d.RunStatus == baton.StatusFailed || d.RunStatus == baton.StatusBlocked:
				bad = d
				return true
			case d.Phase == baton.PhaseClose:
				closed++
			}
		}
		return closed == n && len(ds) == n
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case bad != nil:
		t.Fatalf("delivery %s is %s: %s\n%s", bad.ID, bad.String(), bad.Error, logs())
	case closed != n || len(ds) != n:
		t.Fatalf("after %s, %d of %d deliveries are closed\n%s", deadline, closed, n, logs())
	}
	return ds
}

// fsck checks a repository's objects and refs: any error or missing object
// fails the test.
func fsck(t *testing.T, env []string, dir string) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--full", "--strict", "--no-dangling")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	var problems []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// "notice: HEAD points to an unborn branch" is how a bare cache is.
		if l != "" && !strings.HasPrefix(l, "notice: ") {
			problems = append(problems, l)
		}
	}
	if err != nil || len(problems) > 0 {
		t.Errorf("git fsck in %s: %v\n%s", dir, err, out)
	}
}

// Four worker processes on one data directory (one SQLite database, one
// repository cache) deliver 50 requests on one repository through every
// phase at once: every delivery closes succeeded, main holds every change,
// the user's work tree is clean, and git fsck finds nothing wrong in the
// repository or in the cache.
func TestWorkerProcessesShareOneCache(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "starts four worker processes and runs 50 deliveries")
	const deliveries, workers = 50, 4
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data, "BATON_ACTOR=tester")
	src := userRepo(t, env)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(concurrentAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range deliveries {
		batonRun(t, env, src, "delivery", "create", "--repo", ".", "--summary", fmt.Sprintf("Concurrent delivery %d", i),
			"--agent", "command:"+agent, "--checkpoints", "none", "--verify", "true",
			"--observe", "true", "--observe-window", "1ms", "--observe-every", "1ms")
	}

	var procs []*workerProc
	for range workers {
		procs = append(procs, startWorker(t, env, "--poll", "50ms", "--heartbeat", "1s", "--lease", "30s"))
	}
	logs := func() string {
		var b strings.Builder
		for i, w := range procs {
			fmt.Fprintf(&b, "worker %d:\n%s", i+1, w.output())
		}
		return b.String()
	}
	db, err := sqlstore.Open(context.Background(), filepath.Join(data, "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds := waitAllClosed(t, db.Store(), deliveries, 3*time.Minute, logs)
	for _, w := range procs {
		w.stop(t)
	}

	for _, d := range ds {
		if d.String() != "close/succeeded" {
			t.Errorf("delivery %s ended %s: %s", d.ID, d.String(), d.Error)
		}
		name := "baton-" + d.ID + ".txt"
		if got := gitOut(t, src, "show", "main:"+name); got != "baton-"+d.ID {
			t.Errorf("main:%s = %q", name, got)
		}
	}
	if st := gitOut(t, src, "status", "--porcelain"); st != "" {
		t.Errorf("the user's work tree is not clean after the merges:\n%s", st)
	}
	fsck(t, env, src)
	caches, _ := filepath.Glob(filepath.Join(data, "cache", "*.git"))
	if len(caches) != 1 {
		t.Fatalf("caches = %v, want one", caches)
	}
	fsck(t, env, caches[0])
	if t.Failed() || testing.Verbose() {
		t.Log(logs())
	}
}

// killableAgent is concurrentAgent, except that the first implementer of
// the run (whichever delivery it is) records its branch, and hangs, so
// the test can SIGKILL the worker that runs it mid-phase.
const killableAgent = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"ok","feedback":""}' ;;
*"You are the planner"*) echo "1. Write the file." ;;
*) if mkdir "$KILL_MARK.d" 2>/dev/null; then echo "$PPID $(git rev-parse --abbrev-ref HEAD)" > "$KILL_MARK.tmp"; mv "$KILL_MARK.tmp" "$KILL_MARK"; sleep 60; fi
   f=$(git rev-parse --abbrev-ref HEAD | tr / -); echo "$f" > "$f.txt"; echo done ;;
esac
`

// Three worker processes, each with a data directory of its own as on its
// own machine, share one PostgreSQL database and deliver 12 requests on
// one repository. One worker is SIGKILLed in the middle of an implement
// phase: another takes the phase over once the lease runs out, no phase
// of any delivery runs twice at once, every delivery closes succeeded,
// and the repository is intact.
func TestWorkerProcessesOnPostgresSurviveAKill(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "starts three worker processes on PostgreSQL")
	dsn := sqlstoretest.DSN(t, sqlstore.Postgres)
	const deliveries, workers = 12, 3
	home := t.TempDir()
	mark := filepath.Join(t.TempDir(), "killed")
	// The confined agent may leave its mark where the test reads it.
	env := gitEnv(home, "BATON_DATABASE_URL="+dsn, "BATON_ACTOR=tester", "KILL_MARK="+mark, "BATON_SANDBOX_WRITE="+filepath.Dir(mark))
	src := userRepo(t, env)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(killableAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range deliveries {
		batonRun(t, append(env, "BATON_DATA_DIR="+t.TempDir()), src, "delivery", "create", "--repo", ".",
			"--summary", fmt.Sprintf("Scaled-out delivery %d", i),
			"--agent", "command:"+agent, "--checkpoints", "none", "--verify", "true",
			"--observe", "true", "--observe-window", "1ms", "--observe-every", "1ms")
	}
	var procs []*workerProc
	for range workers {
		procs = append(procs, startWorker(t, append(env, "BATON_DATA_DIR="+t.TempDir()),
			"--poll", "100ms", "--heartbeat", "500ms", "--lease", "3s"))
	}
	logs := func() string {
		var b strings.Builder
		for i, w := range procs {
			fmt.Fprintf(&b, "worker %d:\n%s", i+1, w.output())
		}
		return b.String()
	}

	// Wait for the hanging implementer, and kill the worker running it.
	var pid int
	var branch string
	var b []byte
	if !testenv.Until(2*time.Minute, nil, func() bool { var err error; b, err = os.ReadFile(mark); return err == nil }) {
		t.Fatalf("no implementer started within 2m\n%s", logs())
	}
	if _, err := fmt.Sscan(string(b), &pid, &branch); err != nil {
		t.Fatalf("marker %q: %v", b, err)
	}
	// The agent runs in a box whose process ids are its own: the worker
	// is the delivery's owner (worker:<host>:<pid>:<boot>), as the
	// database says.
	pid = ownerPID(t, dsn, strings.TrimPrefix(branch, "baton/"))
	var victim *workerProc
	for _, w := range procs {
		if w.cmd.Process.Pid == pid {
			victim = w
		}
	}
	if victim == nil {
		t.Fatalf("the implementer's worker %d is none of the workers\n%s", pid, logs())
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()

	db, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds := waitAllClosed(t, db.Store(), deliveries, 3*time.Minute, logs)
	for _, w := range procs {
		if w != victim {
			w.stop(t)
		}
	}

	killedID := strings.TrimPrefix(branch, "baton/")
	found := false
	for _, d := range ds {
		if d.String() != "close/succeeded" {
			t.Errorf("delivery %s ended %s: %s", d.ID, d.String(), d.Error)
		}
		name := "baton-" + d.ID + ".txt"
		if got := gitOut(t, src, "show", "main:"+name); got != "baton-"+d.ID {
			t.Errorf("main:%s = %q", name, got)
		}
		runs, err := db.Store().AgentRuns(context.Background(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(runs, func(a, b baton.AgentRun) int { return a.StartedAt.Compare(b.StartedAt) })
		for i := 1; i < len(runs); i++ {
			if runs[i].StartedAt.Before(runs[i-1].EndedAt) {
				t.Errorf("delivery %s: agent run %d (%s) started at %s, before run %d (%s) ended at %s",
					d.ID, runs[i].ID, runs[i].Phase, runs[i].StartedAt, runs[i-1].ID, runs[i-1].Phase, runs[i-1].EndedAt)
			}
		}
		if d.ID == killedID {
			found = true
			implements := 0
			for _, r := range runs {
				if r.Phase == baton.PhaseImplement {
					implements++
				}
			}
			if implements < 2 {
				t.Errorf("delivery %s: %d implement runs, want the killed one and its retry: %+v", d.ID, implements, runs)
			}
		}
	}
	if !found {
		t.Errorf("the killed implementer's branch %q names no delivery", branch)
	}
	if st := gitOut(t, src, "status", "--porcelain"); st != "" {
		t.Errorf("the user's work tree is not clean after the merges:\n%s", st)
	}
	fsck(t, env, src)
	if t.Failed() || testing.Verbose() {
		t.Log(logs())
	}
}

// doctor exits 0 when what is installed works, and 1 when an installed
// hook cannot run, so scripts and CI can rely on it.
func TestDoctorExitStatus(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	batonRun(t, env, repo, "install", "claude")
	cmd := exec.Command(batonBin, "doctor")
	cmd.Dir, cmd.Env = repo, env
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok   claude mcp") || !strings.Contains(string(out), "12 tools: files, files_add, fix_issue_brief, handoff") {
		t.Fatalf("doctor on a working install (hooks and MCP server): %v\n%s", err, out)
	}
	settings := filepath.Join(repo, ".claude", "settings.local.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(strings.ReplaceAll(string(b), batonBin, "/nonexistent/baton")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(batonBin, "doctor")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "broken:") {
		t.Errorf("doctor with hooks calling a missing binary: %v\n%s", err, out)
	}
}

// ownerPID is the process id of the worker running delivery id.
func ownerPID(t *testing.T, dsn, id string) int {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := db.Store().FindDeliveryByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(d.Owner, ":")
	var pid int
	if len(parts) < 3 {
		t.Fatalf("delivery %s's owner %q names no process", id, d.Owner)
	}
	if _, err := fmt.Sscan(parts[2], &pid); err != nil {
		t.Fatalf("delivery %s's owner %q: %v", id, d.Owner, err)
	}
	return pid
}
