package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/codexconf"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/reap"
	"github.com/baton-agent/baton/internal/safefile"
)

// stopReason says why Run stopped the agent itself.
type stopReason int

const (
	stopNone stopReason = iota
	stopCanceled
	stopTimeout
)

// Run starts the agent s names, sends the prompt on stdin, follows its
// output until it exits, and returns what it produced. The returned
// *Result is never nil, even with an error; see the package doc for the
// errors and their order.
func Run(ctx context.Context, s Spec) (*Result, error) {
	res := &Result{ExitCode: -1}
	if k, _, err := parseAgent(s.Agent); err == nil {
		res.Agent = k.String()
	}
	fileDir := s.LogDir
	var runTmp string
	if confining(s) {
		// A confined agent reaches nothing of baton's: the files named in
		// its argv go to a temporary directory of its own.
		var err error
		if runTmp, err = os.MkdirTemp("", "baton-agent-"); err != nil {
			return res, newError(baton.Internal, nil, err, "create temporary directory")
		}
		defer os.RemoveAll(runTmp)
		fileDir = runTmp
	}
	if fileDir == "" {
		fileDir = tempDirPlaceholder // replaced below once we know we need it
	}
	p, err := newPlan(s, fileDir)
	if err != nil {
		return res, err
	}
	res.Argv = p.argv

	env := mergeEnv(proc.Environ(s.PassEnv), s.Env, p.env)
	if runTmp != "" {
		env = mergeEnv(env, proc.TempEnv(runTmp))
	}
	path, err := findExecutable(p.argv[0], s.Dir, envValue(env, "PATH"))
	if err != nil {
		return res, notInstalled(p, err)
	}
	if p.kind == kindCodex && s.Dir != "" {
		// baton does not bypass Codex's trust (a repository's hooks are
		// not baton's to vouch for), but it never lets them be off silently.
		if why := codexconf.HooksOff(s.Dir, envValue(env, "HOME"), func(k string) string { return envValue(env, k) }); why != "" {
			note := "baton: Codex will not run this project's hooks here: " + why
			res.Notes = append(res.Notes, note)
			if s.Live != nil {
				fmt.Fprintln(s.Live, note)
			}
		}
	}

	// Files named in argv need a real directory before the agent starts.
	if s.LogDir != "" {
		if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
			return res, newError(baton.Internal, nil, err, "create log directory %s", s.LogDir)
		}
	}
	if fileDir == tempDirPlaceholder && (p.schemaPath != "" || p.lastMsgPath != "") {
		tmp, err := os.MkdirTemp("", "baton-agentrun-")
		if err != nil {
			return res, newError(baton.Internal, nil, err, "create temporary directory")
		}
		defer os.RemoveAll(tmp)
		if p, err = newPlan(s, tmp); err != nil {
			return res, err
		}
		res.Argv = p.argv
		env = mergeEnv(proc.Environ(s.PassEnv), s.Env, p.env)
	}
	if p.schemaPath != "" {
		if err := os.WriteFile(p.schemaPath, p.schema, 0o644); err != nil {
			return res, newError(baton.Internal, nil, err, "write output schema")
		}
	}
	if p.lastMsgPath != "" {
		// A stale file from an earlier run in the same LogDir must not
		// pass for this run's answer.
		if err := os.Remove(p.lastMsgPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, newError(baton.Internal, nil, err, "remove old %s", LastMessageFile)
		}
	}

	if err := ctx.Err(); err != nil {
		// Not started: nothing to stop.
		return res, classify(ctx, s, p, res, stopFor(err), false, nil, "", nil)
	}

	logs, err := openLogs(s, p)
	if err != nil {
		return res, newError(baton.Internal, nil, err, "open logs in %s", s.LogDir)
	}
	defer logs.close()

	live := newLiveView(s.Live)
	dec := newDecoder(p.kind, live)
	start := time.Now()
	stop, stderrTail, waitErr, runErr := execute(ctx, s, p, path, env, runTmp, dec, live, logs, res)
	if runErr != nil {
		return res, runErr
	}

	// What the decoder found.
	found := dec.finish(res)
	if p.kind == kindCodex && res.SessionID != "" {
		if m := codexModel(p.kind.stateDir(s, env), res.SessionID, start, time.Now()); m != "" {
			res.Model = m
		}
	}
	if !found && p.lastMsgPath != "" {
		if b, err := safefile.ReadFile(p.lastMsgPath, maxLineBytes); err == nil {
			if text, ok := codexLastMessage(b); ok {
				res.FinalText, found = text, true
			}
		}
	}
	settle(res, s.Model)
	if err := logs.close(); err != nil {
		// Losing logs is worth saying but not worth failing a finished run.
		live.note("!", "writing logs: "+err.Error())
	}
	return res, classify(ctx, s, p, res, stop, found, p.schema, stderrTail, waitErr)
}

