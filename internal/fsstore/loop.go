package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
)

// loops is the loop kind of artifact. Its updates are durable: a loop's
// file counts the stops that continued it (iterations, blocks, spend),
// and a crash must not take a counted stop back.
var loops = artifact[*baton.Loop]{
	kind: "loop", dir: LoopsDir, listHint: "baton loop list", index: LoopIndex, entryOf: loopEntry,
	durable:  true,
	decode:   frontmatter.DecodeLoop,
	encode:   frontmatter.EncodeLoop,
	id:       func(l *baton.Loop) string { return l.ID },
	setID:    func(l *baton.Loop, id string) { l.ID = id },
	times:    func(l *baton.Loop) (*time.Time, *time.Time) { return &l.CreatedAt, &l.UpdatedAt },
	validate: func(l *baton.Loop) error { return l.Validate() },
}

// LoopPath returns the file of loop id (which must be valid).
func (s *Store) LoopPath(id string) (string, error) {
	if err := baton.CheckID("loop", id); err != nil {
		return "", err
	}
	return loops.path(s, id), nil
}

// CreateLoop writes a new loop. When l.ID is empty it is made from the
// creation time and the first line of the prompt; a taken id gets a
// numeric suffix. The store is created on first use. It does not touch
// the foreground loops: the caller decides that with SetForegroundLoop.
func (s *Store) CreateLoop(ctx context.Context, l *baton.Loop) error {
	if l.CreatedAt.IsZero() {
		l.CreatedAt = s.now().UTC().Truncate(time.Second)
	}
	if l.UpdatedAt.IsZero() {
		l.UpdatedAt = l.CreatedAt
	}
	if l.Status == "" {
		l.Status = baton.LoopActive
	}
	if l.Notes == "" {
		l.Notes = "\n" // as the file holds it, so l equals what a read returns
	}
	base := l.ID
	if base == "" {
		first, _, _ := strings.Cut(strings.TrimSpace(l.Prompt), "\n")
		base = baton.TimestampID(l.CreatedAt, first, "loop")
	}
	return loops.create(ctx, s, l, base)
}

// FindLoopByID reads one loop. Returns Invalid for a bad id or a corrupt
// file (the error names the file), NotFound when it does not exist.
func (s *Store) FindLoopByID(id string) (*baton.Loop, error) { return loops.find(s, id) }

// LoopIDs lists the ids of the loops, newest first, from the loop index
// (for completion and the MCP resources).
func (s *Store) LoopIDs() ([]string, error) { return loops.indexIDs(s) }

// loopEntry is what the index records of a loop: everything `loop list`
// shows.
func loopEntry(l *baton.Loop) entry {
	return entry{ID: l.ID, Status: string(l.Status), Created: l.CreatedAt.Unix(), Updated: l.UpdatedAt.Unix(), Session: l.SessionID,
		Loop: loopFields{Iteration: l.Iteration, MaxIterations: l.MaxIterations, Blocks: l.ConsecutiveBlocks,
			Outcome: l.Outcome, SourcePacket: l.SourcePacketID, Compacted: l.CompactedPacket},
		Promises: l.CompletionPromises}
}

// loopOf is the loop an index entry describes, without its prompt and
// notes.
func (e entry) loopOf() *baton.Loop {
	return &baton.Loop{ID: e.ID, Status: baton.LoopStatus(e.Status), CreatedAt: time.Unix(e.Created, 0).UTC(), UpdatedAt: time.Unix(e.Updated, 0).UTC(),
		Iteration: e.Loop.Iteration, MaxIterations: e.Loop.MaxIterations, CompletionPromises: e.Promises, SessionID: e.Session,
		SourcePacketID: e.Loop.SourcePacket, Outcome: e.Loop.Outcome, ConsecutiveBlocks: e.Loop.Blocks, CompactedPacket: e.Loop.Compacted}
}

// ListLoops lists loops as `loop list` shows them, newest updated_at
// first, from the loop index: each with only what the index records
// (loopEntry; FindLoops reads them whole). A loop whose file's size or time
// differs from what the index recorded is read from its file. Unreadable
// files are returned as warnings.
func (s *Store) ListLoops(filter LoopFilter) ([]*baton.Loop, []error, error) {
	es, _, warnings, err := loops.allEntries(s)
	if err != nil {
		return nil, nil, err
	}
	var out []*baton.Loop
	for _, e := range es {
		l := e.loopOf()
		if fi, err := os.Lstat(loops.path(s, e.ID)); err != nil || fi.ModTime().UnixNano() != e.Mod || fi.Size() != e.Size {
			full, err := s.FindLoopByID(e.ID)
			if baton.ErrorCode(err) == baton.NotFound {
				continue
			} else if err != nil {
				warnings = append(warnings, err)
				continue
			}
			l = loopEntry(full).loopOf() // the same fields as every other row
		}
		if filter.Status == "" || l.Status == filter.Status {
			out = append(out, l)
		}
	}
	return out, warnings, nil
}

