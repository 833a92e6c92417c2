package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Workspaces keeps, under a data directory, one bare cache per repository
// (the source's branches as refs/remotes/origin/*), one worktree per
// delivery, reused by its phases and deleted after deploy, and a small
// pool of base-branch worktrees per repository for observe.
//
// Any number of workers, in one process or several, share a data
// directory. A delivery's own refs in the cache (its branch, and the
// remote-tracking ref of its branch) and its worktree are touched only by
// the phase running it, one at a time; git writes objects and distinct
// refs safely side by side, and shared refs change by compare-and-swap.
// None of that takes a lock. The cache lock is held, for milliseconds and
// never while an agent or a command runs, by what git itself cannot run
// beside: registering and forgetting worktrees (git dies reading a
// worktree another process is writing, whenever it lists them: another
// add, a fetch's connectivity check, gc), fetches, creating the cache,
// and maintenance. Merges into a local source take a second lock only
// when a first, optimistic attempt finds the base moved.
//
// Work is kept small: a phase reads the source's two refs it needs from
// the repository's files when the source is a local repository and
// fetches only when they differ from the cache; worktrees are reset, not
// recreated; merges are computed without a checkout.
type Workspaces struct {
	Dir string // the data directory
	// Sandbox is the mode baton's own git runs in inside worktrees
	// (sandbox.ModeAuto when empty): confined as the agents are, so
	// nothing an agent left there runs with more than the agent had.
	Sandbox sandbox.Mode
	// GitTimeout bounds each git command baton runs in a worktree
	// (DefaultGitTimeout when 0): something an agent left there (a named
	// pipe where git reads a .gitignore) cannot hold a worker.
	GitTimeout time.Duration

	ident    gitx.Identity
	diffs    diffCache    // the last work diffs made (read.go)
	lockHeld atomic.Int64 // nanoseconds any cache lock was held
	boxes    atomic.Int64 // boxes started for baton's git in worktrees
	hooks    sync.Map     // local source → its hooks directory
	trees    treeMemo     // the trees of the commits baton made
	clean    cleanMemo    // the worktrees baton left clean (clean.go)
}

// treeMemo remembers the tree of each commit baton made or asked git
// about, so the next commit, merge or review on it compares trees without
// starting git to ask, and the one parent of each commit baton made with
// one, so counting the commits a phase added asks git only when someone
// else's commits are among them. A commit never changes, so an entry is
// never wrong; the memo is emptied when it holds maxTreeMemo.
type treeMemo struct {
	mu      sync.Mutex
	m       map[string]string
	parents map[string]string // commit → its only parent, for commits baton made
}

const maxTreeMemo = 4096

func (t *treeMemo) put(commit, tree string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTreeMemo {
		t.m = map[string]string{}
	}
	t.m[commit] = tree
}

// made remembers commit, which baton made of tree with parents.
func (t *treeMemo) made(commit, tree string, parents ...string) {
	t.put(commit, tree)
	if len(parents) != 1 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parents == nil || len(t.parents) >= maxTreeMemo {
		t.parents = map[string]string{}
	}
	t.parents[commit] = parents[0]
}

// count is how many commits are reachable from to and not from from, when
// the memo knows: one when to is a commit baton made on from alone.
func (t *treeMemo) count(from, to string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.parents[to]; ok && p == from {
		return 1, true
	}
	return 0, false
}

// sameTree reports whether commits a and b have the same tree, asked of
// the memo or of git in the cache.
func (w *Workspaces) sameTree(ctx context.Context, c *cache, a, b string) bool {
	ta, err := w.treeOf(ctx, c.Repo, a)
	if err != nil {
		return false
	}
	tb, err := w.treeOf(ctx, c.Repo, b)
	return err == nil && ta == tb
}

// treeOf returns commit's tree, from the memo or from git in r.
func (w *Workspaces) treeOf(ctx context.Context, r *gitx.Repo, commit string) (string, error) {
	w.trees.mu.Lock()
	tree, ok := w.trees.m[commit]
	w.trees.mu.Unlock()
	if ok {
		return tree, nil
	}
	tree, err := r.Tree(ctx, commit)
	if err == nil && gitx.IsObjectName(commit) {
		w.trees.put(commit, tree)
	}
	return tree, err
}

// GitBoxes is how many boxes this Workspaces has started for its own git
// in worktrees.
func (w *Workspaces) GitBoxes() int64 { return w.boxes.Load() }

// LockHeld is how long this Workspaces has held cache locks in all.
func (w *Workspaces) LockHeld() time.Duration { return time.Duration(w.lockHeld.Load()) }

// CacheDir is where the cache of a repository lives.
func (w *Workspaces) CacheDir(repository string) string {
	sum := sha256.Sum256([]byte(repository))
	name := filepath.Base(repository)
	if !baton.ValidID(name) {
		name = "repo"
	}
	return filepath.Join(w.Dir, "cache", name+"-"+hex.EncodeToString(sum[:])[:12]+".git")
}

// worktreeDir is where a delivery's worktree lives.
func (w *Workspaces) worktreeDir(id string) string { return filepath.Join(w.Dir, "worktrees", id) }

// lock takes the cache's lock.
func (w *Workspaces) lock(ctx context.Context, cacheDir string) (unlock func(), err error) {
	return w.lockFile(ctx, cacheDir)
}

// landLock takes the lock that lets one merge at a time land on a local
// source's base branch: in the source's git directory when it is on this
// machine (workers with other data directories take the same one), else
// beside the cache.
func (w *Workspaces) landLock(ctx context.Context, c *cache) (unlock func(), err error) {
	if c.src != nil {
		return w.lockFile(ctx, filepath.Join(c.src.CommonDir, "baton-land"))
	}
	return w.lockFile(ctx, strings.TrimSuffix(c.Dir, ".git")+".land")
}