// execute runs the process to the end and feeds its output to dec. It
// returns why Run stopped it (if it did), the tail of stderr, and the
// error from Wait; runErr is set only if the process could not start.
func execute(ctx context.Context, s Spec, p *plan, path string, env []string, runTmp string, dec decoder, live *liveView, logs *runLogs, res *Result) (stop stopReason, stderrTail string, waitErr error, runErr error) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        p.argv,
		Dir:         s.Dir,
		Env:         env,
		SysProcAttr: proc.GroupAttr(), // dies with baton on Linux
	}
	// Own pipes rather than exec's copying goroutines: Wait then returns as
	// soon as the agent exits, even if something it started still holds
	// stdout, and the readers below decide how long to wait for them.
	inR, inW, err := os.Pipe()
	if err != nil {
		return 0, "", nil, newError(baton.Internal, nil, err, "create stdin pipe")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return 0, "", nil, newError(baton.Internal, nil, err, "create stdout pipe")
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return 0, "", nil, newError(baton.Internal, nil, err, "create stderr pipe")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW

	start := time.Now()
	release, err := startAgent(cmd, s, p, path, runTmp, live, res)
	defer func() {
		release() // after Wait: see sandbox.Confinement.Start
		// The box's proxy has recorded all by now.
		res.Refused, res.RefusedMore = res.refusals.List()
	}()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			return 0, "", nil, notInstalled(p, err)
		}
		if baton.ErrorCode(err) == baton.Unavailable {
			return 0, "", nil, err // --sandbox=required where nothing can confine
		}
		return 0, "", nil, newError(baton.Internal, nil, err, "start %s", p.argv[0])
	}
	pgid := cmd.Process.Pid
	// If baton dies, the group ends: the agent and all it started (the
	// parent-death signal reaches only the agent).
	wd := proc.WatchStarted(pgid, res.Sandbox)

	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		defer inW.Close()                   // EOF tells the agent the prompt is complete
		_, _ = io.WriteString(inW, p.stdin) // EPIPE: the agent did not read it all, its choice
	}()
	go func() {
		defer wg.Done()
		lr := newLineReader(outR, maxLineBytes, logs.stdout.write)
		_ = eachLine(lr, dec.line, dec.tooLong) // a read error only ends the stream early
	}()
	tail := proc.Tail{Max: 2048}
	if p.kind != kindCommand {
		live = nil // other agents' stderr is diagnostics, not progress
	}
	go func() {
		defer wg.Done()
		lr := newLineReader(errR, 1<<20, func(b []byte) {
			logs.stderr.write(b)
			tail.Write(b)
		})
		// A command agent's stderr is usually its progress report.
		_ = eachLine(lr, func(b []byte) {
			if live != nil {
				live.text(string(b))
			}
		}, nil)
	}()

	waitCh := make(chan error, 1)
	go func() { waitCh <- reap.Wait(cmd) }()
	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case waitErr = <-waitCh:
	case <-ctx.Done():
		stop = stopFor(ctx.Err())
	case <-timeout:
		stop = stopTimeout
	}
	grace := s.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	if stop != stopNone {
		proc.KillGroup(pgid, syscall.SIGINT)
		t := time.NewTimer(grace)
		select {
		case waitErr = <-waitCh:
		case <-t.C:
			proc.KillGroup(pgid, syscall.SIGKILL)
			waitErr = <-waitCh
		}
		t.Stop()
	}
	res.Duration = time.Since(start)
	res.ExitCode = cmd.ProcessState.ExitCode()
	// Whatever the agent left running in its group goes too: its output
	// pipes close and nothing outlives the run.
	proc.KillGroup(pgid, syscall.SIGKILL)
	wd.Release()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		// Something that left the group (setsid) still holds a pipe:
		// closing our ends unblocks the readers and the prompt writer.
		inW.Close()
		outR.Close()
		errR.Close()
		<-done
	}
	inW.Close()
	outR.Close()
	errR.Close()
	b, _ := tail.Bytes()
	return stop, strings.TrimSpace(string(b)), waitErr, nil
}

// settle fills in what all executors share once decoding is over: the
// model the caller asked for when the agent did not say, and Structured.
func settle(res *Result, model string) {
	if res.Model == "" {
		res.Model = model
	}
	if res.Structured == nil {
		if js, ok := extractJSON(res.FinalText); ok {
			res.Structured = js
		}
	}
}

func stopFor(ctxErr error) stopReason {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return stopTimeout
	}
	return stopCanceled
}

