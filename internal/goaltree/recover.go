package goaltree

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/gitx"
)

// Git safety and crash recovery. Every iteration ends in a commit, so the
// work tree is clean between iterations; a dirty one means either that a
// person changed something (the step refuses and says so) or that the
// process running an iteration died. In the second case run_state.json
// tells: in_flight is set (it died during the iteration) or run_state is
// newer than HEAD's (it died between recording and committing). The step
// then finishes the record and commits the work tree as it is: the
// agent's partial work is kept, on the run's branch, where `git revert` or
// `git reset --hard HEAD~1` can drop it; no attempt is spent.

// checkBranch refuses a work tree that is not git, a detached HEAD, a
// branch other than the run's, and main or master unless allowed. It
// returns the current branch.
func (r *Runner) checkBranch(ctx context.Context, repo *gitx.Repo, st *RunState) (string, error) {
	if !repo.IsRepo(ctx) {
		return "", baton.Errorf(baton.Conflict, "%s is not in a git work tree: the runner commits every iteration; run `git init` and commit first", r.Layout.Root)
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return "", gitError(err, "read the current branch")
	}
	switch {
	case branch == "":
		return "", baton.Errorf(baton.Conflict, "HEAD is detached: switch to the run's branch (git switch %s)", firstNonEmpty(st.Branch, branchPrefix+st.RunID))
	case st.Branch != "" && branch != st.Branch:
		return "", baton.Errorf(baton.Conflict, "run %s works on branch %s but HEAD is on %s: git switch %s (or set \"branch\" in %s)", st.RunID, st.Branch, branch, st.Branch, r.Layout.rel(r.Layout.State(RunStateFile)))
	case (branch == "main" || branch == "master") && !r.AllowMain:
		return "", baton.Errorf(baton.Conflict, "refusing to run on %s: the runner commits every iteration; work on a branch (baton run init creates %s%s) or pass --allow-main", branch, branchPrefix, st.RunID)
	}
	return branch, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// checkBranchAfterAgent refuses to record an iteration when the agent
// moved HEAD off the branch: the commit would land elsewhere. in_flight
// stays set, so once HEAD is back the next step recovers the iteration.
func (it *iteration) checkBranchAfterAgent(ctx context.Context) error {
	branch, err := it.repo.Branch(ctx)
	if err != nil {
		return gitError(err, "read the current branch")
	}
	if branch != it.branch {
		return baton.Errorf(baton.Unavailable, "the agent left HEAD on %q instead of %s; nothing was recorded: switch back (git switch %s) and run `baton run step`, which records iteration %d as interrupted", branch, it.branch, it.branch, it.n)
	}
	return nil
}

// ensureGitignore rewrites the runner's .gitignore when it is missing or
// changed, so context/ and iterations/ never reach a commit.
func (l Layout) ensureGitignore() error {
	b, err := l.readFile(l.Gitignore())
	if err == nil && bytes.Equal(b, []byte(gitignore)) {
		return nil
	}
	return l.writeFile(l.Gitignore(), []byte(gitignore))
}

// checkClean refuses uncommitted changes outside the runner's own
// ephemeral files: the iteration's commit must hold only the agent's work
// and the runner's state.
func (r *Runner) checkClean(ctx context.Context, repo *gitx.Repo) error {
	l := r.Layout
	if err := l.ensureGitignore(); err != nil {
		return err
	}
	changes, err := repo.Status(ctx)
	if err != nil {
		return gitError(err, "read the work tree's status")
	}
	top, err := repo.TopLevel(ctx)
	if err != nil {
		return gitError(err, "find the work tree's root")
	}
	runnerDir, err := relToTop(top, l.Dir())
	if err != nil {
		return err
	}
	var dirty []string
	for _, c := range changes {
		p := c.Path
		if strings.HasPrefix(p, runnerDir+"/"+contextDir+"/") || strings.HasPrefix(p, runnerDir+"/"+IterationsDir+"/") ||
			p == runnerDir+"/.gitignore" || (strings.HasPrefix(p, runnerDir+"/") && strings.HasSuffix(p, ".lock")) {
			continue
		}
		dirty = append(dirty, p)
	}
	if len(dirty) == 0 {
		return nil
	}
	list := dirty
	if len(list) > 5 {
		list = append(list[:5:5], fmt.Sprintf("and %d more", len(dirty)-5))
	}
	return baton.Errorf(baton.Conflict, "the work tree has uncommitted changes (%s): commit or stash them first; the runner commits every iteration and must not mix your changes into the agent's", strings.Join(list, ", "))
}

// relToTop returns path relative to the work tree root top, with forward
// slashes, resolving symlinks on both sides.
func relToTop(top, path string) (string, error) {
	t, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", top, err)
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	rel, err := filepath.Rel(t, p)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// recoverInterrupted records the iteration that was in flight when its
// process died as a runner error: the tree is restored from the
// iteration's tree.before.json (an agent that edited it and then died
// does not get its edit), no attempt is spent, nothing is fed back, and
// the work tree is committed as it is.
func (r *Runner) recoverInterrupted(ctx context.Context, repo *gitx.Repo, st *RunState) (string, error) {
	l, f := r.Layout, st.InFlight
	dir := l.Iteration(st.RunID, f.Iter)
	tree, err := r.treeBefore(ctx, repo, dir)
	if err != nil {
		return "", err
	}
	if err := l.SaveTree(tree); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("interrupted: the process running iteration %d stopped before recording it (killed, crashed or the machine went down); the work tree was committed as it was and no attempt was spent", f.Iter)
	if err := l.writeFile(filepath.Join(dir, runnerErrorLog), []byte(msg+"\n")); err != nil {
		return "", fmt.Errorf("write %s: %w", runnerErrorLog, err)
	}
	rec := &IterationRecord{Iter: f.Iter, Node: f.Node, Status: statusRunnerError, Guard: guardSkipped, Attempt: f.Attempt, Error: "interrupted", At: r.now().UTC().Truncate(time.Second)}
	st.Last, st.InFlight, st.NextIter = rec, nil, f.Iter+1
	st.Totals.Iterations++
	if err := l.SaveRunState(st); err != nil {
		return "", err
	}
	if err := l.ensureGitignore(); err != nil {
		return "", err
	}
	c, err := repo.CommitAll(ctx, commitMessage(st.RunID, rec))
	if err != nil {
		return "", gitError(err, "commit the interrupted iteration %d (it is recorded; the next step commits it)", f.Iter)
	}
	meta := &Meta{SchemaVersion: 1, RunID: st.RunID, Iter: f.Iter, Node: f.Node, Attempt: f.Attempt, Status: rec.Status, Guard: rec.Guard, RunnerError: msg, StartedAt: f.StartedAt, FinishedAt: rec.At, Commit: c.SHA}
	if err := l.writeFile(filepath.Join(dir, MetaLog), encodeJSON(meta)); err != nil {
		return "", err
	}
	note := fmt.Sprintf("recovered iteration %d (node %s): it was interrupted; committed the work tree as %s, no attempt spent", f.Iter, f.Node, c.Short())
	r.progress("baton run %s iter=%d node=%s status=%s guard=%s recovered=interrupted commit=%s", st.RunID, f.Iter, f.Node, rec.Status, rec.Guard, c.Short())
	return note, nil
}

// treeBefore returns the tree as it was when the iteration in dir
// started: its tree.before.json, else the tree committed at HEAD.
func (r *Runner) treeBefore(ctx context.Context, repo *gitx.Repo, dir string) (*Node, error) {
	l := r.Layout
	if b, err := l.readFile(filepath.Join(dir, treeBeforeLog)); err == nil {
		if t, err := decode(b); err == nil {
			return t, nil
		}
	}
	b, ok, err := repo.FileAtHead(ctx, l.rel(l.State(treeFile)))
	if err != nil {
		return nil, gitError(err, "read %s at HEAD", treeFile)
	}
	if !ok {
		return nil, baton.Errorf(baton.Invalid, "cannot recover the interrupted iteration: %s is gone and HEAD has no %s; restore the tree by hand, then clear in_flight in %s", filepath.Join(dir, treeBeforeLog), treeFile, l.rel(l.State(RunStateFile)))
	}
	t, err := decode(b)
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "cannot recover the interrupted iteration: the tree at HEAD is invalid")
	}
	return t, nil
}

