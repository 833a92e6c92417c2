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
	"strings"
	"sync"
	"sync/atomic"
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

// Discover returns the project root for start: walking up from start,
// the first directory that holds a store marker (.agent/context/root.json)
// or is a git work tree's root (.git), the marker winning at the same
// level; else start itself. So a marker inside a repository wins, but a
// store above a repository's root (one made in $HOME, say) never captures
// it. It only stats files, so hooks can call it on every event.
func Discover(start string) (root string, how Found) {
	abs, err := filepath.Abs(start)
	if err != nil {
		abs = filepath.Clean(start)
	}
	for dir := abs; ; {
		if isMarker(dir) {
			return dir, FoundMarker
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, FoundGitRoot
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return abs, FoundWorkDir
}

// isMarker reports whether dir holds a store marker: a regular file, not
// a link to one.
func isMarker(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, Dir, "root.json"))
	return err == nil && fi.Mode().IsRegular()
}

// StoresAbove lists the stores in the ancestors of root, nearest first.
// Discovery no longer uses them for anything inside root's repository;
// doctor reports them, since an earlier baton may have written there.
func StoresAbove(root string) []string {
	var out []string
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		if isMarker(dir) {
			out = append(out, filepath.Join(dir, Dir))
		}
		if filepath.Dir(dir) == dir {
			return out
		}
	}
}

// Store is the context store of one project root.
type Store struct {
	root string
	dir  string
	now  func() time.Time
	// newProjectID makes root.json's project_id; a UUID by default.
	newProjectID func() string
	// machineID is this machine's id (readMachineID when empty), and
	// machine the per-machine directory's name once known (machine.go).
	machineID, machine string
	machineMu          sync.Mutex
	// files opens everything of the store beneath root: no link between
	// root and a file is followed (safefile.Root).
	files safefile.Root

	mu sync.Mutex
	// indexes are the packet and loop indexes last read or written, by
	// kind; a Store serves an MCP server's concurrent calls.
	indexes map[string]*index

	// realDirs holds the directories checkDirs found real, when oneShot.
	oneShot  bool
	realDirs sync.Map

	// writeFollows: this process reads to write (WriteFollows).
	writeFollows atomic.Bool
}

// Options configure a Store. Zero values pick the defaults.
type Options struct {
	Now          func() time.Time
	NewProjectID func() string
	// MachineID stands for this machine's id (tests); empty reads it.
	MachineID string
	// OneShot says the store serves one short process (a hook): a
	// directory found to be a real one is not looked at again in it, and
	// one opened is kept open for the next file in it
	// (safefile.Root.WithDirCache). Every open still refuses a link on
	// the way.
	OneShot bool
}

