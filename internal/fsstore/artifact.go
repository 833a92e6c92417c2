package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// artifact describes one kind of markdown file the store keeps, one file
// per id under its own directory: packets and loops. The store's create,
// read, list, resolve and update work the same way for both.
type artifact[T any] struct {
	kind     string // "packet", "loop": in ids' error messages
	dir      string // PacketsDir, LoopsDir
	listHint string // the command that lists them, for not-found messages
	decode   func([]byte) (T, error)
	encode   func(T) []byte
	id       func(T) string
	setID    func(T, string)
	times    func(T) (created, updated *time.Time)
	validate func(T) error
	// index is the directory's index file under indexes/ (index.go);
	// entryOf is what it records of an artifact (but the file's size and
	// time), and peek, when set, reads that from a file's first lines.
	index   string
	entryOf func(T) entry
	peek    func(s *Store, path string) (entry, bool)
	// durable updates fsync the directory after the rename too (after
	// the lock is released): once an update returns, a crash of the
	// machine cannot take it back. (A
	// create is always durable: CreateExclusive fsyncs the directory.)
	durable bool
}

func (a artifact[T]) path(s *Store, id string) string { return s.path(a.dir, id+".md") }

// CorruptError names a store file that cannot be read, why, and how to
// recover.
type CorruptError struct {
	Path string
	Err  error
	Hint string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("%s is corrupt: %v", e.Path, e.Err)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}
func (e *CorruptError) Unwrap() error { return e.Err }

// corrupt is an Invalid error naming the file, what is wrong with it and
// how to recover: fix the file, or move it aside.
func corrupt(path string, err error) error {
	hint := "fix it by hand, or move it out of " + filepath.Dir(path) + " to skip it"
	return &baton.Error{Code: baton.Invalid, Err: &CorruptError{Path: path, Err: err, Hint: hint}}
}

// create writes v under a new id: base, or base-2, base-3, ... when taken
// (two handoffs in the same second). The file appears whole or not at all.
func (a artifact[T]) create(ctx context.Context, s *Store, v T, base string) error {
	if _, err := s.Init(ctx); err != nil {
		return err
	}
	if err := s.checkDirs(a.dir); err != nil {
		return err
	}
	s.sweep(a.dir) // before the index records the directory's state
	w := a.beginIndexWrite(ctx, s)
	for n := 1; ; n++ {
		if n > 99 {
			w.abort()
			return baton.Errorf(baton.Conflict, "%s id %s is taken", a.kind, base)
		}
		id := base
		if n > 1 {
			id = base + "-" + strconv.Itoa(n)
		}
		if _, err := os.Lstat(a.path(s, id)); err == nil {
			continue // taken: no need to write and sync a file to find out
		}
		a.setID(v, id)
		if err := a.validate(v); err != nil {
			w.abort()
			return err
		}
		b := a.encode(v)
		if err := a.fits(b); err != nil {
			w.abort()
			return err
		}
		err := s.files.CreateExclusive(a.path(s, id), b, 0o644)
		if err == nil {
			w.commit(v, a.path(s, id), true)
			return nil
		}
		if !errors.Is(err, fs.ErrExist) { // taken since the Lstat: try the next
			w.abort()
			return err
		}
	}
}

// fits refuses a file no reader would take: every read skips one over
// MaxArtifactBytes, so writing it would lose the artifact without a word.
// Writes and reads share the one limit.
func (a artifact[T]) fits(b []byte) error {
	if len(b) <= MaxArtifactBytes {
		return nil
	}
	return baton.Errorf(baton.Invalid, "the %s would be %s, over the %s limit of a %s file, so nothing could read it: shorten it (keep long logs, transcripts or diffs in files and name the files instead)",
		a.kind, mib(int64(len(b))), mib(MaxArtifactBytes), a.kind)
}

// find reads the artifact id. Returns Invalid for a bad id or a corrupt
// file (naming the file), NotFound when it does not exist.
func (a artifact[T]) find(s *Store, id string) (T, error) {
	var zero T
	if err := baton.CheckID(a.kind, id); err != nil {
		return zero, err
	}
	if err := s.checkDirs(a.dir); err != nil {
		return zero, err
	}
	return a.read(s, a.path(s, id))
}

func (a artifact[T]) read(s *Store, path string) (T, error) {
	v, _, err := a.readInfo(s, path)
	return v, err
}

// readInfo is read that also returns what fstat said of the file read.
func (a artifact[T]) readInfo(s *Store, path string) (T, fs.FileInfo, error) {
	var zero T
	b, fi, err := s.files.ReadFileInfo(path, MaxArtifactBytes)
	err = refusedMax(path, MaxArtifactBytes, err)
	if errors.Is(err, fs.ErrNotExist) {
		id := strings.TrimSuffix(filepath.Base(path), ".md")
		return zero, nil, baton.WrapError(baton.NotFound, err, "%s %s not found: run `%s` to see them", a.kind, id, a.listHint)
	} else if baton.ErrorCode(err) == baton.Invalid {
		return zero, nil, err // refused, naming the file
	} else if err != nil {
		return zero, nil, fmt.Errorf("read %s: %w", path, err)
	}
	v, err := a.decode(b)
	if err != nil {
		return zero, nil, corrupt(path, err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".md"); a.id(v) != want {
		return zero, nil, corrupt(path, fmt.Errorf("id %q does not match the file name", a.id(v)))
	}
	return v, fi, nil
}

// ids lists the ids of the artifact's files, skipping anything else:
// symlinks and other non-regular files, and the temp files of atomic
// writes (they start with '.', which ValidID refuses).
func (a artifact[T]) ids(s *Store) ([]string, error) {
	if err := s.checkDirs(a.dir); err != nil {
		return nil, err
	}
	entries, err := s.readDir(a.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %ss: %w", a.kind, err)
	}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".md"); ok && e.Type().IsRegular() && baton.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// indexIDs lists the ids of the artifacts from the index, newest first,
// the unreadable ones last.
func (a artifact[T]) indexIDs(s *Store) ([]string, error) {
	es, idx, _, err := a.allEntries(s)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(es)+len(idx.Bad))
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return append(ids, idx.Bad...), nil
}

