package fsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// How the index of an artifact directory (indexfile.go) is kept right.
//
// Readers stat the directory and compare it with the stamp the index
// recorded; a racy stamp (below) is also checked by counting the names in
// the directory. A match means no file was added, replaced or removed
// there since, so the index holds every artifact; anything else (no
// index, a damaged one, a link, a FIFO, a huge file, another state of the
// directory) rebuilds it from the files, and the reader writes it back
// unless a writer holds its lock. What a caller then reads of an artifact
// comes from its file, and a file that disagrees with its entry rebuilds
// the index: the index orders and finds, the files decide.
//
// Writers take the index's lock before they write an artifact, check
// that the index was current, write the file, and record it: one entry
// replaced, the new stamp, the file replaced atomically. A writer that
// finds the index stale removes it, and the next reader rebuilds it.
//
// An edit made in place by another program (the file rewritten, not
// replaced) leaves the directory's time alone, so the index sees it only
// when that artifact is read, or when the directory next changes.

// racy reports whether a stamp of a directory last changed at mod, taken
// at now, could miss a change yet to come: a later change gets the same
// mtime while the filesystem's clock has not ticked past mod. Linux
// stamps files from a clock that ticks every 1-10 ms (HZ 1000 to 100) and
// lags the precise one by at most a tick, so two ticks after mod that
// clock has moved on. A filesystem whose times have no sub-millisecond
// part may keep whole seconds, and gets two.
func racy(mod int64, now time.Time) bool {
	window := int64(20 * time.Millisecond)
	if mod%int64(time.Millisecond) == 0 {
		window = int64(2 * time.Second)
	}
	return now.UnixNano()-mod < window
}

// dirStamp stats the directory sub of the store. Count is left zero.
func (s *Store) dirStamp(sub string) (dirStamp, error) {
	fi, err := os.Lstat(s.path(sub))
	now := time.Now()
	if err != nil {
		return dirStamp{}, err
	}
	if !fi.IsDir() {
		return dirStamp{}, baton.Errorf(baton.Invalid, "%s is not a directory", s.path(sub))
	}
	d := dirStamp{Mod: fi.ModTime().UnixNano(), Size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		d.Ino = uint64(st.Ino)
	}
	d.Racy = racy(d.Mod, now)
	return d, nil
}

// artifactID returns the id in an artifact's file name ("<id>.md"), and
// false for anything else (temp files start with '.', which ValidID
// refuses).
func artifactID(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, ".md")
	return id, ok && baton.ValidID(id)
}

func (a artifact[T]) indexPath(s *Store) string { return s.indexPath(a.index) }

// current reports whether idx describes the directory in the state now.
// A racy stamp is believed once the names were counted after the clock
// moved past it: by this process (settled), or by another, which says so
// in the index's settled file.
func (a artifact[T]) current(s *Store, idx *index, now dirStamp) bool {
	ok, unsettled := a.currentUncounted(s, idx, now)
	if !ok || !unsettled {
		return ok
	}
	if at := idx.counted.Load(); at != 0 && time.Now().UnixNano()-at < int64(recount) {
		// Counted a moment ago: as good as a read then.
		return true
	}
	if s.writeFollows.Load() {
		// The write to come leaves the count to the next reader.
		return true
	}
	return a.count(s, idx, now)
}

// recount is how long a count of the names, while the stamp is still
// racy, stands for this process: the reads of one command (a hook's, a
// handoff's) share one count, and a process that lives on counts again,
// so a change it missed is missed for no longer than this.
const recount = 50 * time.Millisecond

// currentUncounted is current without the count: unsettled says the
// stamp is racy and its names were not counted yet.
func (a artifact[T]) currentUncounted(s *Store, idx *index, now dirStamp) (ok, unsettled bool) {
	if idx == nil || !idx.Stamp.sameDir(now) {
		return false, false
	}
	if !idx.Stamp.Racy || idx.settled.Load() {
		return true, false
	}
	settled := a.indexPath(s) + settledSuffix
	if b, err := s.files.ReadFile(settled, 256); err == nil && string(b) == settledLine(idx) {
		idx.settled.Store(true)
		return true, false
	}
	return true, true
}