// recoverUncommitted commits an iteration that was recorded in
// run_state.json but whose commit never happened (a crash between the
// two, or a git failure).
func (r *Runner) recoverUncommitted(ctx context.Context, repo *gitx.Repo, st *RunState) (string, error) {
	if st.Last == nil {
		return "", nil
	}
	l := r.Layout
	b, ok, err := repo.FileAtHead(ctx, l.rel(l.State(RunStateFile)))
	if err != nil {
		return "", gitError(err, "read %s at HEAD", RunStateFile)
	}
	if ok {
		var head RunState
		if json.Unmarshal(b, &head) == nil && head.NextIter >= st.NextIter {
			return "", nil
		}
	}
	if err := l.ensureGitignore(); err != nil {
		return "", err
	}
	c, err := repo.CommitAll(ctx, commitMessage(st.RunID, st.Last))
	if err != nil {
		return "", gitError(err, "commit iteration %d, which was recorded but not committed", st.Last.Iter)
	}
	r.progress("baton run %s iter=%d node=%s recovered=uncommitted commit=%s", st.RunID, st.Last.Iter, st.Last.Node, c.Short())
	return fmt.Sprintf("committed iteration %d (node %s), which was recorded but not committed, as %s", st.Last.Iter, st.Last.Node, c.Short()), nil
}
