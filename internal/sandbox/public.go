package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// publicTTL is how long a walk of a system directory stands. Such
// directories change when packages are installed; a key made since is
// found by the next walk.
const publicTTL = 10 * time.Minute

// maxPublicWalk bounds one walk: a tree larger than this (a tool cache of
// millions of files under /opt) is not granted at all.
const maxPublicWalk = 2_000_000

type publicWalk struct {
	hidden []string
	at     time.Time // when the walk began
	err    error
	done   chan struct{} // closed when the walk ended
}

var publicCache struct {
	sync.Mutex
	walks    map[string]*publicWalk // the last walk of each root that ended
	inflight map[string]*publicWalk // a walk of each root under way
	rules    map[string]publicRules
}

type publicRules struct {
	rules []rule
	at    time.Time
}

// narrowedPublic is the read rules of paths narrowed around deny (which
// holds what nonPublic found), kept for publicTTL.
func narrowedPublic(paths, deny []string) []rule {
	key := strings.Join(paths, "\x00") + "\x01" + strings.Join(deny, "\x00")
	publicCache.Lock()
	defer publicCache.Unlock()
	if r, ok := publicCache.rules[key]; ok && time.Since(r.at) <= publicTTL {
		return r.rules
	}
	var out []rule
	seen := map[rule]bool{}
	for _, p := range paths {
		_ = grant(p, accessRead, deny, seen, &out) // grant reports no error
	}
	if publicCache.rules == nil || len(publicCache.rules) > 64 {
		publicCache.rules = map[string]publicRules{}
	}
	publicCache.rules[key] = publicRules{rules: out, at: time.Now()}
	return out
}

// nonPublic returns what lies in roots that only its owner or group may
// read: directories others cannot list and enter, files others cannot
// read. Links are not followed (what a link leads to is checked where it
// lives). A root baton reads everything there through its owner's bits,
// so these are what the box must keep from a process running as root.
// Roots inside another root are walked once, as part of it; each root's
// walk is kept for publicTTL.
func nonPublic(roots []string) ([]string, error) {
	var out []string
	for _, root := range topRoots(roots) {
		hidden, err := walked(root, publicTTL)
		if err != nil {
			return nil, err
		}
		out = append(out, hidden...)
	}
	return out, nil
}

// topRoots resolves roots and keeps those inside no other.
func topRoots(roots []string) []string {
	var resolved []string
	for _, r := range roots {
		if p, ok := resolve(r); ok {
			resolved = append(resolved, p)
		}
	}
	slices.Sort(resolved)
	resolved = slices.Compact(resolved)
	var top []string
	for _, r := range resolved {
		if !slices.ContainsFunc(top, func(t string) bool { return within(r, t) }) {
			top = append(top, r)
		}
	}
	return top
}

// walked returns what walkNonPublic found in root by a walk begun within
// maxAge: the last one, the one under way, one another of root's
// processes kept (keptWalk), or a new one, then kept. The cache is not
// locked while a walk runs, so that box starts go on with the last walk
// while a newer one is made (WalkSystem).
func walked(root string, maxAge time.Duration) ([]string, error) {
	publicCache.Lock()
	if w, ok := publicCache.walks[root]; ok && time.Since(w.at) <= maxAge {
		publicCache.Unlock()
		return w.hidden, nil
	}
	w, ok := publicCache.inflight[root]
	if !ok {
		w = &publicWalk{at: time.Now(), done: make(chan struct{})}
		if publicCache.inflight == nil {
			publicCache.inflight = map[string]*publicWalk{}
			publicCache.walks = map[string]*publicWalk{}
		}
		publicCache.inflight[root] = w
	}
	publicCache.Unlock()
	if ok {
		<-w.done
		return w.hidden, w.err
	}
	if kept, ok := keptWalk(root, maxAge); ok {
		w.hidden, w.at = kept.hidden, kept.at // stands for what is left of its age
	} else {
		w.hidden, w.err = walkNonPublic(root)
		if w.err == nil {
			keepWalk(root, w)
		}
	}
	publicCache.Lock()
	delete(publicCache.inflight, root)
	if w.err == nil {
		publicCache.walks[root] = w
	}
	publicCache.Unlock()
	close(w.done)
	return w.hidden, w.err
}

// WalkSystem walks again each system directory the box narrows for root
// (System's Public paths) whose last walk is older than half of what a
// walk stands for, so that box starts never wait for one: a long-running
// worker calls it at start and then every few minutes. It does nothing
// unless baton runs as root.
func WalkSystem() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, root := range topRoots(System(Env{}).Public) {
		if _, err := walked(root, publicTTL/2); err != nil {
			return err
		}
	}
	return nil
}

var errWalkTooLarge = errors.New("too large")

func walkNonPublic(root string) ([]string, error) {
	var hidden []string
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return nil // gone or unreadable: it grants nothing
			}
			hidden = append(hidden, path)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > maxPublicWalk {
			return errWalkTooLarge
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed while walked
		}
		perm := fi.Mode().Perm()
		switch {
		case d.IsDir() && perm&0o005 != 0o005:
			hidden = append(hidden, path)
			return fs.SkipDir
		case !d.IsDir() && perm&0o004 == 0:
			hidden = append(hidden, path)
		}
		return nil
	})
	if errors.Is(err, errWalkTooLarge) {
		return []string{root}, nil // too large to sort out: not granted
	}
	return hidden, err
}
