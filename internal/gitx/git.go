// Package gitx runs the git CLI with argument lists (never a shell) and
// parses what baton needs from it: repository state for packets, and the
// branch, commit and worktree operations of the runner and the pipeline.
package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/reap"
)

// Repo is a git work tree.
type Repo struct {
	Dir string
	// Env is added to git's environment (e.g. GIT_AUTHOR_NAME in tests).
	Env []string
	// Ident, when set, remembers the identity commits are made with, so
	// git's configuration is read once rather than once per commit.
	Ident *Identity
	// WholeStatusFiles, when set, replaces the package's WholeStatusFiles
	// for this repository's snapshots.
	WholeStatusFiles int
	// Files, when set, says where the repository's files are, and git is
	// told so (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE) instead of finding
	// them from Dir. A work tree an agent wrote in can then not point
	// baton's own git at a repository of the agent's making (through its
	// .git file, or its git directory's commondir), whose configuration
	// would run commands outside the agent's sandbox.
	Files *Layout
	// BaseEnv, when set, is git's environment before Env, instead of
	// baton's own: a work tree an agent wrote gets one without secrets.
	BaseEnv []string
	// Start, when set, starts each git process in place of cmd.Start, and
	// release is called once it was waited for: the sandbox's, so that
	// whatever git runs from a work tree an agent wrote (a nested
	// repository's core.fsmonitor, say) reaches what the agent could and
	// nothing more.
	Start func(cmd *exec.Cmd) (release func(), err error)
	// Subjects, when set, remembers the subjects of commits a snapshot
	// found at HEAD: a snapshot at a HEAD it knows starts no `git log`.
	Subjects Subjects
	// OwnRefs, when set, says the repository is one baton made and
	// configured (InitCache: no reflog, no hooks) and whose refs' files
	// only baton and the git it runs write: UpdateRefs then writes them
	// itself where that is what git would do.
	OwnRefs bool
}

// waitDelay bounds how long a git that has exited is waited for while
// something it started still holds its output open.
const waitDelay = 5 * time.Second

// start starts cmd as r says.
func (r *Repo) start(cmd *exec.Cmd) (release func(), err error) {
	cmd.WaitDelay = waitDelay
	if r.Start == nil {
		return func() {}, cmd.Start()
	}
	return r.Start(cmd)
}

// notFound makes a missing git binary Unavailable.
func notFound(err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return baton.WrapError(baton.Unavailable, err, "git is not installed or not on PATH")
	}
	return err
}

// layout is where the repository's files are: Files, else found from Dir.
func (r *Repo) layout() (Layout, error) {
	if r.Files != nil {
		return *r.Files, nil
	}
	return FindLayout(r.Dir)
}

// Open returns the repo at dir. It does no I/O.
func Open(dir string) *Repo { return &Repo{Dir: dir} }

// Error is a failed git command with its stderr.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs git with args in the repo and returns its stdout. A missing git
// binary is Unavailable.
func (r *Repo) Run(ctx context.Context, args ...string) (string, error) {
	return r.RunInput(ctx, "", args...)
}

// command is git with args in the repo, its environment set.
func (r *Repo) command(ctx context.Context, args ...string) *exec.Cmd {
	return r.programCommand(ctx, "git", args...)
}

// programCommand is name with args in the repo, with git's environment
// for it: a shell that runs several git commands as one process.
func (r *Repo) programCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.Dir
	cmd.Env = r.environ()
	return cmd
}

// environ is the environment git runs with in r: BaseEnv (or this
// process's, as a command in r.Dir sees it), no optional locks, Env, and
// the layout's directories when r has its own.
func (r *Repo) environ() []string {
	base := r.BaseEnv
	if base == nil {
		base = (&exec.Cmd{Dir: r.Dir}).Environ()
	}
	// No optional locks: a status run by a hook must not refresh the
	// user's index, whose index.lock would make their own git fail.
	// Writes take the locks they need anyway.
	env := append(slices.Clip(base), "GIT_OPTIONAL_LOCKS=0")
	env = append(env, r.Env...)
	if f := r.Files; f != nil {
		env = append(env, "GIT_DIR="+f.GitDir, "GIT_COMMON_DIR="+f.CommonDir, "GIT_WORK_TREE="+r.Dir)
	}
	return env
}

