package goaltree

import (
	"path/filepath"
	"strconv"

	"github.com/baton-agent/baton/internal/fsstore"
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