// count checks a racy stamp by counting the names in the directory, and
// settles it when the clock has moved on.
func (a artifact[T]) count(s *Store, idx *index, now dirStamp) bool {
	ok := a.indexPath(s) + settledSuffix
	n, err := countNames(s.path(a.dir))
	if err != nil || n != idx.Stamp.Count {
		return false
	}
	idx.counted.Store(time.Now().UnixNano())
	if !now.Racy {
		// Counted after the clock moved on: no change to come can keep
		// the directory's time, and no process need count again.
		idx.settled.Store(true)
		_ = s.files.WriteCache(ok, []byte(settledLine(idx)), 0o644)
	}
	return true
}

// settledSuffix names the file beside an index that says its racy stamp
// was counted after the clock moved on: a few bytes written instead of
// the index again.
const settledSuffix = ".ok"

// settledLine is what the settled file holds for idx: its head's
// checksum and its stamp, so it speaks of that index only.
func settledLine(idx *index) string {
	st := idx.Stamp
	return fmt.Sprintf("settled %08x %d %d %d %d\n", idx.headSum, st.Mod, st.Ino, st.Size, st.Count)
}

// indexHead is how much of an index file a reader reads at first: the
// head and the newest few hundred entries.
const indexHead = 64 << 10

// readIndex reads the index file's head and its first entries (the rest
// when a caller gets there); any problem with it is an error, and the
// caller rebuilds.
func (a artifact[T]) readIndex(s *Store) (*index, error) {
	p := a.indexPath(s)
	f, err := s.files.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxIndexBytes {
		return nil, fmt.Errorf("%s: %w", p, safefile.ErrTooLarge)
	}
	b := make([]byte, min(fi.Size(), indexHead))
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	if int64(len(b)) < fi.Size() {
		if idx, _, err := decodeHead(b, fi.Size(), a.kind); err == nil {
			st, _ := fi.Sys().(*syscall.Stat_t)
			if st != nil {
				idx.src.path, idx.src.ino, idx.src.size, idx.src.mod, idx.src.files = p, uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano(), s.files
				return idx, nil
			}
		}
		// A head longer than what was read: all of it, then.
		if b, err = io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(b), f), maxIndexBytes+1)); err != nil {
			return nil, err
		}
	}
	return decodeIndex(b, a.kind)
}

// loadIndex returns the index of the directory as it is now: the one
// this Store read before, the file's, or one rebuilt from the artifact
// files (force rebuilds it in any case).
func (a artifact[T]) loadIndex(s *Store, force bool) (*index, error) {
	if err := s.checkDirs(a.dir); err != nil {
		return nil, err
	}
	if err := s.checkDirs(IndexesDir); err != nil {
		return nil, err
	}
	now, err := s.dirStamp(a.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return newIndex(a.kind, dirStamp{}, nil, nil), nil
	} else if err != nil {
		return nil, err
	}
	if !force {
		if c := s.cachedIndex(a.kind); a.current(s, c, now) {
			return c, nil
		}
		if idx, err := a.readIndex(s); err == nil && a.current(s, idx, now) {
			s.cacheIndex(idx)
			return idx, nil
		}
	}
	idx, err := a.rebuildIndex(s, now)
	if err != nil {
		return nil, err
	}
	a.saveIndex(s, idx)
	s.cacheIndex(idx)
	return idx, nil
}