// RunInput is Run with stdin.
func (r *Repo) RunInput(ctx context.Context, stdin string, args ...string) (string, error) {
	return r.run(r.command(ctx, args...), stdin, args)
}

// runProgram runs name (a shell running git) as Run runs git.
func (r *Repo) runProgram(ctx context.Context, name string, args ...string) (string, error) {
	return r.run(r.programCommand(ctx, name, args...), "", args)
}

// run runs cmd, started as r starts git, and returns its stdout; args
// name it in an error.
func (r *Repo) run(cmd *exec.Cmd, stdin string, args []string) (string, error) {
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	release, err := r.start(cmd)
	if err != nil {
		release()
		return "", notFound(err)
	}
	err = reap.Wait(cmd)
	release()
	if err != nil {
		return out.String(), &Error{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}

// line runs git and returns the first line of its output, trimmed.
func (r *Repo) line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Run(ctx, args...)
	if err != nil {
		return "", err
	}
	l, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(l), nil
}

// IsRepo reports whether Dir is inside a git work tree.
func (r *Repo) IsRepo(ctx context.Context) bool {
	out, err := r.line(ctx, "rev-parse", "--is-inside-work-tree")
	return err == nil && out == "true"
}

// TopLevel returns the root of the work tree.
func (r *Repo) TopLevel(ctx context.Context) (string, error) {
	return r.line(ctx, "rev-parse", "--show-toplevel")
}

// Branch returns the current branch name, or "" on a detached HEAD.
func (r *Repo) Branch(ctx context.Context) (string, error) {
	out, err := r.line(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	var ge *Error
	if errors.As(err, &ge) {
		return "", nil // detached
	}
	return out, err
}

// Commit is one commit's identity.
type Commit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Short returns the first 12 characters of the SHA.
func (c Commit) Short() string {
	if len(c.SHA) > 12 {
		return c.SHA[:12]
	}
	return c.SHA
}

// Head returns HEAD's commit, or NotFound in a repository with no commits.
func (r *Repo) Head(ctx context.Context) (Commit, error) {
	out, err := r.line(ctx, "log", "-1", "--format=%H%x09%s")
	if err != nil {
		return Commit{}, err
	}
	if out == "" {
		return Commit{}, baton.Errorf(baton.NotFound, "the repository has no commits yet")
	}
	sha, subj, _ := strings.Cut(out, "\t")
	return Commit{SHA: sha, Subject: subj}, nil
}

// Change is one path from `git status`: XY status and path.
type Change struct {
	Status string `json:"status"` // porcelain XY, e.g. " M", "??", "A "
	Path   string `json:"path"`
}

// Status lists changed and untracked paths (porcelain v1, -z, so any path
// survives), renames reported under their new name.
func (r *Repo) Status(ctx context.Context) ([]Change, error) {
	out, err := r.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	return parseStatusZ(out), nil
}

// parseStatusZ parses `git status --porcelain=v1 -z` output.
func parseStatusZ(out string) []Change {
	var cs []Change
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		c := Change{Status: f[:2], Path: f[3:]}
		if c.Status[0] == 'R' || c.Status[0] == 'C' {
			i++ // the next field is the rename's source path
		}
		cs = append(cs, c)
	}
	return cs
}

// CommitsBetween counts commits reachable from to but not from from.
func (r *Repo) CommitsBetween(ctx context.Context, from, to string) (int, error) {
	out, err := r.line(ctx, "rev-list", "--count", from+".."+to)
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscanf(out, "%d", &n)
	return n, err
}

// exitCode is the exit status of a git command that ran and failed, or -1.
func exitCode(err error) int {
	var ge *Error
	var ee *exec.ExitError
	if errors.As(err, &ge) && errors.As(ge.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// IsAncestor reports whether commit a is an ancestor of b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.Run(ctx, "merge-base", "--is-ancestor", a, b)
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}
