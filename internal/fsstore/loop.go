package fsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
// the foreground pointer: the caller decides that with SetForegroundLoop.
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
// first, from the loop index: each without its prompt and notes (read a
// loop with FindLoopByID for those). A loop whose file's size or time
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
			full.Prompt, full.Notes, full.Trailing, full.Extra = "", "", nil, nil
			l = full
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

// activeLoop is indexes/active-loop.json.
type activeLoop struct {
	ActiveLoopID string `json:"active_loop_id"`
}

// ForegroundLoopID returns the id in indexes/active-loop.json, or "" when
// there is no foreground loop. A corrupt pointer is an Invalid error.
func (s *Store) ForegroundLoopID() (string, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return "", err
	}
	p := s.indexPath(ActiveLoopFile)
	b, err := readFile(p, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if r := (*RefusedError)(nil); errors.As(err, &r) {
		r.Hint += ", or run `baton loop activate <id>`, which replaces it"
		return "", err
	} else if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var a activeLoop
	if err := json.Unmarshal(b, &a); err != nil {
		return "", &baton.Error{Code: baton.Invalid, Err: &CorruptError{Path: p, Err: err, Hint: "fix it, or run `baton loop activate <id>`, which replaces it"}}
	}
	if a.ActiveLoopID != "" && !baton.ValidID(a.ActiveLoopID) {
		return "", baton.Errorf(baton.Invalid, "%s names an invalid loop id %q: run `baton loop activate <id>`", p, a.ActiveLoopID)
	}
	return a.ActiveLoopID, nil
}

// SetForegroundLoop points indexes/active-loop.json at id ("" clears it)
// and returns the id it pointed at before.
func (s *Store) SetForegroundLoop(ctx context.Context, id string) (previous string, err error) {
	if id != "" {
		if err := baton.CheckID("loop", id); err != nil {
			return "", err
		}
	}
	return s.swapForeground(ctx, func(cur string) (string, bool) { return id, true })
}

// ClearForegroundLoop clears the pointer only if it still names id, so an
// ending loop never clears a loop the user switched to meanwhile. It
// reports whether it cleared the pointer.
func (s *Store) ClearForegroundLoop(ctx context.Context, id string) (bool, error) {
	cleared := false
	_, err := s.swapForeground(ctx, func(cur string) (string, bool) {
		cleared = cur == id
		return "", cleared
	})
	return cleared, err
}

// swapForeground rewrites the pointer under its lock; next returns the new
// id and whether to write it.
func (s *Store) swapForeground(ctx context.Context, next func(cur string) (string, bool)) (string, error) {
	if err := s.checkDirs(IndexesDir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.path(IndexesDir), 0o755); err != nil {
		return "", err
	}
	p := s.indexPath(ActiveLoopFile)
	unlock, err := safefile.Lock(ctx, p)
	if err != nil {
		return "", refused(p+".lock", err)
	}
	defer unlock()
	cur, err := s.ForegroundLoopID()
	if err != nil && baton.ErrorCode(err) != baton.Invalid {
		return "", err // a corrupt pointer is overwritten
	}
	id, write := next(cur)
	if !write || id == cur {
		return cur, nil
	}
	b, err := json.Marshal(activeLoop{ActiveLoopID: id})
	if err != nil {
		return "", err
	}
	if err := safefile.WriteAtomic(p, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	s.sweep(IndexesDir)
	return cur, nil
}

// ForegroundLoop returns the loop the pointer names, or nil when there is
// none. A pointer to a missing loop reads as no loop.
func (s *Store) ForegroundLoop() (*baton.Loop, error) {
	id, err := s.ForegroundLoopID()
	if err != nil || id == "" {
		return nil, err
	}
	l, err := s.FindLoopByID(id)
	if baton.ErrorCode(err) == baton.NotFound {
		return nil, nil
	}
	return l, err
}