// LoopFilter narrows FindLoops. Zero values match everything.
type LoopFilter struct {
	Status baton.LoopStatus
}

// FindLoops lists loops, newest updated_at first (ties by id, newest
// first). Unreadable files are skipped and returned as warnings.
func (s *Store) FindLoops(filter LoopFilter) ([]*baton.Loop, []error, error) {
	return loops.list(s, func(l *baton.Loop) bool { return filter.Status == "" || l.Status == filter.Status })
}

// ResolveLoop finds the loop ref names: an exact id or a unique prefix of
// the id (or of its slug). Returns NotFound, or Conflict for an ambiguous
// prefix.
func (s *Store) ResolveLoop(ref string) (*baton.Loop, error) { return loops.resolve(s, ref) }

// UpdateLoop applies fn to the stored loop under the loop file's lock and
// writes the result atomically, bumping updated_at. fn's error aborts the
// update; ErrUnchanged skips the write and is not an error. Every change of
// a loop's state (iteration, status, binding) goes through here, so
// concurrent hooks and commands never lose an increment.
func (s *Store) UpdateLoop(ctx context.Context, id string, fn func(*baton.Loop) error) (*baton.Loop, error) {
	return loops.update(ctx, s, id, fn)
}

// ForegroundLoopsFile is the per-machine file (see machine.go) of the
// loop each session's stops continue, the one no session has taken yet,
// and the loops this machine trusts.
const ForegroundLoopsFile = "foreground-loops.json"

// Foreground is which loop each session continues, and which loops this
// machine trusts. Two sessions in one project each run their own loop; a
// loop started outside any session waits, unbound, for the first session
// that stops without a loop of its own. Only a loop this machine adopted
// (started it, or `baton loop adopt`) can be either, and only as it was
// adopted: its prompt and verify commands (LoopDigest).
type Foreground struct {
	// Sessions maps a session id to the loop its stops continue.
	Sessions map[string]string `json:"sessions,omitempty"`
	// Unbound is the loop no session has taken yet ("" when none).
	Unbound string `json:"unbound,omitempty"`
	// Adopted maps the id of each loop this machine trusts to the
	// LoopDigest it trusts.
	Adopted map[string]string `json:"adopted,omitempty"`
}

// Of is the loop session continues: its own, else the unbound one.
func (f Foreground) Of(session string) string {
	if id := f.Sessions[session]; session != "" && id != "" {
		return id
	}
	return f.Unbound
}

// Has reports whether id is the foreground loop of some session, or the
// unbound one.
func (f Foreground) Has(id string) bool {
	return id != "" && slices.Contains(f.IDs(), id)
}

// Trusts reports whether this machine adopted l as it is: the loop's
// prompt and verify commands are those it adopted.
func (f Foreground) Trusts(l *baton.Loop) bool {
	d, ok := f.Adopted[l.ID]
	return ok && d == LoopDigest(l)
}

// IDs lists the foreground loops, sorted, each once.
func (f Foreground) IDs() []string {
	var ids []string
	if f.Unbound != "" {
		ids = append(ids, f.Unbound)
	}
	for _, id := range f.Sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// without drops id from every slot.
func (f *Foreground) without(id string) {
	if f.Unbound == id {
		f.Unbound = ""
	}
	for s, l := range f.Sessions {
		if l == id {
			delete(f.Sessions, s)
		}
	}
}

// maxSessionKey bounds a session id kept in the pointer file.
const maxSessionKey = 256

// Foreground reads this machine's foreground loops (see machine.go). A
// corrupt pointer is an Invalid error whose hint says how to replace it.
func (s *Store) Foreground() (Foreground, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return Foreground{}, err
	}
	return s.readForeground()
}

// readForeground reads the pointer file.
func (s *Store) readForeground() (f Foreground, err error) {
	p := s.indexPath(ForegroundLoopsFile)
	b, err := s.readFile(p, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Foreground{}, nil
	} else if r := (*RefusedError)(nil); errors.As(err, &r) {
		r.Hint += ", or run `baton loop activate <id>`, which replaces it"
		return Foreground{}, err
	} else if err != nil {
		return Foreground{}, fmt.Errorf("read %s: %w", p, err)
	}
	corrupt := func(err error) error {
		return &baton.Error{Code: baton.Invalid, Err: &CorruptError{Path: p, Err: err, Hint: "fix it, or run `baton loop activate <id>`, which replaces it"}}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Foreground{}, corrupt(err)
	}
	for sess, id := range f.Sessions {
		if sess == "" || len(sess) > maxSessionKey || !baton.ValidID(id) {
			return Foreground{}, corrupt(fmt.Errorf("session %.40q names loop %.80q", sess, id))
		}
	}
	if f.Unbound != "" && !baton.ValidID(f.Unbound) {
		return Foreground{}, corrupt(fmt.Errorf("unbound names loop %.80q", f.Unbound))
	}
	return f, nil
}

