package gitx

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
)

// The goal-tree runner's git operations: checkpoint commits, the run's
// branch, and reading a file as committed.

// CommitAll stages every change in the work tree (git add -A, so deletions
// and untracked files too, minus what .gitignore excludes) and commits it
// with message. Commit hooks are skipped (--no-verify): these are the
// runner's checkpoint commits, and its guard is the quality gate. It
// returns the new HEAD.
func (r *Repo) CommitAll(ctx context.Context, message string) (Commit, error) {
	if _, err := r.Run(ctx, "add", "-A"); err != nil {
		return Commit{}, err
	}
	if _, err := r.Run(ctx, "commit", "-q", "--no-verify", "--allow-empty", "-m", message); err != nil {
		return Commit{}, err
	}
	return r.Head(ctx)
}

// CommitPaths stages and commits only the given paths (and everything
// under them), leaving other changes, staged or not, alone.
func (r *Repo) CommitPaths(ctx context.Context, message string, paths ...string) (Commit, error) {
	args := append([]string{"add", "-A", "--"}, paths...)
	if _, err := r.Run(ctx, args...); err != nil {
		return Commit{}, err
	}
	args = append([]string{"commit", "-q", "--no-verify", "--allow-empty", "-m", message, "--"}, paths...)
	if _, err := r.Run(ctx, args...); err != nil {
		return Commit{}, err
	}
	return r.Head(ctx)
}

// LocalBranchExists reports whether refs/heads/name exists.
func (r *Repo) LocalBranchExists(ctx context.Context, name string) (bool, error) {
	_, err := r.Run(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+name)
	var ge *Error
	if errors.As(err, &ge) {
		var ee *exec.ExitError
		if errors.As(ge.Err, &ee) && ee.ExitCode() == 1 {
			return false, nil
		}
	}
	return err == nil, err
}

// SwitchNewBranch creates branch name at HEAD and switches to it, carrying
// uncommitted changes along (git switch -c).
func (r *Repo) SwitchNewBranch(ctx context.Context, name string) error {
	_, err := r.Run(ctx, "switch", "-q", "-c", name)
	return err
}

// FileAtHead returns the content of path (relative to Dir) as committed
// at HEAD, and false when HEAD does not have it (or there is no HEAD).
func (r *Repo) FileAtHead(ctx context.Context, path string) ([]byte, bool, error) {
	path = "./" + filepath.ToSlash(path)
	if _, err := r.Run(ctx, "cat-file", "-e", "HEAD:"+path); err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			return nil, false, nil
		}
		return nil, false, err
	}
	out, err := r.Run(ctx, "cat-file", "blob", "HEAD:"+path)
	if err != nil {
		return nil, false, err
	}
	return []byte(out), true, nil
}