// rebuildIndex summarises every artifact file. now is the directory's
// stamp taken before it is read, so a change made during the scan leaves
// the index stale rather than wrongly current.
func (a artifact[T]) rebuildIndex(s *Store, now dirStamp) (*index, error) {
	ents, err := s.readDir(a.dir)
	if err != nil {
		return nil, err
	}
	stamp := now
	stamp.Count = 0
	var entries []entry
	var bad []string
	for _, de := range ents {
		id, ok := artifactID(de.Name())
		if !ok {
			continue
		}
		stamp.Count++
		if !de.Type().IsRegular() {
			continue // links and FIFOs are not artifacts (ids skips them too)
		}
		e, err := a.summarize(s, a.path(s, id))
		if err != nil {
			bad = append(bad, id)
			continue
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(x, y entry) int {
		switch {
		case newerEntry(&x, &y):
			return -1
		case newerEntry(&y, &x):
			return 1
		}
		return 0
	})
	slices.Sort(bad)
	return newIndex(a.kind, stamp, entries, bad), nil
}

// summarize reads what the index records of one file: from its first
// lines when the kind can (packets), else from the whole file.
func (a artifact[T]) summarize(s *Store, path string) (entry, error) {
	if a.peek != nil {
		if e, ok := a.peek(s, path); ok {
			return e, nil
		}
	}
	v, fi, err := a.readInfo(s, path)
	if err != nil {
		return entry{}, err
	}
	e := a.entryOf(v)
	e.Mod, e.Size = fi.ModTime().UnixNano(), fi.Size()
	return e, nil
}

// saveIndex writes idx back for the next process, unless a writer holds
// the index's lock or the directory changed since idx was made (then the
// next reader rebuilds). A file that cannot be written is left: every
// reader then rebuilds, slower but right.
func (a artifact[T]) saveIndex(s *Store, idx *index) {
	if s.mkIndexes() != nil {
		return
	}
	p := a.indexPath(s)
	unlock, ok, err := s.files.TryLock(p)
	if err != nil || !ok {
		return
	}
	defer unlock()
	if now, err := s.dirStamp(a.dir); err != nil || !idx.Stamp.sameDir(now) || idx.whole() != nil {
		return
	}
	_ = s.files.WriteCache(p, encodeIndex(idx), 0o644)
}

// indexWrite is a write of one artifact under its directory's index lock.
type indexWrite[T any] struct {
	a      artifact[T]
	s      *Store
	unlock func()
	idx    *index // the index as it was before the write; nil when it was not current
	none   bool   // there was no index to keep
	// unverified says idx's racy stamp was taken as current without a
	// count: the stamp written is racy too, so a reader counts.
	unverified bool
}

// beginIndexWrite takes the index's lock for a write of one artifact and
// reads the index as it is before the write. When the lock cannot be
// had (its file is a link, say), the index file is removed: it cannot be
// kept current, and readers rebuild without it.
func (a artifact[T]) beginIndexWrite(ctx context.Context, s *Store) *indexWrite[T] {
	w := &indexWrite[T]{a: a, s: s, unlock: func() {}}
	p := a.indexPath(s)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && s.cachedIndex(a.kind) == nil {
		// No index to keep: the first reader makes one (a hook's stop
		// in a store nobody listed takes no lock for it).
		w.none = true
		return w
	}
	if err := s.mkIndexes(); err != nil {
		return w
	}
	p = a.indexPath(s)
	unlock, err := s.files.Lock(ctx, p)
	if err != nil {
		removeIndex(s, a.kind, p)
		return w
	}
	w.unlock = unlock
	now, err := s.dirStamp(a.dir)
	if err != nil {
		return w
	}
	// A racy stamp is not counted here: the stamp this write records is
	// marked racy (commit), so the next reader counts the names, the
	// file just written included, and finds any it does not know. In a
	// large directory that saves a writer the reader's work again.
	idx := s.cachedIndex(a.kind)
	ok, unsettled := a.currentUncounted(s, idx, now)
	if !ok {
		if idx, err = a.readIndex(s); err == nil {
			ok, unsettled = a.currentUncounted(s, idx, now)
		}
	}
	if ok {
		w.idx, w.unverified = idx, unsettled
	}
	return w
}

// commit records v, just written to path, and releases the lock. created
// says the file is new.
func (w *indexWrite[T]) commit(v T, path string, created bool) {
	defer w.unlock()
	if w.none {
		return
	}
	s, a, p := w.s, w.a, w.a.indexPath(w.s)
	fi, err := os.Lstat(path)
	now, err2 := s.dirStamp(a.dir)
	if w.idx == nil || err != nil || err2 != nil {
		removeIndex(s, a.kind, p)
		return
	}
	e := a.entryOf(v)
	e.Mod, e.Size = fi.ModTime().UnixNano(), fi.Size()
	count := w.idx.Stamp.Count
	if created {
		count++
	}
	idx, err := w.idx.with(e, created)
	if err != nil {
		removeIndex(s, a.kind, p)
		return
	}
	idx.Stamp = now
	idx.Stamp.Count = count
	idx.Stamp.Racy = now.Racy || w.unverified
	if err := s.files.WriteCacheFunc(p, 0o644, idx.writeTo); err != nil {
		removeIndex(s, a.kind, p)
		return
	}
	if idx.tail != nil {
		// The rest of the body is in the file just written, after what
		// this index holds.
		fi, err := os.Lstat(p)
		if err != nil {
			removeIndex(s, a.kind, p)
			return
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			removeIndex(s, a.kind, p)
			return
		}
		idx.src = &indexSource{path: p, files: s.files, ino: uint64(st.Ino), size: fi.Size(), mod: fi.ModTime().UnixNano(), bodySize: len(idx.body) + idx.tail.bodySize}
		idx.bodyStart = fi.Size() - int64(idx.src.bodySize) - endLine
		idx.tail = nil
	}
	s.cacheIndex(idx)
}

// abort releases the lock after a write that failed. The directory may
// have changed (a temp file came and went), which the next reader sees.
func (w *indexWrite[T]) abort() { w.unlock() }

// removeIndex deletes an index that cannot be kept current.
func removeIndex(s *Store, kind, p string) {
	s.cacheIndex(newIndex(kind, dirStamp{Mod: -1}, nil, nil)) // matches no directory
	// Not through a link out of the store; one left is found stale again.
	_ = s.files.Remove(p)
}

func (s *Store) cachedIndex(kind string) *index {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.indexes[kind]
}

func (s *Store) cacheIndex(idx *index) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexes == nil {
		s.indexes = map[string]*index{}
	}
	s.indexes[idx.Kind] = idx
}