// classify picks the error for a finished run, in the documented order.
func classify(ctx context.Context, s Spec, p *plan, res *Result, stop stopReason, found bool, schema []byte, stderrTail string, waitErr error) error {
	name := p.argv[0]
	switch stop {
	case stopCanceled:
		return newError(baton.Canceled, nil, context.Canceled, "%s run canceled", name)
	case stopTimeout:
		cause := ErrTimeout
		if ctx.Err() != nil {
			return newError(baton.Unavailable, cause, ctx.Err(), "%s did not finish in time and was stopped", name)
		}
		return newError(baton.Unavailable, cause, nil, "%s did not finish within %s and was stopped", name, s.Timeout)
	}
	if res.ExitCode != 0 || res.IsError {
		var why []string
		if res.ExitCode != 0 {
			why = append(why, fmt.Sprintf("exit status %d", res.ExitCode))
		}
		if len(res.Errors) > 0 {
			why = append(why, strings.Join(res.Errors, "; "))
		}
		if stderrTail != "" {
			why = append(why, "stderr: "+lastLines(stderrTail, 3))
		}
		var cause error
		var ee *exec.ExitError
		if waitErr != nil && !errors.As(waitErr, &ee) {
			cause = waitErr
		}
		return newError(baton.Unavailable, ErrAgentFailed, cause, "%s failed (%s)", name, strings.Join(why, "; "))
	}
	if !found {
		msg := "%s exited without a result"
		if res.FinalText != "" {
			msg += "; its last message is kept"
		}
		return newError(baton.Unavailable, ErrNoResult, nil, msg, name)
	}
	if schema != nil {
		if res.Structured == nil {
			return newError(baton.Unavailable, ErrBadOutput, nil, "%s's final message is not JSON, but an output schema was given", name)
		}
		if err := Validate(schema, res.Structured); err != nil {
			return newError(baton.Unavailable, ErrBadOutput, nil, "%s's final message does not match the output schema: %v", name, err)
		}
	}
	return nil
}

func notInstalled(p *plan, cause error) error {
	name := p.argv[0]
	if errors.Is(cause, exec.ErrNotFound) || errors.Is(cause, fs.ErrNotExist) {
		// The message says it all; keep the sentinel for errors.Is only.
		cause = nil
	}
	var others []string
	for _, k := range []kind{kindClaude, kindCodex, kindDroid, kindPi} {
		if k != p.kind {
			others = append(others, "--agent "+k.String())
		}
	}
	hint := strings.Join(others, ", ")
	if p.kind == kindCommand {
		return newError(baton.NotFound, unstated{ErrNotInstalled}, cause,
			"agent program %q not found: check the path in --agent command:<argv>, or pick another agent with %s", name, hint)
	}
	return newError(baton.NotFound, unstated{ErrNotInstalled}, cause,
		"%s is not installed (not found on PATH): install it, or pick another agent with %s or --agent command:<argv>", name, hint)
}

// findExecutable resolves name like exec.LookPath, but with the PATH the
// agent will get (Spec.Env may change it) and, for a relative path, from
// the agent's working directory.
func findExecutable(name, dir, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		full := name
		if !filepath.IsAbs(full) && dir != "" {
			full = filepath.Join(dir, full)
		}
		if err := checkExecutable(full); err != nil {
			return "", err
		}
		return name, nil // exec resolves a relative path against Cmd.Dir
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		full := filepath.Join(d, name)
		if checkExecutable(full) == nil {
			if !filepath.IsAbs(full) {
				if abs, err := filepath.Abs(full); err == nil {
					full = abs
				}
			}
			return full, nil
		}
	}
	return "", exec.ErrNotFound
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// mergeEnv appends the extra lists to base; later entries win, as exec
// keeps the last value of a duplicated key.
func mergeEnv(base []string, extra ...[]string) []string {
	out := append([]string(nil), base...)
	for _, e := range extra {
		out = append(out, e...)
	}
	return out
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// runLogs holds the open log files of one run; every field may be nil.
type runLogs struct {
	stdout, stderr *cappedLog
	closed         bool
}

func openLogs(s Spec, p *plan) (*runLogs, error) {
	l := &runLogs{}
	if s.LogDir == "" {
		return l, nil
	}
	limit := s.MaxLogBytes
	if limit <= 0 {
		limit = DefaultMaxLogBytes
	}
	if err := os.WriteFile(filepath.Join(s.LogDir, PromptFile), []byte(p.stdin), 0o644); err != nil {
		return nil, err
	}
	argv, _ := json.MarshalIndent(p.argv, "", "  ") // []string always marshals
	if err := os.WriteFile(filepath.Join(s.LogDir, ArgvFile), append(argv, '\n'), 0o644); err != nil {
		return nil, err
	}
	name := StdoutLog
	if p.jsonl {
		name = EventsLog
	}
	var err error
	if l.stdout, err = createLog(filepath.Join(s.LogDir, name), limit, p.jsonl); err != nil {
		return nil, err
	}
	if l.stderr, err = createLog(filepath.Join(s.LogDir, StderrLog), limit, false); err != nil {
		l.stdout.Close()
		return nil, err
	}
	return l, nil
}

// close closes both logs once and returns the first error.
func (l *runLogs) close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	err1 := l.stdout.Close()
	err2 := l.stderr.Close()
	return errors.Join(err1, err2)
}