func (w *Workspaces) lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	u, err := safefile.Lock(ctx, path)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "lock %s", path)
	}
	return w.timed(u), nil
}

// timed counts the time until unlock in LockHeld.
func (w *Workspaces) timed(unlock func()) func() {
	start := time.Now()
	return func() {
		w.lockHeld.Add(int64(time.Since(start)))
		unlock()
	}
}

// cache is a repository's cache, opened for one delivery's forge.
type cache struct {
	*gitx.Repo
	url   string      // the remote: a path or URL
	files gitx.Layout // the cache's own files
	// src is the source repository's files when the remote is a local
	// repository: its refs are read from them instead of fetched.
	src *gitx.Layout
	// local is set when the remote is a path on this machine.
	local bool
	// remote gives git's environment for the remote as of now (a fresh
	// App token) for a push at the end of a long phase.
	remote func(context.Context) ([]string, error)
}

// open opens d's cache, creating it on first use.
func (w *Workspaces) open(ctx context.Context, d *baton.Delivery, f Forge) (*cache, error) {
	url, env, err := f.Remote(ctx, d)
	if err != nil {
		return nil, err
	}
	dir := w.CacheDir(d.Repository)
	c := &cache{Repo: &gitx.Repo{Dir: dir, Env: env, Ident: &w.ident, OwnRefs: true}, url: url, local: filepath.IsAbs(url),
		remote: func(ctx context.Context) ([]string, error) {
			_, env, err := f.Remote(ctx, d)
			return env, err
		}}
	if c.local {
		if l, err := gitx.FindLayout(url); err == nil {
			c.src = &l
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := w.create(ctx, c, d); err != nil {
			return nil, err
		}
	}
	l, err := gitx.FindLayout(dir)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "open the repository cache %s", dir)
	}
	c.files = l
	return c, nil
}

// create makes the cache, under the lock so that one process does it.
// Its HEAD names the source's default branch.
func (w *Workspaces) create(ctx context.Context, c *cache, d *baton.Delivery) error {
	unlock, err := w.lock(ctx, c.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(c.Dir, "HEAD")); err == nil {
		return nil
	}
	var head string
	switch {
	case c.src != nil:
		head, _, _ = c.src.Head()
	default:
		probe := &gitx.Repo{Dir: w.Dir, Env: c.Env}
		head, err = probe.RemoteHead(ctx, c.url)
		if err != nil && d.Config.BaseBranch == "" {
			if baton.ErrorCode(err) == baton.NotFound {
				return baton.Errorf(baton.Invalid, "cannot tell the default branch of %s: set a base branch with --base", d.Repository)
			}
			return baton.WrapError(baton.Unavailable, err, "reach %s", d.Repository)
		}
	}
	if _, err := gitx.InitCache(ctx, c.Dir, head, c.Env); err != nil {
		return baton.WrapError(baton.Unavailable, err, "create the repository cache of %s", d.Repository)
	}
	return nil
}

// Refs of the cache.
func trackingRef(branch string) string { return "refs/remotes/origin/" + branch }
func branchRef(branch string) string   { return "refs/heads/" + branch }

// workRefspec fetches a delivery's branch. The pattern matches nothing
// rather than failing when the remote has no such branch, and with
// --prune deletes the cache's copy of a branch the remote deleted.
func workRefspec(branch string) string {
	return "+" + branchRef(branch) + "*:" + trackingRef(branch) + "*"
}

func baseRefspec(base string) string { return "+" + branchRef(base) + ":" + trackingRef(base) }

// readRef reads a ref of the cache; "" when it does not exist.
func (c *cache) readRef(ctx context.Context, name string) (string, error) {
	sha, ok, err := c.files.ReadRef(name)
	if errors.Is(err, gitx.ErrRefFormat) {
		sha, err = c.RevParse(ctx, name)
		if baton.ErrorCode(err) == baton.NotFound {
			return "", nil
		}
		return sha, err
	}
	if !ok {
		return "", err
	}
	return sha, err
}

// sourceRef reads a ref of a local source: from its files, else through
// git. known is false for a remote that is not on this machine.
func (c *cache) sourceRef(ctx context.Context, name string) (sha string, known bool, err error) {
	if c.src != nil {
		sha, ok, err := c.src.ReadRef(name)
		if err == nil {
			if !ok {
				sha = ""
			}
			return sha, true, nil
		}
		if !errors.Is(err, gitx.ErrRefFormat) {
			return "", true, err
		}
	}
	if !c.local {
		return "", false, nil
	}
	sha, err = gitx.Open(c.url).RevParse(ctx, name)
	if baton.ErrorCode(err) == baton.NotFound {
		return "", true, nil
	}
	return sha, true, err
}

// baseBranch is d's base branch: configured, else the source's default
// branch (the local source's HEAD, or the remote's when the cache was
// made).
func (c *cache) baseBranch(d *baton.Delivery) (string, error) {
	if b := d.Config.BaseBranch; b != "" {
		return b, nil
	}
	if c.src != nil {
		if b, _, err := c.src.Head(); err == nil && b != "" {
			return b, nil
		}
	}
	if b, _, err := c.files.Head(); err == nil && b != "" {
		return b, nil
	}
	return "", baton.Errorf(baton.Invalid, "cannot tell the default branch of %s: set a base branch with --base", d.Repository)
}

// state is what a phase needs to know of the remote.
type state struct {
	base    string // the base branch
	baseSHA string // its head; "" unless asked for or needed
	work    string // the head of d's work branch, "" when there is none
}