// badErrors reads the files the index marks unreadable again, for the
// warnings a listing gives. stale is set when one reads fine now: it was
// rewritten in place, and the index must be rebuilt.
func (a artifact[T]) badErrors(s *Store, idx *index) (errs []error, stale bool) {
	for _, id := range idx.Bad {
		if _, err := a.read(s, a.path(s, id)); err != nil {
			if baton.ErrorCode(err) != baton.NotFound {
				errs = append(errs, err)
			}
		} else {
			stale = true
		}
	}
	return errs, stale
}

// entries returns the index and the warnings of its unreadable files;
// force rebuilds the index from the files.
func (a artifact[T]) entries(s *Store, force bool) (*index, []error, error) {
	idx, err := a.loadIndex(s, force)
	if err != nil {
		return nil, nil, err
	}
	warnings, stale := a.badErrors(s, idx)
	if stale && !force {
		if idx, err = a.loadIndex(s, true); err != nil {
			return nil, nil, err
		}
		warnings, _ = a.badErrors(s, idx)
	}
	return idx, warnings, nil
}

// allEntries returns every entry of the index and the warnings of its
// unreadable files; a damaged line rebuilds the index.
func (a artifact[T]) allEntries(s *Store) ([]entry, *index, []error, error) {
	for force := false; ; force = true {
		idx, warnings, err := a.entries(s, force)
		if err != nil {
			return nil, nil, nil, err
		}
		es, err := idx.all()
		if err == nil || force {
			return es, idx, warnings, err
		}
	}
}

// readEntry reads the artifact e names and reports whether its file is
// what e recorded: the same size and time, and the fields listing and
// `latest` choose by. A file gone or different means the index is stale.
func (a artifact[T]) readEntry(s *Store, e entry) (v T, same bool, err error) {
	v, fi, err := a.readInfo(s, a.path(s, e.ID))
	if err != nil {
		return v, baton.ErrorCode(err) != baton.NotFound, err
	}
	got := a.entryOf(v)
	same = got.ID == e.ID && got.Status == e.Status && got.Created == e.Created && got.Updated == e.Updated &&
		fi.ModTime().UnixNano() == e.Mod && fi.Size() == e.Size
	return v, same, nil
}

