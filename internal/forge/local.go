package forge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/gitx"
)

// Local is a git repository on this machine. The work ref is the work
// branch, pushed to the source repository; review verdicts are notes kept
// by baton (their ref is the note file's URL); there is no CI; deploy
// merges into the base branch of the source repository.
type Local struct{}

var _ Forge = Local{}

// Remote implements Forge: the source repository's path.
func (Local) Remote(_ context.Context, d *baton.Delivery) (string, []string, error) {
	return d.Repository, nil, nil
}

// OpenWork implements Forge: the branch itself is the work.
func (Local) OpenWork(_ context.Context, d *baton.Delivery, base, _, _ string) (baton.Ref, error) {
	return baton.Ref{Role: baton.RoleWork, Type: "branch", Label: d.WorkBranch() + " (into " + base + ")"}, nil
}

// PostReview implements Forge: the note baton keeps is the review.
// Its line notes are read there too.
func (Local) PostReview(_ context.Context, _ *baton.Delivery, v Review, noteURL string) ([]baton.Ref, error) {
	return append([]baton.Ref{{Role: baton.RoleReview, Type: "review_note", Label: v.label(), URL: noteURL}}, LineRefs(v, noteURL, nil)...), nil
}

// Checks implements Forge: a local repository has no CI.
func (Local) Checks(context.Context, *baton.Delivery, string, CheckWait) (CheckResult, bool, error) {
	return CheckResult{}, false, nil
}

// PlanPath is where plan commits the plan on the work branch.
const PlanPath = "docs/plan.md"

// Merge implements Forge. It merges sha into base in the cache without a
// checkout (the rebase method replays the branch in the delivery's
// worktree), leaving PlanPath as base has it (the plan is working
// context: it stays in the work branch's history, and two deliveries in
// flight never conflict on it; with the rebase method the branch lands as
// it is), then lands the result on the source repository's base branch:
// by a fast-forward push when no work tree has base checked out, else by
// a fast-forward merge in that work tree, which git refuses (changing
// nothing) when it would overwrite the user's uncommitted changes.
//
// The merge is computed without a lock. Landing takes a landing lock:
// the source repository's own when it is on this machine (so workers
// with different data directories land one at a time too), else the
// cache's. If the base moved meanwhile, or moves under the landing
// (the user committed), the merge is made again on its new head.
func (l Local) Merge(ctx context.Context, d *baton.Delivery, ws *Workspaces, base, sha string, method baton.MergeMethod) (baton.Ref, error) {
	c, err := ws.open(ctx, d, l)
	if err != nil {
		return baton.Ref{}, err
	}
	head, err := ws.syncBase(ctx, c, d, base)
	if err != nil {
		return baton.Ref{}, err
	}
	merged, err := ws.merge(ctx, c, d, head, sha, method)
	if err != nil {
		return baton.Ref{}, mergeError(d, base, err)
	}
	unlock, err := ws.landLock(ctx, c)
	if err != nil {
		return baton.Ref{}, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		if now, err := ws.syncBase(ctx, c, d, base); err != nil {
			return baton.Ref{}, err
		} else if now != head {
			head = now
			if merged, err = ws.merge(ctx, c, d, head, sha, method); err != nil {
				return baton.Ref{}, mergeError(d, base, err)
			}
		}
		err := ws.land(ctx, d, c, base, head, sha, merged)
		if err == nil {
			break
		}
		if now, _, rerr := c.sourceRef(ctx, branchRef(base)); attempt >= maxLandAttempts || rerr != nil || now == head {
			return baton.Ref{}, err
		}
	}
	// The cache follows the source; if another worker moved the ref
	// first, the next sync sets it.
	_ = c.UpdateRefs(ctx, gitx.RefUpdate{Name: trackingRef(base), New: merged, Old: head})
	short := merged[:min(12, len(merged))]
	return baton.Ref{Role: baton.RoleWork, Type: "commit", Label: fmt.Sprintf("merged into %s as %s (%s)", base, short, methodName(method))}, nil
}

// maxLandAttempts bounds how often a merge is made again because its base
// moved under it: each time, someone else's change landed.
const maxLandAttempts = 5

func mergeError(d *baton.Delivery, base string, err error) error {
	return baton.WrapError(baton.ErrorCode(err), err, "merge %s into %s: reject the delivery to implement to bring the branch up to date with %s", d.WorkBranch(), base, base)
}

