package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
	"github.com/baton-agent/baton/internal/safefile"
)

// loops is the loop kind of artifact.
var loops = artifact[*baton.Loop]{
	kind: "loop", dir: LoopsDir, listHint: "baton loop list", index: LoopIndex, entryOf: loopEntry,
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

// ForegroundLoopsFile is indexes/foreground-loops.json: the loop each
// session's stops continue, and the one no session has taken yet.
const ForegroundLoopsFile = "foreground-loops.json"

// Foreground is which loop each session continues. Two sessions in one
// project each run their own loop; a loop started outside any session
// waits, unbound, for the first session that stops without a loop of its
// own.
type Foreground struct {
	// Sessions maps a session id to the loop its stops continue.
	Sessions map[string]string `json:"sessions,omitempty"`
	// Unbound is the loop no session has taken yet ("" when none).
	Unbound string `json:"unbound,omitempty"`
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

// seedPointer is the seed's indexes/active-loop.json, which named one
// foreground loop for the whole project.
type seedPointer struct {
	ActiveLoopID string `json:"active_loop_id"`
}

// maxSessionKey bounds a session id kept in the pointer file.
const maxSessionKey = 256

// Foreground reads the foreground loops. A store written by the seed has
// only indexes/active-loop.json: its loop is read as the foreground loop
// of the session it is bound to (or as the unbound one), and the first
// change rewrites it in the new file. A corrupt pointer is an Invalid
// error whose hint says how to replace it.
func (s *Store) Foreground() (Foreground, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return Foreground{}, err
	}
	f, found, err := s.readForeground(ForegroundLoopsFile)
	if found || err != nil {
		return f, err
	}
	f, _, err = s.readForeground(ActiveLoopFile)
	return f, err
}

// readForeground reads one pointer file, new or seed; found is false when
// it does not exist.
func (s *Store) readForeground(name string) (f Foreground, found bool, err error) {
	p := s.indexPath(name)
	b, err := readFile(p, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Foreground{}, false, nil
	} else if r := (*RefusedError)(nil); errors.As(err, &r) {
		r.Hint += ", or run `baton loop activate <id>`, which replaces it"
		return Foreground{}, true, err
	} else if err != nil {
		return Foreground{}, true, fmt.Errorf("read %s: %w", p, err)
	}
	corrupt := func(err error) error {
		return &baton.Error{Code: baton.Invalid, Err: &CorruptError{Path: p, Err: err, Hint: "fix it, or run `baton loop activate <id>`, which replaces it"}}
	}
	if name == ActiveLoopFile {
		var seed seedPointer
		if err := json.Unmarshal(b, &seed); err != nil {
			return Foreground{}, true, corrupt(err)
		}
		if seed.ActiveLoopID == "" {
			return Foreground{}, true, nil
		}
		if !baton.ValidID(seed.ActiveLoopID) {
			return Foreground{}, true, baton.Errorf(baton.Invalid, "%s names an invalid loop id %q: run `baton loop activate <id>`", p, seed.ActiveLoopID)
		}
		// The seed kept one pointer for the project: it is the foreground
		// loop of the one session the loop is bound to.
		l, err := s.FindLoopByID(seed.ActiveLoopID)
		switch {
		case baton.ErrorCode(err) == baton.NotFound:
			return Foreground{}, true, nil
		case err != nil:
			return Foreground{}, true, err
		case l.SessionID == "":
			return Foreground{Unbound: l.ID}, true, nil
		}
		return Foreground{Sessions: map[string]string{l.SessionID: l.ID}}, true, nil
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return Foreground{}, true, corrupt(err)
	}
	for sess, id := range f.Sessions {
		if sess == "" || len(sess) > maxSessionKey || !baton.ValidID(id) {
			return Foreground{}, true, corrupt(fmt.Errorf("session %.40q names loop %.80q", sess, id))
		}
	}
	if f.Unbound != "" && !baton.ValidID(f.Unbound) {
		return Foreground{}, true, corrupt(fmt.Errorf("unbound names loop %.80q", f.Unbound))
	}
	return f, true, nil
}

// ForegroundLoopID returns the loop session continues (its own, else the
// unbound one), or "" when there is none.
func (s *Store) ForegroundLoopID(session string) (string, error) {
	f, err := s.Foreground()
	return f.Of(session), err
}

// SetForegroundLoop makes id the foreground loop of session ("" makes it
// the unbound loop, for the first session that stops), removing it from
// any other slot, and returns the loop that slot named before.
func (s *Store) SetForegroundLoop(ctx context.Context, session, id string) (previous string, err error) {
	if err := baton.CheckID("loop", id); err != nil {
		return "", err
	}
	if len(session) > maxSessionKey {
		return "", baton.Errorf(baton.Invalid, "session id is over %d bytes", maxSessionKey)
	}
	err = s.swapForeground(ctx, func(f *Foreground) bool {
		if session == "" {
			previous = f.Unbound
		} else {
			previous = f.Sessions[session]
		}
		if previous == id && f.Of(session) == id {
			return false
		}
		f.without(id)
		if session == "" {
			f.Unbound = id
			return true
		}
		if f.Sessions == nil {
			f.Sessions = map[string]string{}
		}
		f.Sessions[session] = id
		return true
	})
	return previous, err
}

// ClearForegroundLoop makes id no session's foreground loop, wherever it
// is, so an ending loop never clears another loop a session switched to.
// It reports whether id was a foreground loop.
func (s *Store) ClearForegroundLoop(ctx context.Context, id string) (bool, error) {
	cleared := false
	err := s.swapForeground(ctx, func(f *Foreground) bool {
		cleared = f.Has(id)
		f.without(id)
		return cleared
	})
	return cleared, err
}

// swapForeground rewrites the pointer file under its lock; change edits
// the foreground loops and says whether to write them. A seed pointer is
// migrated by the first write, and slots naming loops that are gone are
// dropped then.
func (s *Store) swapForeground(ctx context.Context, change func(*Foreground) bool) error {
	if err := s.checkDirs(IndexesDir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.path(IndexesDir), 0o755); err != nil {
		return err
	}
	p := s.indexPath(ForegroundLoopsFile)
	unlock, err := safefile.Lock(ctx, p)
	if err != nil {
		return refused(p+".lock", err)
	}
	defer unlock()
	f, found, err := s.readForeground(ForegroundLoopsFile)
	seed := false
	if !found && err == nil {
		f, seed, err = s.readForeground(ActiveLoopFile)
	}
	if err != nil && baton.ErrorCode(err) != baton.Invalid {
		return err
	}
	if err != nil {
		f = Foreground{} // a corrupt pointer is overwritten
	}
	if !change(&f) && !seed {
		return nil
	}
	for sess, id := range f.Sessions {
		if _, err := os.Lstat(loops.path(s, id)); errors.Is(err, fs.ErrNotExist) {
			delete(f.Sessions, sess)
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := safefile.WriteAtomic(p, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if seed {
		// The seed's pointer now lives in the new file.
		if err := os.Remove(s.indexPath(ActiveLoopFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	s.sweep(IndexesDir)
	return nil
}

// ForegroundLoop returns the loop session continues (its own, else the
// unbound one), or nil when there is none. A pointer to a missing loop
// reads as no loop.
func (s *Store) ForegroundLoop(session string) (*baton.Loop, error) {
	id, err := s.ForegroundLoopID(session)
	if err != nil || id == "" {
		return nil, err
	}
	l, err := s.FindLoopByID(id)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil, nil
	}
	return l, err
}