// PacketStampsSince is PacketStamps for the packets updated at or after
// since (to the second), which the index lists first, and how many packets
// it holds in all. It reads the index's head, not all of it: a cache that
// was complete at since, and holds all but the stamps given here, knows
// from the total whether anything else was added or removed.
func (s *Store) PacketStampsSince(since time.Time) ([]FileStamp, int, []error, error) {
	return packets.stampsSince(s, since)
}

// LoopStampsSince is PacketStampsSince for the loop files.
func (s *Store) LoopStampsSince(since time.Time) ([]FileStamp, int, []error, error) {
	return loops.stampsSince(s, since)
}

func (a artifact[T]) stampsSince(s *Store, since time.Time) ([]FileStamp, int, []error, error) {
	for force := false; ; force = true {
		idx, warnings, err := a.entries(s, force)
		if err != nil {
			return nil, 0, nil, err
		}
		var out []FileStamp
		for i := 0; ; i++ {
			e, ok, err := idx.at(i)
			if err != nil {
				if force {
					return nil, 0, nil, err
				}
				break // a damaged line: rebuild the index
			}
			if !ok || e.Updated < since.Unix() {
				return out, idx.N, warnings, nil
			}
			out = append(out, FileStamp{ID: e.ID, Path: a.path(s, e.ID), Size: e.Size, Mod: e.Mod, Updated: e.Updated})
		}
	}
}

// Changes identifies the state of the packet and loop directories: it
// differs whenever a packet or loop was added, replaced or removed,
// through baton or not. A watcher compares it with the last one it saw,
// for the cost of two stats, instead of listing the store; a cache that
// outlives the process (search's index) keeps its String.
type Changes struct {
	packets, loops dirStamp
}

// String is c as text that is equal for equal Changes.
func (c Changes) String() string {
	return fmt.Sprintf("packets %d %d %d; loops %d %d %d", c.packets.Mod, c.packets.Ino, c.packets.Size, c.loops.Mod, c.loops.Ino, c.loops.Size)
}

// FileStamp is one artifact file as the store's index records it. A cache
// of the store's contents (search's index) compares it with what it
// recorded, and reads again only the files that changed.
type FileStamp struct {
	ID      string
	Path    string
	Size    int64
	Mod     int64 // modification time, ns since the epoch
	Updated int64 // updated_at, unix seconds: what orders the listing
}

// PacketStamps lists the packet files as the index records them, brought
// up to date first as every listing is, with the warnings of the files
// that cannot be read (left out). With stat, each is stat'd and given as
// it is now: an edit made in place, by another program, changes neither
// the directory nor the index, and only a stat sees it.
func (s *Store) PacketStamps(stat bool) ([]FileStamp, []error, error) { return packets.stamps(s, stat) }

// LoopStamps is PacketStamps for the loop files.
func (s *Store) LoopStamps(stat bool) ([]FileStamp, []error, error) { return loops.stamps(s, stat) }

func (a artifact[T]) stamps(s *Store, stat bool) ([]FileStamp, []error, error) {
	es, _, warnings, err := a.allEntries(s)
	if err != nil {
		return nil, nil, err
	}
	out := make([]FileStamp, 0, len(es))
	for _, e := range es {
		st := FileStamp{ID: e.ID, Path: a.path(s, e.ID), Size: e.Size, Mod: e.Mod, Updated: e.Updated}
		if stat {
			fi, err := os.Lstat(st.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // removed since the index was read
			case err != nil:
				warnings = append(warnings, err)
				continue
			case !fi.Mode().IsRegular():
				warnings = append(warnings, refused(st.Path, safefile.ErrNotRegular))
				continue
			}
			st.Size, st.Mod = fi.Size(), fi.ModTime().UnixNano()
		}
		out = append(out, st)
	}
	return out, warnings, nil
}

// Changes returns the store's Changes. settled is false while a change
// in the same tick of the filesystem's clock could still leave them as
// they are: a watcher then looks again, whatever they say.
func (s *Store) Changes() (c Changes, settled bool) {
	c.packets, _ = s.dirStamp(PacketsDir)
	c.loops, _ = s.dirStamp(LoopsDir)
	settled = !c.packets.Racy && !c.loops.Racy
	c.packets.Racy, c.loops.Racy = false, false
	return c, settled
}