// What sync brings into the cache.
type need int

const (
	needWork need = 1 << iota // d's work branch, and the base when there is none
	needBase                  // the base branch
)

// sync brings what n names from the remote into the cache, fetching only
// what differs.
func (w *Workspaces) sync(ctx context.Context, c *cache, d *baton.Delivery, n need) (state, error) {
	base, err := c.baseBranch(d)
	if err != nil {
		return state{}, err
	}
	st := state{base: base}
	branch := d.WorkBranch()
	srcWork, known := "", false
	if n&needWork != 0 {
		srcWork, known, err = c.sourceRef(ctx, branchRef(branch))
	} else {
		_, known, err = c.sourceRef(ctx, branchRef(base))
	}
	if err != nil {
		return state{}, baton.WrapError(baton.Unavailable, err, "read %s of %s", branch, d.Repository)
	}
	if !known {
		// A remote elsewhere: fetch the work branch, and the base with it
		// when it is wanted.
		var specs []string
		if n&needWork != 0 {
			specs = append(specs, workRefspec(branch))
		}
		if n&needBase != 0 {
			specs = append(specs, baseRefspec(base))
		}
		if err := w.fetch(ctx, c, d, specs...); err != nil {
			return state{}, err
		}
		if n&needWork != 0 {
			if st.work, err = c.readRef(ctx, trackingRef(branch)); err != nil {
				return state{}, err
			}
			if st.work == "" && n&needBase == 0 {
				if err := w.fetch(ctx, c, d, baseRefspec(base)); err != nil {
					return state{}, err
				}
				n |= needBase
			}
		}
		if n&needBase != 0 {
			st.baseSHA, err = c.readRef(ctx, trackingRef(base))
			if err == nil && st.baseSHA == "" {
				err = baton.Errorf(baton.Invalid, "base branch %q does not exist in %s", base, d.Repository)
			}
		}
		return st, err
	}

	// A local source: compare, and fetch only what moved.
	if n&needWork != 0 {
		if err := w.syncWork(ctx, c, d, srcWork); err != nil {
			return state{}, err
		}
		st.work = srcWork
		if srcWork == "" {
			n |= needBase
		}
	}
	if n&needBase != 0 {
		if st.baseSHA, err = w.syncBase(ctx, c, d, base); err != nil {
			return state{}, err
		}
	}
	return st, nil
}

// syncWork makes sure the cache has the head of a local source's work
// branch, sha. Usually it is the cache's own branch of d, which the
// source got from here; otherwise it is fetched. Only d's phase writes
// d's refs, so no lock is needed but the fetch's.
func (w *Workspaces) syncWork(ctx context.Context, c *cache, d *baton.Delivery, sha string) error {
	if sha == "" {
		return nil
	}
	for _, ref := range []string{branchRef(d.WorkBranch()), trackingRef(d.WorkBranch())} {
		if cur, err := c.readRef(ctx, ref); err != nil || cur == sha {
			return err
		}
	}
	return w.fetch(ctx, c, d, workRefspec(d.WorkBranch()))
}