// ForegroundLoopID returns the loop session continues (its own, else the
// unbound one), or "" when there is none.
func (s *Store) ForegroundLoopID(session string) (string, error) {
	f, err := s.Foreground()
	return f.Of(session), err
}

// SetForegroundLoop makes l the foreground loop of session ("" makes it
// the unbound loop, for the first session that stops), removing it from
// any other slot, and returns the loop that slot named before. Only a
// loop this machine trusts as it is can be made one: otherwise it is a
// Conflict that says to adopt it (AdoptLoop).
func (s *Store) SetForegroundLoop(ctx context.Context, session string, l *baton.Loop) (previous string, err error) {
	return s.setForeground(ctx, session, l, false)
}

// AdoptLoop records that this machine trusts l as it is now, its prompt
// and verify commands, and makes it the foreground loop of session as
// SetForegroundLoop does. Starting a loop adopts it; a loop that came
// with a checkout is adopted only when a person asks (`baton loop
// adopt`).
func (s *Store) AdoptLoop(ctx context.Context, session string, l *baton.Loop) (previous string, err error) {
	return s.setForeground(ctx, session, l, true)
}

func (s *Store) setForeground(ctx context.Context, session string, l *baton.Loop, adopt bool) (previous string, err error) {
	id := l.ID
	if err := baton.CheckID("loop", id); err != nil {
		return "", err
	}
	if len(session) > maxSessionKey {
		return "", baton.Errorf(baton.Invalid, "session id is over %d bytes", maxSessionKey)
	}
	err = s.swapForeground(ctx, func(f *Foreground) (bool, error) {
		if !adopt && !f.Trusts(l) {
			return false, ForeignError(l)
		}
		if session == "" {
			previous = f.Unbound
		} else {
			previous = f.Sessions[session]
		}
		if previous == id && f.Of(session) == id && (!adopt || f.Trusts(l)) {
			return false, nil
		}
		if adopt {
			if f.Adopted == nil {
				f.Adopted = map[string]string{}
			}
			f.Adopted[id] = LoopDigest(l)
		}
		f.without(id)
		if session == "" {
			f.Unbound = id
			return true, nil
		}
		if f.Sessions == nil {
			f.Sessions = map[string]string{}
		}
		f.Sessions[session] = id
		return true, nil
	})
	return previous, err
}

// ForeignError is the Conflict of a loop this machine does not trust as
// it is.
func ForeignError(l *baton.Loop) error {
	return baton.Errorf(baton.Conflict, "loop %s came with the repository (or changed since this machine adopted it): baton neither runs its commands nor gives its prompt to an agent until you read them with `baton loop show %s` and adopt it with `baton loop adopt %s`", l.ID, l.ID, l.ID)
}

// ClearForegroundLoop makes id no session's foreground loop, wherever it
// is, so an ending loop never clears another loop a session switched to.
// It reports whether id was a foreground loop.
func (s *Store) ClearForegroundLoop(ctx context.Context, id string) (bool, error) {
	cleared := false
	err := s.swapForeground(ctx, func(f *Foreground) (bool, error) {
		cleared = f.Has(id)
		f.without(id)
		return cleared, nil
	})
	return cleared, err
}

