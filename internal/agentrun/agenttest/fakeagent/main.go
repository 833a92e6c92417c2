// Command fakeagent is the scripted fake agent of package agenttest. It
// answers as claude, codex, droid or pi when started under that name, and as a
// plain command agent otherwise. See package agenttest for the script.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
)

// exitScript is the status for a broken script or test setup, distinct
// from anything a turn asks for by default.
const exitScript = 3

func main() {
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:]))
}

// usageError is a command-line error the real CLI would reject.
type usageError struct {
	code int
	msg  string
}

func (e *usageError) Error() string { return e.msg }

// invocation is what the command line said, in agent-neutral terms.
type invocation struct {
	agent        string
	args         []string
	prompt       string
	promptSet    bool // given as an argument or -f file
	systemPrompt string
	model        string
	schema       json.RawMessage
	dir          string // -C / --cwd
	format       string // output format
	lastMessage  string // codex -o
	canEdit      bool   // permissions allow file edits
	canRun       bool   // permissions allow commands
	editDenied   string // why edits are refused, when !canEdit
}

func run(name string, args []string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)

	var inv *invocation
	var err error
	switch name {
	case "claude":
		inv, err = parseClaude(args)
	case "codex":
		inv, err = parseCodex(args)
	case "droid":
		inv, err = parseDroid(args)
	case "pi":
		inv, err = parsePi(args)
	default:
		inv, err = parsePlain(args)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(os.Stderr, ue.msg)
		return ue.code
	}
	if err != nil {
		return fail("%v", err)
	}
	if !inv.promptSet {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fail("read stdin: %v", err)
		}
		inv.prompt = string(b)
	}
	if strings.TrimSpace(inv.prompt) == "" {
		fmt.Fprintln(os.Stderr, "Error: no prompt provided (pass it as an argument or on stdin)")
		return 1
	}
	if inv.dir != "" {
		if err := os.Chdir(inv.dir); err != nil {
			fmt.Fprintf(os.Stderr, "Error: cannot change to %s: %v\n", inv.dir, err)
			return 1
		}
	}
	if name == "codex" && !hasArg(args, "--skip-git-repo-check") && !inGitRepo() {
		fmt.Fprintln(os.Stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
		return 1
	}

	script := os.Getenv(agenttest.ScriptEnv)
	if script == "" {
		return fail("%s is not set: use agenttest.New and fake.Env() or fake.Setenv(t)", agenttest.ScriptEnv)
	}
	turn, index, seq, err := nextTurn(script)
	if err != nil {
		return fail("%v", err)
	}
	cwd, _ := os.Getwd()
	if err := record(script, seq, agenttest.Call{
		Index: index, Agent: inv.agent, Args: args, Dir: cwd, Prompt: inv.prompt,
		SystemPrompt: inv.systemPrompt, Model: inv.model, Schema: inv.schema,
	}); err != nil {
		return fail("record call: %v", err)
	}

	a := &actor{inv: inv, turn: turn, sigs: sigs, index: index, cwd: cwd}
	switch name {
	case "claude":
		return a.claude()
	case "codex":
		return a.codex()
	case "droid":
		return a.droid()
	case "pi":
		return a.pi()
	default:
		return a.plain()
	}
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "fakeagent: "+format+"\n", args...)
	return exitScript
}

func hasArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

func inGitRepo() bool {
	dir, err := os.Getwd()
	if err != nil {
		return false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// nextTurn takes the next turn under a lock on the state file. seq counts
// invocations from 1.
func nextTurn(script string) (turn agenttest.Turn, index, seq int, err error) {
	b, err := os.ReadFile(script)
	if err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	var s agenttest.Script
	if err := json.Unmarshal(b, &s); err != nil {
		return agenttest.Turn{}, 0, 0, fmt.Errorf("decode %s: %w", script, err)
	}
	f, err := os.OpenFile(agenttest.StatePath(script), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	next := 0
	if t := strings.TrimSpace(string(raw)); t != "" {
		if next, err = strconv.Atoi(t); err != nil {
			return agenttest.Turn{}, 0, 0, fmt.Errorf("bad state file: %w", err)
		}
	}
	index = next
	if index >= len(s.Turns) {
		if !s.RepeatLast || len(s.Turns) == 0 {
			return agenttest.Turn{}, 0, 0, fmt.Errorf("script exhausted: invocation %d, but the script has %d turns", index+1, len(s.Turns))
		}
		index = len(s.Turns) - 1
	}
	if err := f.Truncate(0); err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(next+1)), 0); err != nil {
		return agenttest.Turn{}, 0, 0, err
	}
	return s.Turns[index], index, next + 1, nil
}

func record(script string, seq int, c agenttest.Call) error {
	dir := agenttest.CallsDir(script)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(c) // compact: Schema keeps the bytes it was given, minus spaces
	if err != nil {
		return err
	}
	// Sequence numbers come from the state file, so they are unique even
	// with RepeatLast.
	// Written under a name Calls skips, then linked into place, so a test
	// reading the calls while an agent runs never sees half a file.
	name := fmt.Sprintf("%06d.json", seq)
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, filepath.Join(dir, name)) // fails if the name is taken, as O_EXCL did
}

