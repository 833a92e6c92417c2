// Package forge is where a delivery's repository lives, as the phase
// runner sees it: a git remote to fetch from and push to, a place to show
// the work (a draft pull request, or the branch itself), somewhere to post
// review verdicts, CI checks to wait for, and a way to merge.
//
// Two forges implement it: Local (a git repository on this machine: the
// work ref is the branch, reviews are notes kept by baton, there is no CI,
// deploy merges into the source repository without touching the user's
// uncommitted changes) and GitHub (on internal/github: a draft pull
// request, PR reviews, check runs and statuses, merges through the API).
//
// Workspaces keeps one bare cache per repository under the data directory
// and gives each run a fresh worktree of it, so no run clones the
// repository again.
package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/gitx"
)

// Forge is what the phase runner needs from where a repository lives.
type Forge interface {
	// Remote is the git URL (or path) to fetch from and push to, and the
	// environment git needs for it (credentials go here, never in argv).
	Remote(d *baton.Delivery) (url string, env []string)
	// OpenWork shows the pushed work branch for review: a draft pull
	// request on GitHub, the branch itself locally. It returns the work
	// ref.
	OpenWork(ctx context.Context, d *baton.Delivery, base, title, body string) (baton.Ref, error)
	// PostReview publishes a verdict where the next implement run will
	// see it, and returns its review ref. noteURL is where baton keeps its
	// own copy (a file URL); the local forge returns it.
	PostReview(ctx context.Context, d *baton.Delivery, v Review, noteURL string) (baton.Ref, error)
	// Checks waits for the CI of sha (the work branch head) to finish and
	// reports it. ok=false means the forge has no CI at all (local).
	Checks(ctx context.Context, d *baton.Delivery, sha string, wait CheckWait) (res CheckResult, ok bool, err error)
	// Merge lands the work branch (at sha, as verified) on base with
	// method and returns a ref to the result.
	Merge(ctx context.Context, d *baton.Delivery, ws *Workspaces, base, sha string, method baton.MergeMethod) (baton.Ref, error)
}

// Review is a verdict to post.
type Review struct {
	Verdict  baton.Verdict `json:"verdict"`
	Summary  string        `json:"summary"`
	Feedback string        `json:"feedback"`
	// Author is who gave it: "reviewer agent (claude)", or a person for a
	// reject reason.
	Author string `json:"author"`
	// Reject marks a person's reject reason rather than an agent verdict.
	Reject bool `json:"reject,omitempty"`
}

// Body renders the review as markdown.
func (r Review) Body() string {
	head := fmt.Sprintf("**baton review: %s**", r.Verdict)
	if r.Reject {
		head = "**baton: rejected by " + r.Author + "**"
	}
	body := head + "\n\n"
	if r.Summary != "" {
		body += r.Summary + "\n\n"
	}
	if r.Feedback != "" {
		body += "### Feedback\n\n" + r.Feedback + "\n"
	}
	if !r.Reject {
		body += "\n_" + r.Author + "_\n"
	}
	return body
}

// CheckWait bounds waiting for CI.
type CheckWait struct {
	Timeout time.Duration // give up waiting for running checks
	// Appear is how long to wait for a first check to be reported; after
	// it, a head with no checks at all has no CI.
	Appear time.Duration
	Poll   time.Duration
}

// CheckResult is the CI outcome of a commit.
type CheckResult struct {
	Total  int
	Failed []baton.Ref // check refs: one per failed check, name and URL
	// Pending is set when checks were still running at the timeout.
	Pending []string
}

// Workspaces keeps bare caches and per-run worktrees under a data
// directory.
type Workspaces struct {
	Dir string // the data directory
}

// CacheDir is where the cache of a repository lives.
func (w *Workspaces) CacheDir(repository string) string {
	sum := sha256.Sum256([]byte(repository))
	name := filepath.Base(repository)
	if !baton.ValidID(name) {
		name = "repo"
	}
	return filepath.Join(w.Dir, "cache", name+"-"+hex.EncodeToString(sum[:])[:12]+".git")
}

// Lock takes the cache's lock: fetching, adding worktrees and local
// merges are serialised per repository across processes.
func (w *Workspaces) Lock(ctx context.Context, repository string) (unlock func(), err error) {
	dir := filepath.Join(w.Dir, "cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := flock.New(w.CacheDir(repository) + ".lock")
	ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		return nil, baton.WrapError(baton.Unavailable, err, "lock the repository cache of %s", repository)
	}
	return func() { _ = l.Unlock() }, nil
}

