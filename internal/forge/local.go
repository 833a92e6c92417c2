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
func (Local) Remote(d *baton.Delivery) (string, []string) { return d.Repository, nil }

// OpenWork implements Forge: the branch itself is the work.
func (Local) OpenWork(_ context.Context, d *baton.Delivery, base, _, _ string) (baton.Ref, error) {
	return baton.Ref{Role: baton.RoleWork, Type: "branch", Label: d.WorkBranch() + " (into " + base + ")"}, nil
}

// PostReview implements Forge: the note baton keeps is the review.
func (Local) PostReview(_ context.Context, _ *baton.Delivery, v Review, noteURL string) (baton.Ref, error) {
	label := "review: " + string(v.Verdict)
	if v.Reject {
		label = "rejected by " + v.Author
	}
	return baton.Ref{Role: baton.RoleReview, Type: "review_note", Label: label, URL: noteURL}, nil
}

// Checks implements Forge: a local repository has no CI.
func (Local) Checks(context.Context, *baton.Delivery, string, CheckWait) (CheckResult, bool, error) {
	return CheckResult{}, false, nil
}

// PlanPath is where plan commits the plan on the work branch.
const PlanPath = "docs/plan.md"

// Merge implements Forge. It merges sha into base in a worktree of the
// cache, leaving PlanPath as base has it (the plan is working context: it
// stays in the work branch's history, and two deliveries in flight never
// conflict on it; with the rebase method the branch lands as it is), then
// lands the result on the source repository's base branch:
// by a fast-forward push when no work tree has base checked out, else by
// a fast-forward merge in that work tree, which git refuses (changing
// nothing) when it would overwrite the user's uncommitted changes.
func (Local) Merge(ctx context.Context, d *baton.Delivery, ws *Workspaces, base, sha string, method baton.MergeMethod) (baton.Ref, error) {
	unlock, err := ws.Lock(ctx, d.Repository)
	if err != nil {
		return baton.Ref{}, err
	}
	defer unlock()
	cache, err := ws.Cache(ctx, d, Local{})
	if err != nil {
		return baton.Ref{}, err
	}
	path := filepath.Join(ws.Dir, "worktrees", d.ID, "deploy")
	if _, err := os.Stat(path); err == nil {
		_ = cache.WorktreeRemove(ctx, path)
	}
	wt, err := cache.WorktreeAddDetached(ctx, path, "origin/"+base)
	if err != nil {
		return baton.Ref{}, baton.WrapError(baton.Unavailable, err, "check out %s to merge into", base)
	}
	defer cache.WorktreeRemove(context.WithoutCancel(ctx), path) // still under the lock

	msg := MergeMessage(d)
	var merged string
	switch method {
	case "", baton.MergeSquash:
		merged, err = wt.MergeSquash(ctx, sha, msg, PlanPath)
	case baton.MergeCommit:
		merged, err = wt.MergeCommit(ctx, sha, msg, PlanPath)
	case baton.MergeRebase:
		if _, err = wt.Run(ctx, "checkout", "--quiet", "--detach", sha); err == nil {
			merged, err = wt.Rebase(ctx, "origin/"+base)
		}
	default:
		err = baton.Errorf(baton.Invalid, "unknown merge method %q", method)
	}
	if err != nil {
		return baton.Ref{}, baton.WrapError(baton.ErrorCode(err), err, "merge %s into %s: reject the delivery to implement to bring the branch up to date with %s", d.WorkBranch(), base, base)
	}

	src := gitx.Open(d.Repository)
	src.Env = cache.Env
	wts, err := src.Worktrees(ctx)
	if err != nil {
		return baton.Ref{}, baton.WrapError(baton.Unavailable, err, "list the work trees of %s", d.Repository)
	}
	landed := false
	for _, t := range wts {
		if t.Bare || t.Branch != base {
			continue
		}
		// base is checked out: fast-forward it there, through a temporary
		// ref, so git itself protects the user's uncommitted changes.
		tmp := "refs/baton/deploy/" + d.ID
		if err := cache.Push(ctx, "origin", "+"+merged+":"+tmp); err != nil {
			return baton.Ref{}, baton.WrapError(baton.Unavailable, err, "send the merge to %s", d.Repository)
		}
		user := &gitx.Repo{Dir: t.Path, Env: cache.Env}
		err := user.MergeFFOnly(ctx, tmp)
		_, _ = src.Run(ctx, "update-ref", "-d", tmp)
		if err != nil {
			return baton.Ref{}, baton.WrapError(baton.Conflict, err,
				"%s is checked out in %s and cannot be fast-forwarded to the merge without touching uncommitted changes (or it moved): commit or stash them there, then `baton delivery retry %s`", base, t.Path, d.ID)
		}
		landed = true
		break
	}
	if !landed {
		if err := cache.Push(ctx, "origin", merged+":refs/heads/"+base); err != nil {
			var ge *gitx.Error
			if errors.As(err, &ge) {
				return baton.Ref{}, baton.WrapError(baton.Conflict, err, "%s moved while merging: `baton delivery retry %s`", base, d.ID)
			}
			return baton.Ref{}, err
		}
	}
	short := merged
	if len(short) > 12 {
		short = short[:12]
	}
	return baton.Ref{Role: baton.RoleWork, Type: "commit", Label: fmt.Sprintf("merged into %s as %s (%s)", base, short, methodName(method))}, nil
}

func methodName(m baton.MergeMethod) string {
	if m == "" {
		return string(baton.MergeSquash)
	}
	return string(m)
}

// MergeMessage is the commit message of a delivery's merge.
func MergeMessage(d *baton.Delivery) string {
	title, _, _ := strings.Cut(strings.TrimSpace(d.Summary), "\n")
	return fmt.Sprintf("%s\n\nDelivered by baton (delivery %s, branch %s).", title, d.ID, d.WorkBranch())
}
