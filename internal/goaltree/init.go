package goaltree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/gitx"
)

// RootID is the id of a tree's root node.
const RootID = "root"

// branchPrefix starts the name of the branch `baton run init` creates.
const branchPrefix = "runner/"

// InitOptions say how to scaffold a run.
type InitOptions struct {
	Goal   *GoalFile
	RunID  string // overrides the goal file's id
	Config Config
	// NoBranch keeps the current branch instead of creating runner/<id>.
	NoBranch bool
	// Force replaces an existing run's state.
	Force bool
	Now   time.Time
}

// InitResult says what Init did.
type InitResult struct {
	RunID  string
	Branch string // the run's branch; "" outside git
	Git    bool   // the project is a git work tree
	Commit *gitx.Commit
}

// Init scaffolds .agent/context/runner/: state/tree.json (the root node
// from the goal file), run_state.json, config.toml, assumptions.md,
// questions.md, and a .gitignore for context/ and iterations/. In a git
// work tree it first creates and switches to branch runner/<id> (unless
// NoBranch, or HEAD is already on it), then commits the store, so the
// first step starts from a clean tree on the run's own branch.
func Init(ctx context.Context, l Layout, o InitOptions) (*InitResult, error) {
	unlock, err := l.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(l.State(treeFile)); err == nil && !o.Force {
		st, _ := l.LoadRunState()
		name := ""
		if st != nil {
			name = " (run " + st.RunID + ")"
		}
		return nil, baton.Errorf(baton.Conflict, "a goal-tree run already exists in %s%s: continue it with `baton run loop`, or start over with --force", l.rel(l.Dir()), name)
	}
	id := o.RunID
	if id == "" {
		id = o.Goal.ID
	}
	if id == "" {
		id = baton.Slug(o.Goal.Title, "run")
	}
	if err := baton.CheckID("run", id); err != nil {
		return nil, err
	}
	root := &Node{
		ID: RootID, Title: o.Goal.Title, Goal: o.Goal.Goal, Acceptance: o.Goal.Acceptance,
		Next: o.Goal.Next, MaxAttempts: o.Config.MaxAttempts, Children: []*Node{},
	}
	if root.Next == "" {
		root.Next = nextDecompose
	}
	if root.Acceptance == nil {
		root.Acceptance = []string{}
	}
	if err := root.Validate(); err != nil {
		return nil, err
	}
	res := &InitResult{RunID: id}
	repo := gitx.Open(l.Root)
	res.Git = repo.IsRepo(ctx)
	if res.Git {
		branch, err := repo.Branch(ctx)
		if err != nil {
			return nil, gitError(err, "read the current branch")
		}
		want := branchPrefix + id
		if !o.NoBranch && branch != want {
			exists, err := repo.LocalBranchExists(ctx, want)
			if err != nil {
				return nil, gitError(err, "check branch %s", want)
			}
			if exists {
				return nil, baton.Errorf(baton.Conflict, "branch %s already exists: switch to it and run init again, pick another run id with --id, or keep the current branch with --no-branch", want)
			}
			if err := repo.SwitchNewBranch(ctx, want); err != nil {
				return nil, gitError(err, "create branch %s", want)
			}
			branch = want
		}
		res.Branch = branch
	}

	st := &RunState{SchemaVersion: runStateVersion, RunID: id, Branch: res.Branch, CreatedAt: o.Now.UTC().Truncate(time.Second), NextIter: 1}
	for _, d := range []string{l.State(""), l.Context(""), filepath.Dir(l.Iteration(id, 1))} {
		if err := l.mkdirAll(d); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	files := []struct {
		path    string
		data    []byte
		replace bool // written even when present (with Force)
	}{
		{l.Gitignore(), []byte(gitignore), true},
		{l.State(ConfigFile), encodeConfig(o.Config), true},
		{l.State(treeFile), encode(root), true},
		{l.State(RunStateFile), encodeJSON(st), true},
		{l.State(assumptionsFile), []byte(assumptionsTemplate), false},
		{l.State(questionsFile), []byte(questionsTemplate), false},
	}
	for _, f := range files {
		if !f.replace {
			if _, err := os.Stat(f.path); err == nil {
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		if err := l.writeFile(f.path, f.data); err != nil {
			return nil, err
		}
	}
	if res.Git {
		c, err := repo.CommitPaths(ctx, fmt.Sprintf("baton run %s: init", id), fsstore.Dir)
		if err != nil {
			return nil, gitError(err, "commit the run's files")
		}
		res.Commit = &c
	}
	return res, nil
}

// gitError wraps a git failure: Unavailable, saying what the runner was
// doing.
func gitError(err error, format string, args ...any) error {
	if baton.ErrorCode(err) == baton.Canceled {
		return err
	}
	return baton.WrapError(baton.Unavailable, err, "git: "+format, args...)
}
