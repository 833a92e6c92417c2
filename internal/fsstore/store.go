// Package fsstore is baton's project-local context store under
// .agent/context/: root discovery, packets, loops, and the JSONL indexes
// (relevant files, sessions). Every write is atomic and every
// read-modify-write holds a lock, so concurrent agents and hooks never
// lose or tear a file.
package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Dir is the store's directory, relative to the project root.
const Dir = ".agent/context"

// Subdirectories created by Init.
const (
	PacketsDir = "packets"
	LoopsDir   = "loops"
	IndexesDir = "indexes"
	ScratchDir = "scratch"
)

// Index files under indexes/.
const (
	RelevantFilesLog = "relevant-files.jsonl"
	SessionsLog      = "sessions.jsonl"
	ActiveLoopFile   = "active-loop.json"
)

// Found says how Discover chose a root.
type Found string

const (
	FoundMarker  Found = "marker"   // an ancestor holds .agent/context/root.json
	FoundGitRoot Found = "git-root" // no marker; the enclosing git work tree
	FoundWorkDir Found = "workdir"  // neither; the starting directory
)

// Discover returns the project root for start: the nearest ancestor (start
// included) holding .agent/context/root.json, else the nearest ancestor
// holding .git, else start itself. It only stats files, so hooks can call
// it on every event.
func Discover(start string) (root string, how Found) {
	abs, err := filepath.Abs(start)
	if err != nil {
		abs = filepath.Clean(start)
	}
	gitRoot := ""
	for dir := abs; ; {
		if _, err := os.Stat(filepath.Join(dir, Dir, "root.json")); err == nil {
			return dir, FoundMarker
		}
		if gitRoot == "" {
			if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
				gitRoot = dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if gitRoot != "" {
		return gitRoot, FoundGitRoot
	}
	return abs, FoundWorkDir
}

// Store is the context store of one project root.
type Store struct {
	root string
	dir  string
	now  func() time.Time
	// newProjectID makes root.json's project_id; a UUID by default.
	newProjectID func() string
}

// Options configure a Store. Zero values pick the defaults.
type Options struct {
	Now          func() time.Time
	NewProjectID func() string
}

// Open returns the store of project root. It does no I/O: a store that
// does not exist yet is created by Init or by the first write.
func Open(root string, opts Options) *Store {
	s := &Store{root: root, dir: filepath.Join(root, Dir), now: opts.Now, newProjectID: opts.NewProjectID}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newProjectID == nil {
		s.newProjectID = newUUID
	}
	return s
}

// Root returns the project root.
func (s *Store) Root() string { return s.root }

// Dir returns the store directory, <root>/.agent/context.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

// Exists reports whether the root marker is present.
func (s *Store) Exists() bool {
	_, err := os.Stat(s.path("root.json"))
	return err == nil
}

// Init creates the store's directories and root.json when missing and
// reports whether it created the marker. It is idempotent: an existing
// marker, and its project_id, are never rewritten.
func (s *Store) Init(ctx context.Context) (created bool, err error) {
	for _, d := range []string{PacketsDir, LoopsDir, IndexesDir, ScratchDir} {
		if err := os.MkdirAll(s.path(d), 0o755); err != nil {
			return false, fmt.Errorf("create %s: %w", s.path(d), err)
		}
	}
	ignore := s.path(".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		// Lock files and scratch data are per machine; packets, loops and
		// indexes are worth committing.
		if err := safefile.WriteAtomic(ignore, []byte("*.lock\n/scratch/\n"), 0o644); err != nil {
			return false, err
		}
	}
	marker := s.path("root.json")
	if _, err := os.Stat(marker); err == nil {
		return false, nil
	}
	unlock, err := safefile.Lock(ctx, marker)
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, err := os.Stat(marker); err == nil {
		return false, nil // another process won the race
	}
	r := baton.Root{ProjectID: s.newProjectID(), CreatedAt: s.now().UTC().Truncate(time.Second), Version: baton.StoreVersion}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return false, err
	}
	if err := safefile.WriteAtomic(marker, append(b, '\n'), 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// ReadRoot reads root.json. Returns NotFound when the store has no marker.
func (s *Store) ReadRoot() (*baton.Root, error) {
	p := s.path("root.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, baton.WrapError(baton.NotFound, err, "no context store at %s: run `baton init`", s.root)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	var r baton.Root
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, baton.WrapError(baton.Invalid, err, "%s is corrupt", p)
	}
	if r.ProjectID == "" {
		return nil, baton.Errorf(baton.Invalid, "%s is corrupt: project_id is empty", p)
	}
	return &r, nil
}
