package forge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/baton-agent/baton/internal/safefile"
	"github.com/baton-agent/baton/internal/sandbox"
)

// cleanMemo remembers the worktrees baton itself left clean, so that the
// next phase's prepare starts no box to run git status and learn it
// again. baton leaves a worktree clean when checkoutClean wrote it from a
// commit, or when CommitChanges staged all of it (git add -A into
// baton's index) after the phase's boxes had ended: then the worktree
// holds what the index holds, and the index the commit's tree.
//
// A mark is dropped by anything that may have written the worktree since:
// handing it to an agent or a command (Checkout.Confine, in any worker
// process: the stamp in the state directory goes), baton's own git that
// writes it (a rebase, the next commit or checkout), Release, a
// registration that had to be re-made, and an index that is not the file
// baton left. It is never trusted once this process has given a worktree
// to something that may outlive its box or reach past its own worktree
// (no pid namespace, no Landlock, --sandbox=off), nor once any worker
// process sharing the data directory has (the marker file says so). It
// lives in this process only: a worker that restarts runs git status as
// before.
type cleanMemo struct {
	mu sync.Mutex
	m  map[string]cleanMark // worktree path → what baton left there
	// off is set once a process that may outlive its box, or write
	// another delivery's worktree, was given a worktree.
	off  atomic.Bool
	once sync.Once
}

// cleanMark is what baton left in a worktree.
type cleanMark struct {
	commit string      // the commit whose tree the index and the worktree hold
	index  fs.FileInfo // baton's index as it was left
	nonce  string      // what the state directory's stamp holds
}

// stampName is the file in a worktree's state directory that holds the
// nonce of the mark baton made. Handing the worktree to a writer removes
// it, in whichever worker process does it.
const stampName = "clean"

// unconfinedName is the file in the data directory that says some worker
// process gave a worktree to a process that may outlive its box or write
// other worktrees: no worker process trusts a mark after that.
const unconfinedName = "worktrees-unconfined"

// contained reports whether what c starts stays in the worktree it is
// given and ends with its box: Landlock confines its files and a pid
// namespace of its own ends all it started when its init ends.
func contained(c sandbox.Confinement) bool {
	var files, procs bool
	for _, d := range c.Status().Defences {
		switch d.Name {
		case sandbox.DefFiles:
			files = d.Enforced
		case sandbox.DefProcesses:
			procs = d.Enforced
		}
	}
	return files && procs
}

// distrust stops every mark from being trusted, here and in the other
// worker processes of the data directory.
func (w *Workspaces) distrust() {
	if w.clean.off.Swap(true) {
		return
	}
	w.clean.once.Do(func() {
		_ = safefile.WriteCache(filepath.Join(w.Dir, unconfinedName), []byte("A worktree was given to a process that may outlive its box or write other worktrees:\nbaton runs git status before each phase. Delete this file once no such worker runs.\n"), 0o644)
	})
}

// markClean records that baton left the worktree at path clean at
// commit, its index in state.
func (w *Workspaces) markClean(path, state, commit string) {
	if w.clean.off.Load() {
		return
	}
	fi, err := os.Lstat(filepath.Join(state, "index"))
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	if safefile.WriteCache(filepath.Join(state, stampName), []byte(nonce), 0o600) != nil {
		return
	}
	w.clean.mu.Lock()
	defer w.clean.mu.Unlock()
	if w.clean.m == nil {
		w.clean.m = map[string]cleanMark{}
	}
	w.clean.m[path] = cleanMark{commit: commit, index: fi, nonce: nonce}
}

// cleanAt returns the commit at which baton left the worktree at path
// clean, when nothing can have written it since.
func (w *Workspaces) cleanAt(path, state string) (commit string, ok bool) {
	if w.clean.off.Load() {
		return "", false
	}
	w.clean.mu.Lock()
	mark, ok := w.clean.m[path]
	w.clean.mu.Unlock()
	if !ok {
		return "", false
	}
	if _, err := os.Lstat(filepath.Join(w.Dir, unconfinedName)); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	fi, err := os.Lstat(filepath.Join(state, "index"))
	if err != nil || !os.SameFile(fi, mark.index) || fi.Size() != mark.index.Size() || !fi.ModTime().Equal(mark.index.ModTime()) {
		return "", false
	}
	stamp, err := safefile.ReadFile(filepath.Join(state, stampName), 64)
	if err != nil || string(stamp) != mark.nonce {
		return "", false
	}
	return mark.commit, true
}

// forget drops the mark of the worktree at path, in this process and, by
// its stamp, in every other.
func (w *Workspaces) forget(path, state string) {
	w.clean.mu.Lock()
	delete(w.clean.m, path)
	w.clean.mu.Unlock()
	_ = os.Remove(filepath.Join(state, stampName))
}