// Cache returns the repository's cache, freshly fetched from f's remote.
// The caller holds Lock.
func (w *Workspaces) Cache(ctx context.Context, d *baton.Delivery, f Forge) (*gitx.Repo, error) {
	url, env := f.Remote(d)
	r, err := gitx.Cache(ctx, url, w.CacheDir(d.Repository), env)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "fetch %s into the cache", d.Repository)
	}
	return r, nil
}

// Checkout is a worktree for one run.
type Checkout struct {
	*gitx.Repo
	cache *gitx.Repo
	ws    *Workspaces
	repo  string
	// Base is the base branch, WorkExists whether the work branch was
	// already on the remote when the checkout was made.
	Base       string
	WorkExists bool
}

// Remove deletes the worktree, under the cache's lock: git's worktree
// bookkeeping is shared by every worktree of the cache, and a prune
// racing an add breaks the add.
func (c *Checkout) Remove(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	unlock, err := c.ws.Lock(ctx, c.repo)
	if err != nil {
		return
	}
	defer unlock()
	_ = c.cache.WorktreeRemove(ctx, c.Dir)
}

// Checkout makes a fresh worktree named name for d on its work branch:
// at the remote work branch when it exists, else at the base branch.
func (w *Workspaces) Checkout(ctx context.Context, d *baton.Delivery, f Forge, name string) (*Checkout, error) {
	unlock, err := w.Lock(ctx, d.Repository)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cache, err := w.Cache(ctx, d, f)
	if err != nil {
		return nil, err
	}
	base, err := w.base(ctx, d, cache)
	if err != nil {
		return nil, err
	}
	start := "origin/" + base
	_, err = cache.RevParse(ctx, "origin/"+d.WorkBranch())
	exists := err == nil
	if exists {
		start = "origin/" + d.WorkBranch()
	}
	path := filepath.Join(w.Dir, "worktrees", d.ID, name)
	// A worktree still holding the work branch (or the path) belongs to a
	// run whose worker died (a delivery runs one phase at a time): remove
	// it.
	if wts, err := cache.Worktrees(ctx); err == nil {
		for _, t := range wts {
			if t.Branch == d.WorkBranch() || t.Path == path {
				_ = cache.WorktreeRemove(ctx, t.Path)
			}
		}
	}
	_ = os.RemoveAll(path)
	wt, err := cache.WorktreeAdd(ctx, path, d.WorkBranch(), start)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "check out %s for %s", start, d.ID)
	}
	return &Checkout{Repo: wt, cache: cache, ws: w, repo: d.Repository, Base: base, WorkExists: exists}, nil
}

// base resolves the delivery's base branch: configured, else the
// source's default branch.
func (w *Workspaces) base(ctx context.Context, d *baton.Delivery, cache *gitx.Repo) (string, error) {
	if b := d.Config.BaseBranch; b != "" {
		if _, err := cache.RevParse(ctx, "origin/"+b); err != nil {
			return "", baton.Errorf(baton.Invalid, "base branch %q does not exist in %s", b, d.Repository)
		}
		return b, nil
	}
	b, err := cache.HeadBranch(ctx)
	if err != nil || b == "" {
		return "", baton.Errorf(baton.Invalid, "cannot tell the default branch of %s: set a base branch with --base", d.Repository)
	}
	return b, nil
}

// Base returns d's base branch after refreshing the cache.
func (w *Workspaces) Base(ctx context.Context, d *baton.Delivery, f Forge) (string, error) {
	unlock, err := w.Lock(ctx, d.Repository)
	if err != nil {
		return "", err
	}
	defer unlock()
	cache, err := w.Cache(ctx, d, f)
	if err != nil {
		return "", err
	}
	return w.base(ctx, d, cache)
}

// CheckoutDetached makes a fresh worktree named name for d at start (a
// revision of the cache such as "origin/main"), without a branch.
func (w *Workspaces) CheckoutDetached(ctx context.Context, d *baton.Delivery, f Forge, name, start string) (*Checkout, error) {
	unlock, err := w.Lock(ctx, d.Repository)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cache, err := w.Cache(ctx, d, f)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(w.Dir, "worktrees", d.ID, name)
	if _, err := os.Stat(path); err == nil {
		_ = cache.WorktreeRemove(ctx, path)
	}
	wt, err := cache.WorktreeAddDetached(ctx, path, start)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "check out %s for %s", start, d.ID)
	}
	return &Checkout{Repo: wt, cache: cache, ws: w, repo: d.Repository}, nil
}