// merge makes the commit that lands sha on head with method.
func (w *Workspaces) merge(ctx context.Context, c *cache, d *baton.Delivery, head, sha string, method baton.MergeMethod) (string, error) {
	switch method {
	case "", baton.MergeSquash, baton.MergeCommit:
	case baton.MergeRebase:
		return w.rebase(ctx, c, d, head, sha)
	default:
		return "", baton.Errorf(baton.Invalid, "unknown merge method %q", method)
	}
	tree, err := c.MergeTree(ctx, head, sha)
	if err != nil {
		return "", err
	}
	if tree, err = c.ReplacePaths(ctx, tree, head, PlanPath); err != nil {
		return "", err
	}
	if before, err := w.treeOf(ctx, c.Repo, head); err != nil || before == tree {
		if err == nil {
			err = baton.Errorf(baton.Conflict, "%s has no changes to merge", d.WorkBranch())
		}
		return "", err
	}
	parents := []string{head}
	if method == baton.MergeCommit {
		parents = append(parents, sha)
	}
	merged, err := c.CommitTree(ctx, tree, MergeMessage(d), parents...)
	if err == nil {
		w.trees.made(merged, tree, parents...)
	}
	return merged, err
}

// land moves the source's base branch from head to merged, a descendant
// of it: in the work tree that has base checked out, if one has, else as
// a push that git refuses unless base is still at head. sha is the work
// branch's head, which the source has.
func (w *Workspaces) land(ctx context.Context, d *baton.Delivery, c *cache, base, head, sha, merged string) error {
	path, err := checkedOut(ctx, c, base)
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "list the work trees of %s", d.Repository)
	}
	if path == "" {
		if err := w.send(ctx, c, c.Repo, merged, branchRef(base), head, head, sha); err != nil {
			var ge *gitx.Error
			if errors.As(err, &ge) {
				return baton.WrapError(baton.Conflict, err, "%s moved while merging: `baton delivery retry %s`", base, d.ID)
			}
			return err
		}
		return nil
	}
	// base is checked out: give the source the merge's objects, then
	// fast-forward base there, so git itself protects the user's changes.
	src := gitx.Open(c.url)
	tmp := ""
	err = errors.New("not a local repository")
	if c.src != nil {
		err = c.CopyObjects(ctx, filepath.Join(c.src.CommonDir, "objects"), merged, head, sha)
	}
	if err != nil {
		// Through a push to a temporary ref instead.
		tmp = "refs/baton/deploy/" + d.ID
		if err := c.Push(ctx, c.url, "+"+merged+":"+tmp); err != nil {
			return baton.WrapError(baton.Unavailable, err, "send the merge to %s", d.Repository)
		}
	}
	user := &gitx.Repo{Dir: path, Env: c.Env}
	err = user.MergeFFOnly(ctx, merged)
	if tmp != "" {
		_ = src.UpdateRefs(context.WithoutCancel(ctx), gitx.RefUpdate{Name: tmp})
	}
	if err != nil {
		return baton.WrapError(baton.Conflict, err,
			"%s is checked out in %s and cannot be fast-forwarded to the merge without touching uncommitted changes (or it moved): commit or stash them there, then `baton delivery retry %s`", base, path, d.ID)
	}
	return nil
}

// checkedOut returns the work tree of the source that has branch checked
// out, or "": read from the repository's files (its HEAD, and each linked
// work tree's), else from `git worktree list`.
func checkedOut(ctx context.Context, c *cache, branch string) (string, error) {
	if c.src != nil {
		if path, err := checkedOutFiles(c.url, *c.src, branch); err == nil {
			return path, nil
		}
	}
	wts, err := gitx.Open(c.url).Worktrees(ctx)
	if err != nil {
		return "", err
	}
	for _, t := range wts {
		if !t.Bare && t.Branch == branch {
			return t.Path, nil
		}
	}
	return "", nil
}

// checkedOutFiles is checkedOut for a repository whose main work tree is
// repo (or that is bare), from the files git keeps for its work trees.
func checkedOutFiles(repo string, l gitx.Layout, branch string) (string, error) {
	bare := sameDir(l.GitDir, repo)
	if !bare && !sameDir(l.GitDir, filepath.Join(repo, ".git")) {
		return "", gitx.ErrRefFormat // repo is itself a linked work tree
	}
	if !bare {
		b, _, err := l.Head()
		if err != nil {
			return "", err
		}
		if b == branch {
			return repo, nil
		}
	}
	admin := filepath.Join(l.CommonDir, "worktrees")
	entries, err := os.ReadDir(admin)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		wl := gitx.Layout{GitDir: filepath.Join(admin, e.Name()), CommonDir: l.CommonDir}
		b, _, err := wl.Head()
		if err != nil {
			return "", err
		}
		if b != branch {
			continue
		}
		gd, err := os.ReadFile(filepath.Join(wl.GitDir, "gitdir"))
		if err != nil {
			return "", err
		}
		return filepath.Dir(strings.TrimSpace(string(gd))), nil
	}
	return "", nil
}

func methodName(m baton.MergeMethod) string {
	if m == "" {
		return string(baton.MergeSquash)
	}
	return string(m)
}

// MergeMessage is the commit message of a delivery's merge.
func MergeMessage(d *baton.Delivery) string {
	return fmt.Sprintf("%s\n\nDelivered by baton (delivery %s, branch %s).", d.Title(), d.ID, d.WorkBranch())
}
