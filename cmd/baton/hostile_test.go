package main

import (
	"context"
	"encoding/json"
	"github.com/baton-agent/baton/internal/fsstore"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real binary, as a harness does, inside a checkout
// that carries what a hostile repository can: symlinks out of the store,
// FIFOs and devices where files should be, CRLF files, huge files. A hook
// must answer (exit 0, its usual output) whatever it finds; nothing may be
// read or written outside the store.

// hostile is a git repository with a store and a loop bound to session s1.
type hostile struct {
	proc
	store string
}

func newHostile(t *testing.T) hostile {
	t.Helper()
	h := hostile{proc: proc{t: t, dir: t.TempDir(), home: t.TempDir()}}
	h.store = filepath.Join(h.dir, ".agent/context")
	h.sh("git init -q && "+batonBin+" init >/dev/null", "")
	return h
}

// hook runs one hook event with a memory limit and a deadline: a hook that
// follows /dev/zero or blocks on a FIFO fails here instead of hanging or
// eating the machine.
func (h hostile) hook(event, harness, payload string) (stdout, stderr string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", "ulimit -v 2000000; exec "+batonBin+" hook "+event+" --harness "+harness)
	c.Dir = h.dir
	c.Env = h.env()
	c.Stdin = strings.NewReader(payload)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	err := c.Run()
	if ctx.Err() != nil {
		h.t.Fatalf("hook %s hung (killed after %s)\nstderr: %s", event, time.Since(start).Round(time.Millisecond), errb.String())
	}
	if err != nil {
		h.t.Fatalf("hook %s: %v (a hook must exit 0)\nstdout: %s\nstderr: %s", event, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// machine is name in the store's per-machine directory, relative to the
// store.
func (h hostile) machine(name string) string {
	h.t.Helper()
	rel, err := filepath.Rel(h.store, filepath.Join(fsstore.Open(h.dir, fsstore.Options{}).IndexDir(), name))
	if err != nil {
		h.t.Fatal(err)
	}
	return rel
}

func (h hostile) symlink(target, rel string) {
	h.t.Helper()
	p := filepath.Join(h.store, rel)
	if err := os.RemoveAll(p); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h hostile) startLoop() string {
	h.t.Helper()
	out, _ := h.sh(batonBin+" loop start --max-iterations=0 --promise DONE --json 'Fix the tests.'", "", "BATON_SESSION_ID=s1")
	var r struct{ ID string }
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID == "" {
		h.t.Fatalf("loop start --json = %q (%v)", out, err)
	}
	return r.ID
}

func stopPayload(dir, msg string) string {
	return `{"session_id":"s1","cwd":"` + dir + `","stop_hook_active":false,"last_assistant_message":` + msg + `}`
}

// Store files linked to /dev/zero are refused, not read: session-start
// and stop answer as if the file were not there, and say which file they
// skipped.
func TestHostileStoreLinksToDevZero(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.sh(batonBin+" handoff 'real work' --next-prompt 'carry on' >/dev/null", "")
	id := h.startLoop()
	h.symlink("/dev/zero", "packets/20991231T000000Z-zero.md")
	h.symlink("/dev/zero", h.machine("relevant-files.jsonl"))
	out, errOut := h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","source":"startup"}`)
	if !strings.Contains(out, "real work") || !strings.Contains(out, "Foreground loop "+id) {
		t.Errorf("session-start did not give the context: %q (stderr %q)", out, errOut)
	}

	h.symlink("/dev/zero", "loops/"+id+".md")
	out, errOut = h.hook("stop", "claude", stopPayload(h.dir, `"working"`))
	if out != "" || !strings.Contains(errOut, "loops/"+id+".md") || !strings.Contains(errOut, "symlink") {
		t.Errorf("stop with a loop linked to /dev/zero: stdout %q, stderr %q; want no answer and a line naming the file", out, errOut)
	}
}

// Directories and logs linked out of the store are never written
// through: hooks, handoff and loop start refuse, and the directory outside
// stays empty.
func TestHostileStoreLinksOut(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"packets", "loops", "indexes"} {
		t.Run(dir, func(t *testing.T) {
			h := newHostile(t)
			outside := t.TempDir()
			h.symlink(outside, dir)
			h.hook("post-tool-use", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","tool_name":"Write","tool_input":{"file_path":"`+h.dir+`/a.go"}}`)
			h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","source":"startup"}`)
			h.hook("pre-compact", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","trigger":"manual"}`)
			for _, cmd := range []string{"handoff x", "loop start 'do it'"} {
				c := exec.Command("/bin/sh", "-c", batonBin+" "+cmd)
				c.Dir, c.Env = h.dir, h.env()
				if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "symlink") {
					t.Errorf("baton %s with %s linked out: %v, %q; want a refusal naming the link", cmd, dir, err, out)
				}
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("files written outside the store through %s: %v", dir, entries)
			}
		})
	}
	// A log linked to a file outside is not appended to.
	h := newHostile(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.symlink(victim, h.machine("relevant-files.jsonl"))
	h.symlink(victim, h.machine("sessions.jsonl"))
	h.hook("post-tool-use", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","tool_name":"Write","tool_input":{"file_path":"`+h.dir+`/a.go"}}`)
	h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","source":"startup"}`)
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("a file outside the store was written through a log link: %q", b)
	}
}

// A link above the store (.agent, as a clone can carry it) or inside it
// below a directory baton checks by name (the per-machine directory)
// leads nothing outside: the hooks still answer, handoff and loop start
// refuse and name the link, and the store the link points at is not
// touched.
func TestHostileStoreLinkedAboveAndBelow(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"agent", "machine"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			h := newHostile(t)
			outside := t.TempDir()
			switch where {
			case "agent":
				// Another project's store, reached through .agent.
				if err := os.Rename(filepath.Join(h.dir, ".agent"), filepath.Join(outside, ".agent")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(outside, ".agent"), filepath.Join(h.dir, ".agent")); err != nil {
					t.Fatal(err)
				}
			case "machine":
				h.symlink(outside, h.machine(""))
			}
			before := treeOf(t, outside)
			h.hook("post-tool-use", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","tool_name":"Write","tool_input":{"file_path":"`+h.dir+`/a.go"}}`)
			h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","source":"startup"}`)
			h.hook("pre-compact", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","trigger":"manual"}`)
			h.hook("stop", "claude", stopPayload(h.dir, `"working"`))
			for _, cmd := range []string{"handoff x", "loop start 'do it'"} {
				c := exec.Command("/bin/sh", "-c", batonBin+" "+cmd)
				c.Dir, c.Env = h.dir, h.env()
				if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "link") {
					t.Errorf("baton %s with %s linked out: %v, %q; want a refusal naming the link", cmd, where, err, out)
				}
			}
			if after := treeOf(t, outside); after != before {
				t.Errorf("the directory outside changed through the link:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// treeOf lists every file below dir with its size and content, one a line.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(" " + strconv.Quote(string(c)))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A packet over the size cap is skipped with a warning naming it; the
// other packets still list and render.
func TestHostileStoreHugePacket(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.sh(batonBin+" handoff 'small one' >/dev/null", "")
	huge := filepath.Join(h.store, "packets/20991231T000000Z-huge.md")
	body := "---\nid: 20991231T000000Z-huge\ncreated_at: 2099-12-31T00:00:00Z\nupdated_at: 2099-12-31T00:00:00Z\nstatus: active\npurpose: huge\n---\n\n## Notes\n\n" + strings.Repeat("x", 6<<20) + "\n"
	if err := os.WriteFile(huge, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := h.sh(batonBin+" packet list", "")
	if !strings.Contains(out, "small one") || strings.Contains(out, "huge") || !strings.Contains(errOut, "20991231T000000Z-huge.md") {
		t.Errorf("packet list: stdout %q, stderr %q; want the small packet and a warning naming the huge one", out, errOut)
	}
	out, _ = h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","source":"startup"}`)
	if !strings.Contains(out, "small one") {
		t.Errorf("session-start = %q", out)
	}
}

// A FIFO named as the transcript never blocks stop or pre-compact.
func TestHostileTranscriptFIFO(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.startLoop()
	fifo := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Droid's Stop has no last_assistant_message: the transcript is read.
	out, _ := h.hook("stop", "droid", `{"session_id":"s1","cwd":"`+h.dir+`","stop_hook_active":false,"transcript_path":"`+fifo+`"}`)
	if !strings.Contains(out, `"decision":"block"`) {
		t.Errorf("stop with a FIFO transcript = %q; want the loop to continue (message unknown)", out)
	}
	h.hook("pre-compact", "claude", `{"session_id":"s1","cwd":"`+h.dir+`","trigger":"auto","transcript_path":"`+fifo+`"}`)
	// So does a FIFO in place of the env file Claude Code names.
	envFifo := filepath.Join(t.TempDir(), "env")
	if err := syscall.Mkfifo(envFifo, 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(batonBin, "hook", "session-start", "--harness", "claude")
	c.Dir, c.Env = h.dir, append(h.env(), "CLAUDE_ENV_FILE="+envFifo)
	c.Stdin = strings.NewReader(`{"session_id":"s1","cwd":"` + h.dir + `","source":"startup"}`)
	done := make(chan error, 1)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("session-start with a FIFO env file: %v", err)
		}
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		t.Fatal("session-start blocked on a FIFO env file")
	}
}

// A session started outside any git repository creates no store there
// (it would capture every repository below it), and says so in one line.
func TestHookCreatesNoStoreOutsideGit(t *testing.T) {
	t.Parallel()
	p := proc{t: t, dir: t.TempDir(), home: t.TempDir()}
	h := hostile{proc: p}
	out, errOut := h.hook("session-start", "claude", `{"session_id":"s1","cwd":"`+p.dir+`","source":"startup"}`)
	if _, err := os.Stat(filepath.Join(p.dir, ".agent")); err == nil {
		t.Errorf("session-start created a store outside git")
	}
	if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "baton init") {
		t.Errorf("stdout %q, stderr %q; want one line that says how to use baton here", out, errOut)
	}
	// A repository below an existing store above git roots resolves to
	// itself, not to that store.
	p.sh(batonBin+" init >/dev/null", "")
	repo := filepath.Join(p.dir, "src", "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(batonBin, "root")
	c.Dir, c.Env = repo, p.env()
	if err := exec.Command("git", "-C", repo, "init", "-q").Run(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Output()
	if err != nil || strings.TrimSpace(string(got)) != repo {
		t.Errorf("baton root in %s = %q (%v), want the repository itself", repo, got, err)
	}
	c = exec.Command(batonBin, "doctor")
	c.Dir, c.Env = repo, p.env()
	rep, _ := c.CombinedOutput()
	if !strings.Contains(string(rep), filepath.Join(p.dir, ".agent/context")) {
		t.Errorf("doctor does not report the store above the git root:\n%s", rep)
	}
}

// A loop file checked out with CRLF line endings still continues.
func TestLoopWithCRLFContinues(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	id := h.startLoop()
	p := filepath.Join(h.store, "loops", id+".md")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "\n", "\r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := h.hook("stop", "claude", stopPayload(h.dir, `"working"`))
	if !strings.Contains(out, `"decision":"block"`) || !strings.Contains(out, `"additionalContext":"Fix the tests."`) {
		t.Errorf("stop on a CRLF loop: stdout %q, stderr %q", out, errOut)
	}
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "\r") {
		t.Errorf("the rewritten loop file still has CR: baton writes LF")
	}
}

// Temp files a killed writer left are ignored by git and swept by the
// next write once they are stale.
func TestStaleTempFilesSwept(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	id := h.startLoop()
	h.sh("git add -A && git -c user.email=t@t -c user.name=t commit -qm store", "")
	stale := filepath.Join(h.store, "loops", "."+id+".md.tmp-k1ll3d")
	fresh := filepath.Join(h.store, "packets", ".p.md.tmp-inflight")
	old := filepath.Join(h.store, "loops", "."+id+".md1234567") // an earlier baton's name
	for _, f := range []string{stale, fresh, old} {
		if err := os.WriteFile(f, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Minute)
	for _, f := range []string{stale, old} {
		if err := os.Chtimes(f, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := h.sh("git status --porcelain --untracked-files=all", ""); strings.Contains(out, ".tmp-") {
		t.Errorf("git status shows temp files:\n%s", out)
	}
	h.hook("stop", "claude", stopPayload(h.dir, `"working"`)) // rewrites the loop
	for f, want := range map[string]bool{stale: false, old: false, fresh: true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s exists = %v after a write, want %v", filepath.Base(f), err == nil, want)
		}
	}
}

// Sixty-four stops of one session on one loop at once: every stop
// blocks and counts its iteration, none waits out the lock, none is
// lost. Waiters queue in the kernel; each holds the lock over one
// fsync of the loop file (the directory's comes after it lets go). On
// two cores loaded by other packages' tests that fsync took up to 28 ms,
// so 200 stops, as this test first ran, queued past a hook's 5 s lock
// timeout (21 of 200 did) although nothing waited needlessly; 64 queue
// under 2 s at that pace. With the 2 ms polling lock this replaced, a
// third of them or more gave up. How long each takes is measured by
// bench/hookbench, not asserted here. It runs alone, not in parallel:
// the package's other tests on the same two cores would stretch the
// queue too.
func TestConcurrentStopsOnOneLoop(t *testing.T) {
	h := newHostile(t)
	id := h.startLoop()
	const n = 64
	type res struct {
		out, errOut string
		err         error
	}
	results := make(chan res, n)
	payload := stopPayload(h.dir, `"working"`)
	for range n {
		go func() {
			c := exec.Command(batonBin, "hook", "stop", "--harness", "claude")
			c.Dir, c.Env = h.dir, h.env()
			c.Stdin = strings.NewReader(payload)
			var out, errb strings.Builder
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			results <- res{out.String(), errb.String(), err}
		}()
	}
	blocked, waited := 0, 0
	for range n {
		r := <-results
		switch {
		case r.err == nil && strings.Contains(r.out, `"decision":"block"`) && r.errOut == "":
			blocked++
		case r.err == nil && r.out == "" && strings.Contains(r.errOut, "context deadline exceeded"):
			waited++
		default:
			t.Errorf("a stop neither blocked nor failed open: %v, stdout %q, stderr %q", r.err, r.out, r.errOut)
		}
	}
	out, _ := h.sh(batonBin+" loop status "+id+" --json", "")
	var st struct{ Loop struct{ Iteration int } }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Loop.Iteration != 1+blocked {
		t.Errorf("iteration = %d after %d blocks, want %d: increments were lost", st.Loop.Iteration, blocked, 1+blocked)
	}
	if waited > 0 {
		t.Errorf("%d of %d stops waited out the lock", waited, n)
	}
}

// More of what a checkout or a local process can leave in the store: a
// FIFO as the foreground loop or a packet, the foreground pointer linked
// to /dev/zero, a lock file or the whole store linked out of the project.
// Every hook answers, names what it refused, and writes nothing outside.
func TestHostileStoreShapes(t *testing.T) {
	t.Parallel()
	session := `{"session_id":"s1","cwd":"$ROOT","source":"startup"}`
	stop := `{"session_id":"s1","cwd":"$ROOT","stop_hook_active":false,"last_assistant_message":"working"}`
	cases := []struct {
		name         string
		plant        func(h hostile, loop, outside string)
		event, input string
		stderr       string // in the hook's line: what it refused
	}{
		{"foreground loop is a FIFO", func(h hostile, loop, _ string) {
			os.Remove(filepath.Join(h.store, "loops", loop+".md"))
			mkfifo(h.t, filepath.Join(h.store, "loops", loop+".md"))
		}, "stop", stop, "is a named pipe"},
		{"a packet is a FIFO", func(h hostile, _, _ string) {
			mkfifo(h.t, filepath.Join(h.store, "packets", "20991231T000000Z-pipe.md"))
		}, "session-start", session, ""},
		{"foreground-loops.json linked to /dev/zero", func(h hostile, _, _ string) {
			h.symlink("/dev/zero", h.machine("foreground-loops.json"))
		}, "stop", stop, "is a symlink"},
		{"the loop's lock file linked out", func(h hostile, loop, outside string) {
			h.symlink(filepath.Join(outside, "made-by-baton"), "loops/"+loop+".md.lock")
		}, "stop", stop, "symlink"},
		{"the whole store linked out", func(h hostile, _, outside string) {
			if err := os.Rename(h.store, filepath.Join(outside, "context")); err != nil {
				h.t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "context"), h.store); err != nil {
				h.t.Fatal(err)
			}
		}, "session-start", session, "is a symlink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t)
			h.sh(batonBin+" handoff 'real work' --next-prompt 'carry on' >/dev/null", "")
			loop := h.startLoop()
			outside := t.TempDir()
			c.plant(h, loop, outside)
			before := listTree(t, outside)
			out, errOut := h.hook(c.event, "claude", strings.ReplaceAll(c.input, "$ROOT", h.dir))
			if !strings.Contains(errOut, c.stderr) {
				t.Errorf("hook %s: stdout %q, stderr %q; want a line with %q", c.event, out, errOut, c.stderr)
			}
			if c.name == "a packet is a FIFO" && !strings.Contains(out, "real work") {
				t.Errorf("session-start next to a FIFO packet = %q, want the real packet", out)
			}
			if after := listTree(t, outside); after != before {
				t.Errorf("hook %s wrote outside the store:\nbefore %s\nafter  %s", c.event, before, after)
			}
		})
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listTree lists every path under dir with its size.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + ":" + strconv.FormatInt(fi.Size(), 10) + " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A loop's verify commands run from the Stop hook, on text an agent
// wrote: they get none of the secrets in the hook's environment.
func TestVerifyCommandGetsNoSecrets(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	out, _ := h.sh(batonBin+" loop start --max-iterations=0 --promise DONE --verify 'env > verify-env.txt' --json 'Fix the tests.'", "", "BATON_SESSION_ID=s1")
	var r struct{ ID string }
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID == "" {
		t.Fatalf("loop start --json = %q (%v)", out, err)
	}
	secrets := []string{"GH_TOKEN=ghp_verifysecret1", "GITHUB_TOKEN=ghp_verifysecret2", "BATON_API_TOKEN=verifysecret3", "BATON_GITHUB_APP_KEY=verifysecret4"}
	stdout, _ := h.sh(batonBin+" hook stop --harness claude", stopPayload(h.dir, `"All fixed. <promise>DONE</promise>"`), append(secrets, "PLAIN_SETTING=plainvisible")...)
	if strings.Contains(stdout, `"decision":"block"`) {
		t.Fatalf("the verification did not pass: %s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(h.dir, "verify-env.txt"))
	if err != nil {
		t.Fatalf("the verify command did not run: %v", err)
	}
	if !strings.Contains(string(b), "PLAIN_SETTING=plainvisible") {
		t.Fatalf("the verify command did not get the hook's plain environment:\n%s", b)
	}
	for _, s := range secrets {
		if _, v, _ := strings.Cut(s, "="); strings.Contains(string(b), v) {
			t.Errorf("the verify command saw %s", s)
		}
	}
}
