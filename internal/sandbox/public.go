package sandbox

import (
	"errors"
	"io/fs"
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
	at     time.Time
}

var publicCache struct {
	sync.Mutex
	walks map[string]publicWalk
	rules map[string]publicRules
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
	publicCache.Lock()
	defer publicCache.Unlock()
	if publicCache.walks == nil {
		publicCache.walks = map[string]publicWalk{}
	}
	var out []string
	for _, root := range top {
		w, ok := publicCache.walks[root]
		if !ok || time.Since(w.at) > publicTTL {
			hidden, err := walkNonPublic(root)
			if err != nil {
				return nil, err
			}
			w = publicWalk{hidden: hidden, at: time.Now()}
			publicCache.walks[root] = w
		}
		out = append(out, w.hidden...)
	}
	return out, nil
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