// swapForeground rewrites the pointer file under its lock; change edits
// the foreground loops and says whether to write them. Slots and records
// naming loops that are gone are dropped then.
func (s *Store) swapForeground(ctx context.Context, change func(*Foreground) (bool, error)) error {
	if err := s.mkIndexes(); err != nil {
		return err
	}
	p := s.indexPath(ForegroundLoopsFile)
	unlock, err := s.files.Lock(ctx, p)
	if err != nil {
		return refused(p+".lock", err)
	}
	defer unlock()
	f, err := s.readForeground()
	if err != nil && baton.ErrorCode(err) != baton.Invalid {
		return err
	}
	if err != nil {
		f = Foreground{} // a corrupt pointer is overwritten
	}
	if write, err := change(&f); err != nil || !write {
		return err
	}
	gone := func(id string) bool {
		_, err := os.Lstat(loops.path(s, id))
		return errors.Is(err, fs.ErrNotExist)
	}
	for sess, id := range f.Sessions {
		if gone(id) {
			delete(f.Sessions, sess)
		}
	}
	for id := range f.Adopted {
		if gone(id) {
			delete(f.Adopted, id)
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := s.files.WriteAtomic(p, append(b, '\n'), 0o644); err != nil {
		return err
	}
	s.sweep(filepath.Join(IndexesDir, filepath.Base(s.machineDir())))
	return nil
}

// ForegroundLoop returns the loop session continues (its own, else the
// unbound one), or nil when there is none. A pointer to a missing loop
// reads as no loop, and so does one to a loop this machine does not
// trust as it is now (a checkout changed its prompt or its commands):
// ForeignLoops lists those.
func (s *Store) ForegroundLoop(session string) (*baton.Loop, error) {
	f, err := s.Foreground()
	if err != nil {
		return nil, err
	}
	return s.LoopOf(f, session)
}

// LoopOf is ForegroundLoop with the foreground loops already read.
func (s *Store) LoopOf(f Foreground, session string) (*baton.Loop, error) {
	id := f.Of(session)
	if id == "" {
		return nil, nil
	}
	l, err := s.FindLoopByID(id)
	if baton.ErrorCode(err) == baton.NotFound || (err == nil && !f.Trusts(l)) {
		return nil, nil
	}
	return l, err
}

// LoopsSeenFile is the per-machine record of what NewForeignLoops last
// saw of each loop file: how to tell the file changed without reading
// it, and which version of the loop it last told as foreign (seen.go).
const LoopsSeenFile = "loops-seen"

// NewForeignLoops returns the active loops of the store this machine does
// not trust as they are (loops a checkout brought, and adopted loops
// whose prompt or verify commands a checkout changed) that it has not
// returned before in this version, and records them as returned: each is
// told once per prompt and commands, and again when it becomes active
// again. Unreadable loop files are returned as warnings.
//
// It reads only the loop files that changed since the last call: one
// fstatat per name in the loops directory tells, by inode, size,
// modification and change time, whether a file is the one recorded (a
// write in place cannot set its change time back; one recorded within a
// clock tick of its change is read again). It never builds the loop
// index, whose upkeep would then fall on every stop.
func (s *Store) NewForeignLoops(f Foreground) ([]*baton.Loop, []error, error) {
	if err := s.checkDirs(LoopsDir); err != nil {
		return nil, nil, err
	}
	dir, err := s.files.OpenDir(filepath.Join(Dir, LoopsDir), false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, refused(s.path(LoopsDir), err)
	}
	defer dir.Close()
	now := time.Now() // the file system's clock, whatever the store's
	names, err := dir.Names()
	if err != nil {
		return nil, nil, err
	}
	seenPath := s.indexPath(LoopsSeenFile)
	var seen seenLines
	if b, err := s.readFile(seenPath, maxIndexBytes); err == nil {
		seen = indexSeen(b) // damaged: every file is read again
	}
	next := make([]seenRecord, 0, len(names))
	var out []*baton.Loop
	var warnings []error
	changed := false
	for _, name := range names {
		id, ok := artifactID(name)
		if !ok {
			continue
		}
		fi, err := dir.Ident(name)
		if err != nil || !fi.Mode.IsRegular() {
			continue // gone meanwhile, or a link, a FIFO: never read
		}
		was, known := seen.find(id)
		rec := was
		var l *baton.Loop
		if !known || !was.current(fi) {
			if l, err = s.FindLoopByID(id); err != nil {
				if baton.ErrorCode(err) != baton.NotFound {
					warnings = append(warnings, err)
				}
				continue
			}
			rec = seenLoop{FileID: fi}
			rec.Mode = 0 // not recorded: only regular files are
			if racy(fi.Change, now) || racy(fi.Mod, now) {
				rec.Ino = 0 // a write in the same clock tick could follow: read it again next time
			}
			if l.Status == baton.LoopActive {
				rec.Active = LoopDigest(l)
			}
			if rec.Active != was.Active {
				was.Told = false // another version: told anew
			}
		}
		// Foreign now: active, and not as this machine adopted it.
		rec.Told = rec.Active != "" && f.Adopted[id] != rec.Active
		if rec.Told && !was.Told {
			if l == nil {
				if l, err = s.FindLoopByID(id); err != nil {
					warnings = append(warnings, err)
					continue
				}
			}
			out = append(out, l)
		}
		changed = changed || !known || rec != was
		next = append(next, seenRecord{id, rec})
	}
	// A record of a file now gone, or a line that is not one, is dropped
	// by writing the file anew.
	if changed || len(next) != len(seen) {
		if err := s.mkIndexes(); err == nil {
			_ = s.files.WriteCache(seenPath, formatSeen(next), 0o644) // lost: read again, told again, no harm
		}
	}
	slices.SortFunc(out, func(a, b *baton.Loop) int { return strings.Compare(a.ID, b.ID) })
	return out, warnings, nil
}