// actor carries out one turn.
type actor struct {
	inv   *invocation
	turn  agenttest.Turn
	sigs  chan os.Signal
	index int
	cwd   string
	seq   int
}

func (a *actor) id(prefix string) string {
	a.seq++
	return fmt.Sprintf("%s%d_%d", prefix, a.index, a.seq)
}

func (a *actor) sessionID() string {
	if a.turn.SessionID != "" {
		return a.turn.SessionID
	}
	return fmt.Sprintf("fake-session-%04d", a.index+1)
}

func (a *actor) model() string {
	switch {
	case a.turn.Model != "":
		return a.turn.Model
	case a.inv.model != "":
		return a.inv.model
	}
	return "fake-model"
}

// finalText returns the final message as text, and whether it is JSON.
func (a *actor) finalText() (string, json.RawMessage) {
	switch f := a.turn.Final.(type) {
	case nil:
		return "", nil
	case string:
		return f, nil
	default:
		b, err := json.Marshal(f)
		if err != nil {
			return fmt.Sprint(f), nil
		}
		return string(b), b
	}
}

func (a *actor) exitCode() int {
	if a.turn.ExitCode == 0 && a.turn.IsError {
		return 1
	}
	return a.turn.ExitCode
}

func (a *actor) numTurns() int {
	if a.turn.NumTurns > 0 {
		return a.turn.NumTurns
	}
	return 1 + len(a.turn.Files) + len(a.turn.Commands)
}

// sleep waits for the turn's Sleep and reports whether SIGINT cut it short.
func (a *actor) sleep() bool {
	if a.turn.Sleep <= 0 {
		return false
	}
	t := time.NewTimer(a.turn.Sleep)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return false
		case <-a.sigs:
			if !a.turn.IgnoreInterrupt {
				return true
			}
		}
	}
}

// path resolves a script path inside the working directory.
func (a *actor) path(rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("file path %q must be relative and stay inside the working directory", rel)
	}
	return filepath.Join(a.cwd, rel), nil
}

// applyFile performs one file operation and says what kind of change it
// was: add, update or delete.
func (a *actor) applyFile(f agenttest.File) (kind string, err error) {
	p, err := a.path(f.Path)
	if err != nil {
		return "", err
	}
	_, statErr := os.Stat(p)
	existed := statErr == nil
	switch f.Op {
	case "", "write":
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(f.Content), 0o644); err != nil {
			return "", err
		}
	case "append":
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return "", err
		}
		_, werr := fh.WriteString(f.Content)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", werr
		}
	case "delete":
		if err := os.Remove(p); err != nil {
			return "", err
		}
		return "delete", nil
	default:
		return "", fmt.Errorf("file %s: unknown op %q (write, append or delete)", f.Path, f.Op)
	}
	if existed {
		return "update", nil
	}
	return "add", nil
}

// runCommand runs one command and returns its combined output and exit
// status. A failure that the script does not allow is returned as err.
func (a *actor) runCommand(c agenttest.Command) (output string, code int, err error) {
	if len(c.Argv) == 0 {
		return "", 0, errors.New("command with empty argv")
	}
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = a.cwd
	if c.Background {
		if c.InheritOutput {
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			return "", -1, fmt.Errorf("start %s: %w", strings.Join(c.Argv, " "), err)
		}
		if c.PIDFile != "" {
			p, err := a.path(c.PIDFile)
			if err != nil {
				return "", -1, err
			}
			if err := os.WriteFile(p, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
				return "", -1, err
			}
		}
		go cmd.Wait() // reap it if it ends before we do
		return fmt.Sprintf("started in background (pid %d)", cmd.Process.Pid), 0, nil
	}
	out, runErr := cmd.CombinedOutput()
	code = 0
	if runErr != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		if !c.AllowFail {
			return string(out), code, fmt.Errorf("command %q failed: %v\n%s", strings.Join(c.Argv, " "), runErr, out)
		}
	}
	return string(out), code, nil
}

// shellWords renders argv the way an agent's shell tool would show it.
func shellWords(argv []string) string {
	parts := make([]string, len(argv))
	for i, s := range argv {
		if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			parts[i] = s
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// emit prints one JSON line on stdout in a single write.
func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the fake's own values always marshal
	}
	os.Stdout.Write(append(b, '\n'))
}

func emitRaw(line string) {
	os.Stdout.Write([]byte(line + "\n"))
}