// Open returns the store of project root. It does no I/O: a store that
// does not exist yet is created by Init or by the first write.
func Open(root string, opts Options) *Store {
	s := &Store{root: root, dir: filepath.Join(root, Dir), now: opts.Now, newProjectID: opts.NewProjectID, machineID: opts.MachineID, files: safefile.Root{Dir: root}, oneShot: opts.OneShot}
	if opts.OneShot {
		s.files = s.files.WithDirCache()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newProjectID == nil {
		s.newProjectID = newUUID
	}
	return s
}

// WriteFollows says that this process reads the store in order to write
// a packet or a loop next (a handoff, the pre-compact hook): its reads
// take an index whose stamp is racy as current without counting the
// names in the directory, as a write does (index.go). The write records
// its own stamp racy and not counted, so the next reader counts the
// names once, the new file included, and finds any change this process
// did not see. In a directory of 10,000 packets that count is 3 to 5 ms,
// which a write right after another (a handoff after a pre-compact, two
// compactions) would otherwise pay twice. Not for a store that lives on
// to serve reads (baton mcp).
func (s *Store) WriteFollows() { s.writeFollows.Store(true) }

// Root returns the project root.
func (s *Store) Root() string { return s.root }

// Dir returns the store directory, <root>/.agent/context.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

// Exists reports whether the root marker is present.
func (s *Store) Exists() bool {
	fi, err := os.Lstat(s.path("root.json"))
	return err == nil && fi.Mode().IsRegular() && s.checkDirs("") == nil
}

// Init creates the store's directories and root.json when missing and
// reports whether it created the marker. It is idempotent: an existing
// marker, and its project_id, are never rewritten.
func (s *Store) Init(ctx context.Context) (created bool, err error) {
	for _, d := range []string{PacketsDir, LoopsDir, IndexesDir, ScratchDir} {
		if err := s.checkDirs(d); err != nil {
			return false, err
		}
		if err := s.files.MkdirAll(s.path(d), 0o755); err != nil {
			return false, fmt.Errorf("create %s: %w", s.path(d), err)
		}
	}
	if err := s.mkIndexes(); err != nil {
		return false, err
	}
	if err := s.ensureIgnore(); err != nil {
		return false, err
	}
	marker := s.path("root.json")
	if _, err := os.Lstat(marker); err == nil {
		return false, nil
	}
	unlock, err := s.files.Lock(ctx, marker)
	if err != nil {
		return false, refused(marker+".lock", err)
	}
	defer unlock()
	if _, err := os.Lstat(marker); err == nil {
		return false, nil // another process won the race
	}
	r := baton.Root{ProjectID: s.newProjectID(), CreatedAt: s.now().UTC().Truncate(time.Second), Version: baton.StoreVersion}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return false, err
	}
	if err := s.files.WriteAtomic(marker, append(b, '\n'), 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// ignoreLines are what the store's .gitignore must hold: what belongs to
// one machine or one person's sessions. Lock files, the temp files of
// writers that died and scratch data; the per-machine directory (the
// session log, which loops this machine trusts and which is in the
// foreground, the touch log behind `baton files`, the packet and loop
// indexes and the search index: machine.go); and the same files where
// earlier versions kept them. root.json, packets and loops are the
// project's shared context, worth committing. The .gitignore only keeps
// a person from committing them: baton never trusts what a checkout
// carries there.
var ignoreLines = []string{"*.lock", ".*" + safefile.TempMarker + "*", "/scratch/", "/indexes/" + MachineDirPrefix + "*/",
	"/indexes/sessions.jsonl", "/indexes/active-loop.json", "/indexes/foreground-loops.json",
	"/indexes/relevant-files.jsonl", "/indexes/" + SearchIndex + "*",
	"/indexes/" + PacketIndex + "*", "/indexes/" + LoopIndex + "*"}

// SearchIndex is the search index (internal/search), in indexes/: this
// machine's, rebuilt from the store and the transcripts it names.
const SearchIndex = "search.db"

// ensureIgnore writes the store's .gitignore, or adds the lines it lacks
// to one an earlier version wrote, keeping everything else in it.
func (s *Store) ensureIgnore() error {
	p := s.path(".gitignore")
	b, err := s.readFile(p, maxSmallFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil // a .gitignore baton cannot read is left alone
	}
	have := map[string]bool{}
	for _, l := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	out := string(b)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	changed := false
	for _, l := range ignoreLines {
		if !have[l] {
			out += l + "\n"
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.files.WriteAtomic(p, []byte(out), 0o644)
}

// ReadRoot reads root.json. Returns NotFound when the store has no marker.
func (s *Store) ReadRoot() (*baton.Root, error) {
	if err := s.checkDirs(""); err != nil {
		return nil, err
	}
	p := s.path("root.json")
	b, err := s.readFile(p, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, baton.WrapError(baton.NotFound, err, "no context store at %s: run `baton init`", s.root)
	} else if baton.ErrorCode(err) == baton.Invalid {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	var r baton.Root
	err = json.Unmarshal(b, &r)
	if err == nil && r.ProjectID == "" {
		err = errors.New("project_id is empty")
	}
	if err != nil {
		return nil, &baton.Error{Code: baton.Invalid, Err: &CorruptError{Path: p, Err: err,
			Hint: "fix it by hand (keep its project_id), or move it aside and run `baton init` for a new project_id"}}
	}
	return &r, nil
}
