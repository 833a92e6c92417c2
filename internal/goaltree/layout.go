package goaltree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/safefile"
)

// dir is the runner's directory, relative to the project root.
const dir = fsstore.Dir + "/runner"

// Files under the runner's directory.
const (
	stateDir      = "state"
	contextDir    = "context"    // ephemeral, cleared every iteration, gitignored
	IterationsDir = "iterations" // per-iteration logs, gitignored

	treeFile        = "tree.json"
	RunStateFile    = "run_state.json"
	ConfigFile      = "config.toml"
	assumptionsFile = "assumptions.md"
	questionsFile   = "questions.md"

	goalContext    = "goal.md"
	historyContext = "history.md"
	failureContext = "failure.md"
)

// Files in an iteration's log directory, next to those agentrun writes
// there (prompt.txt, argv.json, events.jsonl or stdout.log, stderr.log).
const (
	MetaLog        = "meta.json"
	outputLog      = "output.json"
	GuardLog       = "guard.log"
	failureLog     = "failure.log"
	agentErrorLog  = "agent_error.log"
	runnerErrorLog = "runner_error.log"
	treeBeforeLog  = "tree.before.json"
	treeAfterLog   = "tree.after.json"
)

// gitignore keeps the ephemeral and per-machine files out of commits.
const gitignore = "# baton goal-tree runner: ephemeral context and logs stay local\n/context/\n/iterations/\n*.lock\n"

// Layout locates the runner's files for one project root.
type Layout struct {
	Root string // the project root
}

// Dir returns <root>/.agent/context/runner.
func (l Layout) Dir() string { return filepath.Join(l.Root, filepath.FromSlash(dir)) }

// State returns the path of a file in state/.
func (l Layout) State(name string) string { return filepath.Join(l.Dir(), stateDir, name) }

// Context returns the path of a file in context/.
func (l Layout) Context(name string) string { return filepath.Join(l.Dir(), contextDir, name) }

// Iteration returns the log directory of iteration iter of run.
func (l Layout) Iteration(run string, iter int) string {
	return filepath.Join(l.Dir(), IterationsDir, run, strconv.Itoa(iter))
}

// Gitignore returns the path of the runner's .gitignore.
func (l Layout) Gitignore() string { return filepath.Join(l.Dir(), ".gitignore") }

// lockPath is the file locked while a command changes the runner's state.
func (l Layout) lockPath() string { return l.State("run") }

// rel returns path relative to the project root, with forward slashes, for
// messages and prompts.
func (l Layout) rel(path string) string {
	r, err := filepath.Rel(l.Root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// The runner's own files live in the tree its agent writes, so the agent
// could turn any directory on their way into a link to elsewhere. They
// are opened beneath the project root, following no link and never
// blocking (internal/safefile), like the delivery's files in a worktree.

// maxRunnerFile bounds what the runner reads of one of its files.
const maxRunnerFile = 64 << 20

// beneath returns path relative to the project root; a path outside it
// stays absolute, which safefile refuses.
func (l Layout) beneath(path string) string {
	r, err := filepath.Rel(l.Root, path)
	if err != nil {
		return path
	}
	return r
}

// readFile reads a runner file of at most maxRunnerFile bytes.
func (l Layout) readFile(path string) ([]byte, error) {
	return safefile.ReadBeneath(l.Root, l.beneath(path), maxRunnerFile)
}

// writeFile replaces a runner file atomically, making its directories.
func (l Layout) writeFile(path string, data []byte) error {
	return safefile.WriteBeneath(l.Root, l.beneath(path), data, 0o644)
}

// openFile opens a runner file with flag (os.O_*).
func (l Layout) openFile(path string, flag int) (*os.File, error) {
	return safefile.OpenBeneath(l.Root, l.beneath(path), flag, 0o644)
}

// mkdirAll makes a runner directory and those on its way.
func (l Layout) mkdirAll(path string) error {
	d, err := safefile.OpenDirBeneath(l.Root, l.beneath(path), true, 0o755)
	if err != nil {
		return err
	}
	return d.Close()
}

// removeAll removes a runner directory and all in it; a link in it is
// removed, not followed. A missing one is no error.
func (l Layout) removeAll(path string) error {
	parent, name := filepath.Split(l.beneath(path))
	d, err := safefile.OpenDirBeneath(l.Root, parent, false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(name)
}