// fetch fetches refspecs (pruning what the remote deleted) under the cache
// lock.
func (w *Workspaces) fetch(ctx context.Context, c *cache, d *baton.Delivery, refspecs ...string) error {
	unlock, err := w.lock(ctx, c.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.FetchRefs(ctx, c.url, true, refspecs...); err != nil {
		return baton.WrapError(baton.Unavailable, err, "fetch from %s", d.Repository)
	}
	return nil
}

// syncBase makes the cache's remote-tracking ref of a local source's base
// branch match the source and returns its head. The ref is shared by
// every delivery of the repository: it moves by compare-and-swap, or by a
// fetch under the cache lock.
func (w *Workspaces) syncBase(ctx context.Context, c *cache, d *baton.Delivery, base string) (string, error) {
	want, _, err := c.sourceRef(ctx, branchRef(base))
	if err != nil {
		return "", baton.WrapError(baton.Unavailable, err, "read %s of %s", base, d.Repository)
	}
	if want == "" {
		return "", baton.Errorf(baton.Invalid, "base branch %q does not exist in %s", base, d.Repository)
	}
	ref := trackingRef(base)
	cur, err := c.readRef(ctx, ref)
	if err != nil || cur == want {
		return want, err
	}
	if c.UpdateRefs(ctx, gitx.RefUpdate{Name: ref, New: want, Old: cur}) == nil {
		return want, nil
	}
	// The objects are missing (or another worker moved the ref first):
	// fetch, and take what the source has now.
	if err := w.fetch(ctx, c, d, baseRefspec(base)); err != nil {
		return "", err
	}
	return c.readRef(ctx, ref)
}

// Checkout is a delivery's worktree, ready for a phase.
type Checkout struct {
	*gitx.Repo
	w      *Workspaces
	c      *cache
	branch string
	head   string // the branch's head as baton last set it
	remote string // the work branch's head on the remote, as last seen
	// Base is the base branch. BaseSHA is its head when it was needed
	// (no work branch yet), else "".
	Base, BaseSHA string
	// Start is the commit the worktree was set to: the head of the work
	// branch on the remote, or of the base branch when there is none
	// (WorkExists false).
	Start      string
	WorkExists bool
}

// Checkout prepares d's worktree for a phase: on d's work branch, at its
// head on the remote (at the base branch's head when the remote has no
// work branch yet), with no changes and no untracked files. The worktree
// stays between phases; Release deletes it.
func (w *Workspaces) Checkout(ctx context.Context, d *baton.Delivery, f Forge) (*Checkout, error) {
	c, err := w.open(ctx, d, f)
	if err != nil {
		return nil, err
	}
	st, err := w.sync(ctx, c, d, needWork)
	if err != nil {
		return nil, err
	}
	start := st.work
	if start == "" {
		start = st.baseSHA
	}
	wt, err := w.prepare(ctx, c, w.worktreeDir(d.ID), d.WorkBranch(), start)
	if err != nil {
		return nil, baton.WrapError(baton.Unavailable, err, "check out %s for %s", start, d.ID)
	}
	return &Checkout{Repo: wt, w: w, c: c, branch: d.WorkBranch(), head: start, remote: st.work,
		Base: st.base, BaseSHA: st.baseSHA, Start: start, WorkExists: st.work != ""}, nil
}

// DefaultGitTimeout bounds each git command in a worktree.
const DefaultGitTimeout = 2 * time.Minute

// statusTimeout bounds the status that tells whether a worktree is
// already clean: past it the worktree is checked out afresh.
const statusTimeout = time.Minute

func (w *Workspaces) gitTimeout() time.Duration {
	if w.GitTimeout > 0 {
		return w.GitTimeout
	}
	return DefaultGitTimeout
}

// prepare makes the worktree at path hold branch (or a detached HEAD when
// branch is "") at start, clean. Nothing an agent left in the worktree is
// trusted: the branch is set in the cache, where no agent writes; the
// worktree's registration and .git file are re-made as git would write
// them (gitx.Register); baton's git runs there confined (see worktree),
// with an index of baton's own; a worktree that is not clean is checked
// out again, and one that cannot be is replaced.
func (w *Workspaces) prepare(ctx context.Context, c *cache, path, branch, start string) (*gitx.Repo, error) {
	head := start
	if branch != "" {
		ref := branchRef(branch)
		cur, err := c.readRef(ctx, ref)
		if err != nil {
			return nil, err
		}
		if cur != start {
			if err := c.UpdateRefs(ctx, gitx.RefUpdate{Name: ref, New: start, Old: cur}); err != nil {
				return nil, err
			}
		}
		head = "ref: " + ref
	}
	state := stateDir(c.Dir, path)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	l, changed, err := gitx.Register(c.Dir, path, head)
	if err == nil {
		wt := w.worktree(c, path, l, state)
		// Where baton left it clean, and nothing has written it since
		// (clean.go), no box runs git status: at a commit of start's
		// tree the worktree is start already; at another the checkout
		// alone moves it.
		at, known := "", false
		if !changed {
			at, known = w.cleanAt(path, state)
		}
		if known && (at == start || w.sameTree(ctx, c, at, start)) {
			if at != start {
				w.markClean(path, state, start)
			}
			return wt, nil
		}
		w.forget(path, state)
		if !known && !changed && regularFile(filepath.Join(state, "index")) {
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			dirty, err := wt.Dirty(sctx)
			cancel()
			if err == nil && !dirty {
				return wt, nil
			}
			if err != nil {
				// A named pipe where git reads (a .gitignore) blocks it.
				if err := removeSpecialFiles(path); err != nil {
					return nil, err
				}
			}
		}
		if err = w.checkoutClean(ctx, wt, l, start); err == nil {
			w.markClean(path, state, start)
			return wt, nil
		}
	}
	// Start over: a fresh worktree.
	if rerr := os.RemoveAll(path); rerr != nil {
		return nil, rerr
	}
	if rerr := os.Remove(filepath.Join(state, "index")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return nil, rerr
	}
	if l, _, err = gitx.Register(c.Dir, path, head); err != nil {
		return nil, err
	}
	wt := w.worktree(c, path, l, state)
	if err := w.checkoutClean(ctx, wt, l, start); err != nil {
		return nil, err
	}
	w.markClean(path, state, start)
	return wt, nil
}

// checkoutClean makes wt exactly rev and gives the worktree's own git
// directory a copy of baton's index, so the agent's git status there is
// quick and right.
func (w *Workspaces) checkoutClean(ctx context.Context, wt *gitx.Repo, l gitx.Layout, rev string) error {
	ctx, cancel := context.WithTimeout(ctx, w.gitTimeout())
	defer cancel()
	if err := wt.CheckoutClean(ctx, rev); err != nil {
		return err
	}
	return publishIndex(wt, l)
}

// publishIndex copies baton's index of wt into the registration, where
// the agent's git reads it (and cannot write it).
func publishIndex(wt *gitx.Repo, l gitx.Layout) error {
	src, err := safefile.OpenRegular(indexOf(wt))
	if err != nil {
		return err
	}
	defer src.Close()
	d, err := safefile.OpenDirBeneath(l.CommonDir, filepath.Join("worktrees", filepath.Base(l.GitDir)), false, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteAtomicFunc("index", 0o644, func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

// indexOf is the index baton's git uses in worktree wt.
func indexOf(wt *gitx.Repo) string {
	for _, kv := range wt.Env {
		if v, ok := strings.CutPrefix(kv, "GIT_INDEX_FILE="); ok {
			return v
		}
	}
	return filepath.Join(wt.Files.GitDir, "index")
}

// stateDir is where baton keeps its own git files of the worktree at
// path (its index, the objects of a commit being made): beside the
// cache, out of every agent's reach.
func stateDir(cacheDir, path string) string {
	return filepath.Join(strings.TrimSuffix(cacheDir, ".git")+".state", filepath.Base(path))
}

// worktree is the repository baton's own git sees at path: its files
// named explicitly (l), an index of baton's own in state, and an
// environment without secrets (no token for the remote, none of baton's
// own). Each git process is confined as an agent is, with less: it may
// write the worktree and state, and read the system and the cache, but
// not its own registration, the other worktrees' or any cache of
// programs. Whatever git runs from what the agent left (a nested
// repository's core.fsmonitor, a filter) runs in that box.
func (w *Workspaces) worktree(c *cache, path string, l gitx.Layout, state string, write ...string) *gitx.Repo {
	env := proc.Environ(nil)
	sys := sandbox.System(sandbox.EnvFrom(env))
	conf := sandbox.Confinement{Mode: w.Sandbox, Policy: sandbox.Policy{
		Read:    append(slices.Clip(sys.Read), l.CommonDir, l.GitDir),
		Public:  sys.Public,
		Devices: sys.Devices,
		Write:   append([]string{path, state}, write...),
		Deny:    append(slices.Clip(sys.Deny), w.Dir, filepath.Join(l.CommonDir, "worktrees")),
	}}
	if conf.Mode == "" {
		conf.Mode = sandbox.ModeAuto
	}
	return &gitx.Repo{
		Dir: path, Files: &l, Ident: c.Ident, BaseEnv: env,
		Env: []string{"GIT_INDEX_FILE=" + filepath.Join(state, "index")},
		Start: func(cmd *exec.Cmd) (func(), error) {
			cmd.SysProcAttr = proc.GroupAttr()
			w.boxes.Add(1)
			release, rep, err := conf.Start(cmd)
			if !rep.Confined || !rep.EndsWithInit {
				// What a hook of the agent's starts here may outlive
				// git, or write other worktrees.
				w.distrust()
			}
			if err != nil {
				return release, err
			}
			// Nothing git started outlives it.
			pid := cmd.Process.Pid
			return func() { proc.KillGroup(pid, syscall.SIGKILL); release() }, nil
		},
	}
}

// regularFile reports whether path is a regular file (not through a
// link).
func regularFile(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// removeSpecialFiles removes the named pipes, sockets and devices an
// agent left in its worktree: git cannot commit them, and git blocks
// opening a named pipe where it reads a file (a .gitignore). Links are
// not followed.
func removeSpecialFiles(root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if e.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// CommitChanges commits what is left uncommitted in the worktree onto its
// branch and returns the branch's head, and whether a commit was made.
// The worktree is an agent's: baton's git stages it confined (see
// worktree), into an index and an object directory of its own; the tree
// and the commit are recorded there by git in the cache (no work tree,
// nothing of the agent's run), with the message on stdin; and the objects
// reach the cache only through git's checks (sendObjects). No
// ref of the worktree moves, so git writes no COMMIT_EDITMSG and no
// reflog there; the branch moves in the cache, from the commit baton last
// set, never from a HEAD the agent could have pointed elsewhere.
func (co *Checkout) CommitChanges(ctx context.Context, msg string) (string, bool, error) {
	if co.branch == "" || co.Files == nil {
		return "", false, baton.Errorf(baton.Invalid, "a worktree without a branch takes no commits")
	}
	ctx, cancel := context.WithTimeout(ctx, co.w.gitTimeout())
	defer cancel()
	state := stateDir(co.c.Dir, co.Dir)
	co.w.forget(co.Dir, state)
	if err := removeSpecialFiles(co.Dir); err != nil {
		return "", false, err
	}
	objects := filepath.Join(state, "objects")
	if err := os.RemoveAll(objects); err != nil {
		return "", false, err
	}
	if err := os.Mkdir(objects, 0o700); err != nil {
		return "", false, err
	}
	defer os.RemoveAll(objects)
	private := []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(co.Files.CommonDir, "objects")}
	wt := *co.Repo
	wt.Env = append(slices.Clip(co.Env), private...)
	if err := wt.AddAll(ctx); err != nil {
		return "", false, err
	}
	// The box is gone with everything it ran; what it left in the state
	// directory is read as data, and no link or named pipe there is.
	index := indexOf(co.Repo)
	if !regularFile(index) {
		return "", false, fmt.Errorf("%s is not a regular file after git add", index)
	}
	if err := scrubObjects(objects); err != nil {
		return "", false, err
	}
	store := &gitx.Repo{Dir: co.c.Dir, Files: &co.c.files, Ident: co.c.Ident, BaseEnv: co.BaseEnv,
		Env: append([]string{"GIT_INDEX_FILE=" + index}, private...)}
	tree, err := store.WriteTree(ctx)
	if err != nil {
		return "", false, err
	}
	if err := publishIndex(co.Repo, *co.Files); err != nil {
		return "", false, err
	}
	parent := co.head
	before, err := co.w.treeOf(ctx, co.c.Repo, parent)
	if err != nil {
		return "", false, err
	}
	if before == tree {
		co.w.markClean(co.Dir, state, parent)
		return parent, false, nil
	}
	sha, err := store.CommitTree(ctx, tree, msg, parent)
	if err != nil {
		return "", false, err
	}
	co.w.trees.made(sha, tree, parent)
	if err := sendObjects(ctx, store, co.c.Repo, objects, sha, parent); err != nil {
		return "", false, baton.WrapError(baton.Unavailable, err, "check the commit's objects into the repository cache")
	}
	if err := co.c.UpdateRefs(ctx, gitx.RefUpdate{Name: branchRef(co.branch), New: sha, Old: parent}); err != nil {
		return "", false, err
	}
	co.head = sha
	co.w.markClean(co.Dir, state, sha)
	return sha, true, nil
}

// HeadTree returns the tree of the worktree's head, the commit baton last set
// it to, from the memo or from git in the cache: nothing in the worktree
// is opened and no box is started.
func (co *Checkout) HeadTree(ctx context.Context) (string, error) {
	return co.w.treeOf(ctx, co.c.Repo, co.head)
}

// CommitsBetween counts the commits reachable from to but not from
// from: from the memo when to is the commit baton made on from, else
// asked of git in the cache (the commits baton made are there), not in
// the agent's worktree: no box.
func (co *Checkout) CommitsBetween(ctx context.Context, from, to string) (int, error) {
	if n, ok := co.w.trees.count(from, to); ok {
		return n, nil
	}
	return co.c.CommitsBetween(ctx, from, to)
}

// sendObjects checks the objects a confined git wrote to the object
// directory objects into the cache dst, as a push's receiving end would
// (git unpack-objects --strict): packed here from the files when they are
// all loose, else by git pack-objects in store (the objects reachable
// from tip and not from have).
func sendObjects(ctx context.Context, store, dst *gitx.Repo, objects, tip string, have ...string) error {
	err := gitx.SendLoose(ctx, dst, objects)
	if errors.Is(err, gitx.ErrNotLoose) {
		err = store.SendObjects(ctx, dst, tip, have...)
	}
	return err
}

// scrubObjects removes from an object directory a confined git wrote
// whatever is neither a regular file nor a directory (links, named
// pipes): git in the cache reads it next.
func scrubObjects(dir string) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() && !e.IsDir() {
			return os.Remove(p)
		}
		return nil
	})
}

// rebase replays the work branch's commits up to sha onto head, in d's
// worktree checked out afresh at sha with a detached HEAD, and returns
// the result: git rebase runs confined there (see worktree), writing its
// objects to a directory of its own and its state to the worktree's own
// git directory (no agent runs now, and Register re-makes it before the
// next phase), and the result reaches the cache through git's checks and
// must descend from head.
func (w *Workspaces) rebase(ctx context.Context, c *cache, d *baton.Delivery, head, sha string) (string, error) {
	path := w.worktreeDir(d.ID)
	wt, err := w.prepare(ctx, c, path, "", sha)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, w.gitTimeout())
	defer cancel()
	state := stateDir(c.Dir, path)
	w.forget(path, state) // git rebase writes the worktree
	objects := filepath.Join(state, "objects")
	if err := os.RemoveAll(objects); err != nil {
		return "", err
	}
	if err := os.Mkdir(objects, 0o700); err != nil {
		return "", err
	}
	defer os.RemoveAll(objects)
	r := w.worktree(c, path, *wt.Files, state, wt.Files.GitDir)
	private := []string{"GIT_OBJECT_DIRECTORY=" + objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(wt.Files.CommonDir, "objects")}
	r.Env = append(r.Env, private...)
	// git rebase looks at every worktree: not while one is being
	// registered or forgotten by git itself.
	unlock, err := w.lock(ctx, c.Dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	rebased, err := r.Rebase(ctx, head)
	if err != nil {
		return "", err
	}
	if err := scrubObjects(objects); err != nil {
		return "", err
	}
	store := &gitx.Repo{Dir: c.Dir, Files: &c.files, BaseEnv: r.BaseEnv, Env: private}
	if err := sendObjects(ctx, store, c.Repo, objects, rebased, head); err != nil {
		return "", baton.WrapError(baton.Unavailable, err, "check the rebased commits into the repository cache")
	}
	if ok, err := c.IsAncestor(ctx, head, rebased); err != nil || !ok {
		return "", fmt.Errorf("the rebase of %s made %s, which does not descend from %s: %v", sha, rebased, head, err)
	}
	return rebased, nil
}

// WriteFile writes data to rel in the worktree, atomically and beneath
// it: a link the agent left on the way (docs pointing elsewhere) is
// refused, one at rel itself is replaced.
func (co *Checkout) WriteFile(rel string, data []byte) error {
	co.w.forget(co.Dir, stateDir(co.c.Dir, co.Dir))
	return safefile.WriteBeneath(co.Dir, rel, data, 0o644)
}

// Confine lets c's process work in the worktree, which it may write: to
// its policy it adds what the process may reach of the repository, the
// cache (objects, refs, configuration) and the worktree's own git
// directory (HEAD, the index baton keeps there) to read, and nothing of
// the other worktrees' git directories. It writes none of them: baton
// commits and pushes, and the files git reads of every worktree whenever
// it lists them (commondir, gitdir) stay as baton wrote them, so no agent
// breaks another delivery's git. baton no longer knows the worktree
// clean (clean.go), and knows none clean any more when c's box may let
// what it starts outlive it or write past its worktree.
func (co *Checkout) Confine(c *sandbox.Confinement) {
	if co.w != nil && co.c != nil {
		co.w.forget(co.Dir, stateDir(co.c.Dir, co.Dir))
		if !contained(*c) {
			co.w.distrust()
		}
	}
	if co.Files != nil {
		c.Policy = c.Policy.Merge(sandbox.Policy{
			Read: []string{co.Files.CommonDir, co.Files.GitDir},
			Deny: []string{filepath.Join(co.Files.CommonDir, "worktrees")},
		})
	}
}

// Publish pushes the branch's head, as baton last set it, to the work
// branch on the remote (never forced: a work branch someone else moved is
// not overwritten) and returns it. It is pushed from the cache: no git
// holding the remote's credentials runs in the worktree.
func (co *Checkout) Publish(ctx context.Context) (string, error) {
	sha := co.head
	if err := co.w.send(ctx, co.c, co.c.Repo, sha, branchRef(co.branch), co.remote, co.Start); err != nil {
		return "", err
	}
	co.remote, co.WorkExists = sha, true
	return sha, nil
}

// receiveHooks are the hooks a push runs in the receiving repository.
var receiveHooks = []string{"pre-receive", "update", "post-receive", "post-update", "push-to-checkout", "proc-receive", "reference-transaction"}

// send sets ref in the source to sha, from old ("" when the ref must not
// exist yet), as a push that is not forced would, from repository from
// (the cache). have are commits the source has.
//
// The remote is named by its URL, never as origin, so git updates no
// remote-tracking ref behind anyone's back. A local source without
// receive hooks gets the new objects copied and the ref compared and
// swapped (git update-ref), a few milliseconds where a push costs a dozen
// processes; a source with hooks (they expect a push), a ref checked out
// in one of its work trees (git refuses a push there), or objects packed
// here get a real push.
func (w *Workspaces) send(ctx context.Context, c *cache, from *gitx.Repo, sha, ref, old string, have ...string) error {
	if c.src != nil && !w.sourceHooks(ctx, c) {
		branch, _ := strings.CutPrefix(ref, "refs/heads/")
		if path, err := checkedOutFiles(c.url, *c.src, branch); err == nil && path == "" {
			err := from.CopyObjects(ctx, filepath.Join(c.src.CommonDir, "objects"), sha, have...)
			if err == nil {
				if old == "" {
					old = strings.Repeat("0", len(sha)) // must not exist
				}
				return gitx.Open(c.url).UpdateRefs(ctx, gitx.RefUpdate{Name: ref, New: sha, Old: old})
			}
			if !errors.Is(err, gitx.ErrNotLoose) {
				return err
			}
		}
	}
	if c.remote != nil {
		env, err := c.remote(ctx)
		if err != nil {
			return err
		}
		pusher := *from
		pusher.Env = env
		from = &pusher
	}
	return from.Push(ctx, c.url, sha+":"+ref)
}

// sourceHooks reports whether a local source has hooks a push would run.
// Where its hooks live is asked of git once per source.
func (w *Workspaces) sourceHooks(ctx context.Context, c *cache) bool {
	v, ok := w.hooks.Load(c.url)
	if !ok {
		dir := filepath.Join(c.src.CommonDir, "hooks")
		out, err := gitx.Open(c.url).Run(ctx, "config", "--get", "core.hooksPath")
		if p := strings.TrimSpace(out); err == nil && p != "" {
			dir = p
			if !filepath.IsAbs(p) {
				dir = filepath.Join(c.url, p)
			}
		}
		v, _ = w.hooks.LoadOrStore(c.url, dir)
	}
	for _, h := range receiveHooks {
		if fi, err := os.Stat(filepath.Join(v.(string), h)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// Work returns d's base branch and the head of its work branch on the
// remote ("" when it has none), with the cache up to date.
func (w *Workspaces) Work(ctx context.Context, d *baton.Delivery, f Forge) (base, work string, err error) {
	c, err := w.open(ctx, d, f)
	if err != nil {
		return "", "", err
	}
	st, err := w.sync(ctx, c, d, needWork)
	return st.base, st.work, err
}

// maxPooled bounds the detached worktrees of a repository: one per
// observe, verify or deploy command running at once.
const maxPooled = 256

// Observe gives a worktree of d's base branch at its head on the remote,
// detached and clean, from the repository's pool (worktrees kept beside
// the cache and moved to the new head each time, so a probe never waits
// for a whole checkout). done returns it to the pool.
func (w *Workspaces) Observe(ctx context.Context, d *baton.Delivery, f Forge) (co *Checkout, done func(), err error) {
	c, err := w.open(ctx, d, f)
	if err != nil {
		return nil, nil, err
	}
	st, err := w.sync(ctx, c, d, needBase)
	if err != nil {
		return nil, nil, err
	}
	wt, done, err := w.pooled(ctx, c, d, st.baseSHA, false)
	if err != nil {
		return nil, nil, baton.WrapError(baton.Unavailable, err, "check out %s of %s", st.base, d.Repository)
	}
	return &Checkout{Repo: wt, w: w, c: c, head: st.baseSHA, Base: st.base, BaseSHA: st.baseSHA, Start: st.baseSHA}, done, nil
}

// Commit gives a worktree of the head of d's work branch on the remote,
// detached and checked out afresh from the repository's pool: nothing an
// earlier run left in a worktree (a file an agent did not commit, an
// ignored build output, a file a process that outlived its phase is still
// writing) is in it. Verify and a deploy command run there, so they run
// on exactly the commit that is merged. It is a Conflict when d has no
// work branch. done returns the worktree to the pool.
func (w *Workspaces) Commit(ctx context.Context, d *baton.Delivery, f Forge) (co *Checkout, done func(), err error) {
	c, err := w.open(ctx, d, f)
	if err != nil {
		return nil, nil, err
	}
	st, err := w.sync(ctx, c, d, needWork)
	if err != nil {
		return nil, nil, err
	}
	if st.work == "" {
		return nil, nil, baton.Errorf(baton.Conflict, "there is no work branch %s", d.WorkBranch())
	}
	wt, done, err := w.pooled(ctx, c, d, st.work, true)
	if err != nil {
		return nil, nil, baton.WrapError(baton.Unavailable, err, "check out %s of %s", st.work, d.WorkBranch())
	}
	return &Checkout{Repo: wt, w: w, c: c, head: st.work, remote: st.work, Base: st.base, Start: st.work, WorkExists: true}, done, nil
}

// pooled takes a free worktree of the repository's pool and sets it,
// detached, to sha: reset and cleaned, or, when afresh, removed and
// checked out again. done gives it back.
func (w *Workspaces) pooled(ctx context.Context, c *cache, d *baton.Delivery, sha string, afresh bool) (*gitx.Repo, func(), error) {
	pool := strings.TrimSuffix(c.Dir, ".git") + ".base"
	if err := os.MkdirAll(pool, 0o755); err != nil {
		return nil, nil, err
	}
	for n := range maxPooled {
		path := filepath.Join(pool, strconv.Itoa(n))
		unlock, ok, err := safefile.TryLock(path)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue // in use
		}
		if afresh {
			err := os.RemoveAll(path)
			if rerr := os.Remove(filepath.Join(stateDir(c.Dir, path), "index")); err == nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = rerr
			}
			if err != nil {
				unlock()
				return nil, nil, err
			}
		}
		wt, err := w.prepare(ctx, c, path, "", sha)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		return wt, unlock, nil
	}
	return nil, nil, baton.Errorf(baton.Unavailable, "all %d pooled worktrees of %s are in use", maxPooled, d.Repository)
}

// Release deletes d's worktree and its branches in the cache, once
// nothing needs them (after deploy, or when d closes): a cache whose
// branches only grow makes every ref operation slower. The source keeps
// its branch. Releasing twice, or what was never there, is no error.
func (w *Workspaces) Release(ctx context.Context, d *baton.Delivery) error {
	return w.release(ctx, w.CacheDir(d.Repository), d.ID)
}

func (w *Workspaces) release(ctx context.Context, cacheDir, id string) error {
	ctx = context.WithoutCancel(ctx)
	path := w.worktreeDir(id)
	w.forget(path, stateDir(cacheDir, id))
	// The files first (a large tree takes a while), then the registration,
	// so no registration names a worktree half gone.
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if err := gitx.Unregister(cacheDir, path); err != nil {
		return err
	}
	if err := os.RemoveAll(stateDir(cacheDir, id)); err != nil {
		return err
	}
	l, err := gitx.FindLayout(cacheDir)
	if err != nil {
		return nil // no cache
	}
	// Deleted without checking their values: a worker tidying up may
	// release the same delivery at the same moment, and nothing else
	// writes these refs any more.
	branch := "baton/" + id
	var dels []gitx.RefUpdate
	for _, ref := range []string{branchRef(branch), trackingRef(branch)} {
		if _, ok, err := l.ReadRef(ref); ok || err != nil {
			dels = append(dels, gitx.RefUpdate{Name: ref})
		}
	}
	if len(dels) == 0 {
		return nil
	}
	return (&gitx.Repo{Dir: cacheDir, OwnRefs: true}).UpdateRefs(ctx, dels...)
}

// Tidy releases what deliveries no longer need — the worktree and cache
// branches of every delivery for which keep is false — and runs git's
// maintenance on each cache whose lock is free (it is off inside the
// caches, so that it never starts in the middle of a phase). Which cache
// a worktree belongs to is read from the caches' registrations, never
// from the worktree's .git, which its agent could write.
func (w *Workspaces) Tidy(ctx context.Context, keep func(id string) bool) error {
	caches, err := filepath.Glob(filepath.Join(w.Dir, "cache", "*.git"))
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	var errs []error
	for _, dir := range caches {
		r := &gitx.Repo{Dir: dir, Ident: &w.ident}
		var ids []string
		for _, id := range w.registered(dir) {
			registered[id] = true
			if !keep(id) {
				ids = append(ids, id)
			}
		}
		out, err := r.Run(ctx, "for-each-ref", "--format=%(refname)", "refs/heads/baton/", "refs/remotes/origin/baton/")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ref := range strings.Fields(out) {
			id := ref[strings.LastIndexByte(ref, '/')+1:]
			if baton.ValidID(id) && !keep(id) {
				ids = append(ids, id)
			}
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				if err := w.release(ctx, dir, id); err != nil {
					errs = append(errs, err)
				}
			}
		}
		errs = append(errs, w.maintain(ctx, r))
	}
	// Worktrees no cache knows of (their cache is gone).
	entries, _ := os.ReadDir(filepath.Join(w.Dir, "worktrees"))
	for _, e := range entries {
		if id := e.Name(); baton.ValidID(id) && !registered[id] && !keep(id) {
			errs = append(errs, os.RemoveAll(w.worktreeDir(id)))
		}
	}
	return errors.Join(errs...)
}

// registered lists the deliveries whose worktrees cacheDir has
// registered: the registrations whose gitdir names a worktree under the
// data directory's worktrees/ (the observe pool's are kept elsewhere).
func (w *Workspaces) registered(cacheDir string) []string {
	d, err := safefile.OpenDirBeneath(cacheDir, "worktrees", false, 0)
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Names()
	var ids []string
	for _, name := range names {
		if !baton.ValidID(name) {
			continue
		}
		b, err := safefile.ReadBeneath(d.Path(), filepath.Join(name, "gitdir"), 4096)
		if err == nil && strings.TrimSpace(string(b)) == filepath.Join(w.worktreeDir(name), ".git") {
			ids = append(ids, name)
		}
	}
	return ids
}

// maintain runs git's own heuristics (gc --auto: pack loose objects and
// refs when there are many) and forgets worktrees whose directories are
// gone, unless another worker holds the cache lock; then it waits for the
// next time. The registrations it reads are baton's (gitx.Register), and
// no agent can write them.
func (w *Workspaces) maintain(ctx context.Context, r *gitx.Repo) error {
	unlock, ok, err := safefile.TryLock(r.Dir)
	if err != nil || !ok {
		return err
	}
	defer w.timed(unlock)()
	if err := r.PruneWorktrees(ctx); err != nil {
		return err
	}
	_, err = r.Run(ctx, "-c", "gc.auto=6700", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
	return err
}