// list reads every artifact that keep accepts, newest updated_at first
// (within a second, the file written last; then by id, "x-10" before
// "x-9"). Files that cannot be read are returned as warnings, so one bad
// file never hides the rest.
func (a artifact[T]) list(s *Store, keep func(T) bool) ([]T, []error, error) {
	ids, err := a.ids(s)
	if err != nil {
		return nil, nil, err
	}
	var out []T
	var order []stamp
	var warnings []error
	for _, id := range ids {
		v, fi, err := a.readInfo(s, a.path(s, id)) // one open: the time and the content are the same file's
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		if keep == nil || keep(v) {
			_, updated := a.times(v)
			out = append(out, v)
			order = append(order, stamp{id: id, at: *updated, mod: fi.ModTime()})
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return newer(order[idx[i]], order[idx[j]]) })
	sorted := make([]T, len(out))
	for i, k := range idx {
		sorted[i] = out[k]
	}
	return sorted, warnings, nil
}

// resolve finds an exact id, or the one artifact whose id, or whose slug
// after the timestamp, starts with ref. Returns NotFound, or Conflict for
// an ambiguous prefix (naming the candidates).
func (a artifact[T]) resolve(s *Store, ref string) (T, error) {
	var zero T
	ref = strings.TrimSpace(ref)
	if err := baton.CheckID(a.kind, ref); err != nil {
		return zero, err
	}
	if v, err := a.find(s, ref); err == nil || baton.ErrorCode(err) != baton.NotFound {
		return v, err
	}
	ids, err := a.indexIDs(s)
	if err != nil {
		return zero, err
	}
	var matches []T
	var names []string
	var unreadable error // the first match that cannot be read
	for _, id := range ids {
		slug := id[min(len(id), len(baton.IDTimeLayout)+1):]
		if !strings.HasPrefix(id, ref) && !strings.HasPrefix(slug, ref) {
			continue
		}
		v, err := a.find(s, id)
		if err != nil {
			if unreadable == nil {
				unreadable = err
			}
			continue
		}
		matches = append(matches, v)
		names = append(names, id)
	}
	switch len(matches) {
	case 0:
		if unreadable != nil {
			return zero, unreadable
		}
		return zero, baton.Errorf(baton.NotFound, "no %s matches %q: run `%s` to see them", a.kind, ref, a.listHint)
	case 1:
		return matches[0], nil
	}
	return zero, baton.Errorf(baton.Conflict, "%q matches %d %ss (%s): give more of the id", ref, len(names), a.kind, strings.Join(names, ", "))
}

// ErrUnchanged, returned by an update function, ends the update without
// writing: the artifact is returned as read.
var ErrUnchanged = errors.New("unchanged")

// update applies fn to the stored artifact under its file's lock and
// writes the result atomically, bumping updated_at (never before
// created_at). fn's error aborts the update; ErrUnchanged skips the write
// and is not an error.
func (a artifact[T]) update(ctx context.Context, s *Store, id string, fn func(T) error) (T, error) {
	v, wrote, err := a.updateLocked(ctx, s, id, fn)
	if wrote && a.durable {
		// The directory's fsync, which makes the rename durable, comes
		// after the lock: a writer waiting for the lock does not wait for
		// this commit too, and concurrent writers' fsyncs share the file
		// system's commits. Nobody is told of the write before it is on
		// disk: the caller returns only after this.
		if err := s.files.SyncDir(a.path(s, id)); err != nil {
			var zero T
			return zero, err
		}
	}
	if wrote {
		s.sweep(a.dir) // outside the lock: it is held only for read-decide-write
	}
	return v, err
}

func (a artifact[T]) updateLocked(ctx context.Context, s *Store, id string, fn func(T) error) (v T, wrote bool, err error) {
	var zero T
	if err := baton.CheckID(a.kind, id); err != nil {
		return zero, false, err
	}
	if err := s.checkDirs(a.dir); err != nil {
		return zero, false, err
	}
	path := a.path(s, id)
	// The index's lock first: taking the file's lock may create its lock
	// file, a change of the directory the index must see as this write's.
	w := a.beginIndexWrite(ctx, s)
	committed := false
	defer func() {
		if !committed {
			w.abort()
		}
	}()
	unlock, err := s.files.Lock(ctx, path)
	if err != nil {
		return zero, false, refused(path+".lock", err)
	}
	defer unlock()
	v, err = a.read(s, path)
	if err != nil {
		return zero, false, err
	}
	if err := fn(v); errors.Is(err, ErrUnchanged) {
		return v, false, nil
	} else if err != nil {
		return zero, false, err
	}
	created, updated := a.times(v)
	*updated = s.now().UTC().Truncate(time.Second)
	if updated.Before(*created) {
		*updated = *created
	}
	if err := a.validate(v); err != nil {
		return zero, false, err
	}
	b := a.encode(v)
	if err := a.fits(b); err != nil {
		return zero, false, err
	}
	if err := s.files.WriteAtomic(path, b, 0o644); err != nil { // durable: update syncs the directory
		return zero, false, err
	}
	committed = true
	w.commit(v, path, false)
	return v, true, nil
}
