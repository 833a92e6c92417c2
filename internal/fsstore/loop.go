package fsstore

import (
	"context"
	"encoding/json"
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
	"github.com/baton-agent/baton/internal/frontmatter"
)

func (s *Store) loopPath(id string) string { return s.path(LoopsDir, id+".md") }

// LoopPath returns the file of loop id (which must be valid).
func (s *Store) LoopPath(id string) (string, error) {
	if err := baton.CheckID("loop", id); err != nil {
		return "", err
	}
	return s.loopPath(id), nil
}

// CreateLoop writes a new loop. When l.ID is empty it is made from the
// creation time and the first line of the prompt; a taken id gets a
// numeric suffix. The store is created on first use. It does not touch
// the foreground pointer: the caller decides that with SetForegroundLoop.
func (s *Store) CreateLoop(ctx context.Context, l *baton.Loop) error {
	if _, err := s.Init(ctx); err != nil {
		return err
	}
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
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id = base + "-" + strconv.Itoa(n)
		}
		l.ID = id
		if err := l.Validate(); err != nil {
			return err
		}
		err := createExclusive(s.loopPath(id), frontmatter.EncodeLoop(l))
		if errors.Is(err, fs.ErrExist) {
			if n > 99 {
				return baton.Errorf(baton.Conflict, "loop id %s is taken", base)
			}
			continue
		}
		return err
	}
}

// FindLoopByID reads one loop. Returns Invalid for a bad id or a corrupt
// file (the error names the file), NotFound when it does not exist.
func (s *Store) FindLoopByID(id string) (*baton.Loop, error) {
	if err := baton.CheckID("loop", id); err != nil {
		return nil, err
	}
	return s.readLoop(s.loopPath(id))
}

func (s *Store) readLoop(path string) (*baton.Loop, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		id := strings.TrimSuffix(filepath.Base(path), ".md")
		return nil, baton.WrapError(baton.NotFound, err, "loop %s not found: run `baton loop list` to see loops", id)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	l, err := frontmatter.DecodeLoop(b)
	if err != nil {
		return nil, baton.WrapError(baton.Invalid, &CorruptError{Path: path, Err: err}, "loop file %s is corrupt", path)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".md"); l.ID != want {
		return nil, baton.WrapError(baton.Invalid, &CorruptError{Path: path, Err: fmt.Errorf("id %q does not match the file name", l.ID)}, "loop file %s is corrupt", path)
	}
	return l, nil
}

// LoopFilter narrows FindLoops. Zero values match everything.
type LoopFilter struct {
	Status baton.LoopStatus
}

// FindLoops lists loops, newest updated_at first (ties by id, newest
// first). Unreadable files are skipped and returned as warnings.
func (s *Store) FindLoops(filter LoopFilter) ([]*baton.Loop, []error, error) {
	ls, warnings, err := readArtifacts(s.path(LoopsDir), s.readLoop)
	if err != nil {
		return nil, nil, fmt.Errorf("list loops: %w", err)
	}
	out := ls[:0]
	for _, l := range ls {
		if filter.Status == "" || l.Status == filter.Status {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, warnings, nil
}

// ResolveLoop finds the loop ref names: an exact id or a unique prefix of
// the id (or of its slug). Returns NotFound, or Conflict for an ambiguous
// prefix.
func (s *Store) ResolveLoop(ref string) (*baton.Loop, error) {
	ref = strings.TrimSpace(ref)
	if err := baton.CheckID("loop", ref); err != nil {
		return nil, err
	}
	if l, err := s.FindLoopByID(ref); err == nil || baton.ErrorCode(err) != baton.NotFound {
		return l, err
	}
	all, _, err := s.FindLoops(LoopFilter{})
	if err != nil {
		return nil, err
	}
	var matches []string
	var found *baton.Loop
	for _, l := range all {
		if strings.HasPrefix(l.ID, ref) || strings.HasPrefix(l.ID[min(len(l.ID), len(baton.IDTimeLayout)+1):], ref) {
			matches = append(matches, l.ID)
			found = l
		}
	}
	switch len(matches) {
	case 0:
		return nil, baton.Errorf(baton.NotFound, "no loop matches %q: run `baton loop list` to see loops", ref)
	case 1:
		return found, nil
	}
	return nil, baton.Errorf(baton.Conflict, "%q matches %d loops (%s): give more of the id", ref, len(matches), strings.Join(matches, ", "))
}

// ErrUnchanged, returned by an UpdateLoop function, ends the update without
// writing: the loop is returned as read.
var ErrUnchanged = errors.New("loop unchanged")

// UpdateLoop applies fn to the stored loop under the loop file's lock and
// writes the result atomically, bumping updated_at. fn's error aborts the
// update; ErrUnchanged skips the write and is not an error. Every change of
// a loop's state (iteration, status, binding) goes through here, so
// concurrent hooks and commands never lose an increment.
func (s *Store) UpdateLoop(ctx context.Context, id string, fn func(*baton.Loop) error) (*baton.Loop, error) {
	if err := baton.CheckID("loop", id); err != nil {
		return nil, err
	}
	path := s.loopPath(id)
	unlock, err := Lock(ctx, path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, err := s.readLoop(path)
	if err != nil {
		return nil, err
	}
	if err := fn(l); errors.Is(err, ErrUnchanged) {
		return l, nil
	} else if err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Second)
	if now.Before(l.CreatedAt) {
		now = l.CreatedAt
	}
	l.UpdatedAt = now
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(path, frontmatter.EncodeLoop(l), 0o644); err != nil {
		return nil, err
	}
	return l, nil
}

// activeLoop is indexes/active-loop.json.
type activeLoop struct {
	ActiveLoopID string `json:"active_loop_id"`
}

// ForegroundLoopID returns the id in indexes/active-loop.json, or "" when
// there is no foreground loop. A corrupt pointer is an Invalid error.
func (s *Store) ForegroundLoopID() (string, error) {
	p := s.indexPath(ActiveLoopFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var a activeLoop
	if err := json.Unmarshal(b, &a); err != nil {
		return "", baton.WrapError(baton.Invalid, err, "%s is corrupt: fix it or run `baton loop activate <id>`", p)
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
	if err := os.MkdirAll(s.path(IndexesDir), 0o755); err != nil {
		return "", err
	}
	p := s.indexPath(ActiveLoopFile)
	unlock, err := Lock(ctx, p)
	if err != nil {
		return "", err
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
	if err := WriteFileAtomic(p, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
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
