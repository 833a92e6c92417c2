package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
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

func (s *Store) packetPath(id string) string { return s.path(PacketsDir, id+".md") }

// CreatePacket writes a new packet. When p.ID is empty it is made from the
// creation time and purpose; if that id is taken (two handoffs in the same
// second), a numeric suffix keeps both. The store is created on first use.
func (s *Store) CreatePacket(ctx context.Context, p *baton.Packet) error {
	if _, err := s.Init(ctx); err != nil {
		return err
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now().UTC().Truncate(time.Second)
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	if p.Status == "" {
		p.Status = baton.PacketDraft
	}
	base := p.ID
	if base == "" {
		base = baton.TimestampID(p.CreatedAt, p.Purpose, "packet")
	}
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id = base + "-" + strconv.Itoa(n)
		}
		p.ID = id
		if err := p.Validate(); err != nil {
			return err
		}
		err := createExclusive(s.packetPath(id), frontmatter.EncodePacket(p))
		if errors.Is(err, fs.ErrExist) {
			if n > 99 {
				return baton.Errorf(baton.Conflict, "packet id %s is taken", base)
			}
			continue
		}
		return err
	}
}

// createExclusive creates path with data atomically, failing with
// fs.ErrExist when path already exists: the content is written to a temp
// file first and then hard-linked into place, which fails if path exists.
func createExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// FindPacketByID reads one packet. Returns Invalid for a bad id or a
// corrupt file (the error names the file), NotFound when it does not exist.
func (s *Store) FindPacketByID(id string) (*baton.Packet, error) {
	if err := baton.CheckID("packet", id); err != nil {
		return nil, err
	}
	return s.readPacket(s.packetPath(id))
}

func (s *Store) readPacket(path string) (*baton.Packet, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		id := strings.TrimSuffix(filepath.Base(path), ".md")
		return nil, baton.WrapError(baton.NotFound, err, "packet %s not found: run `baton packet list` to see packets", id)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	p, err := frontmatter.DecodePacket(b)
	if err != nil {
		return nil, &CorruptError{Path: path, Err: err}
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".md"); p.ID != want {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("id %q does not match the file name", p.ID)}
	}
	return p, nil
}

// CorruptError names a store file that cannot be read and why.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s is corrupt: %v", e.Path, e.Err) }
func (e *CorruptError) Unwrap() error { return e.Err }

// PacketFilter narrows FindPackets. Zero values match everything.
type PacketFilter struct {
	Status baton.PacketStatus
}

// FindPackets lists packets, newest updated_at first (ties by id, newest
// first). Files that cannot be read are skipped and returned as warnings,
// so one bad file never hides the rest.
func (s *Store) FindPackets(filter PacketFilter) ([]*baton.Packet, []error, error) {
	ps, warnings, err := readArtifacts(s.path(PacketsDir), s.readPacket)
	if err != nil {
		return nil, nil, fmt.Errorf("list packets: %w", err)
	}
	out := ps[:0]
	for _, p := range ps {
		if filter.Status == "" || p.Status == filter.Status {
			out = append(out, p)
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

// readArtifacts reads every <id>.md in dir with read. Files that cannot be
// read are returned as warnings, so one bad file never hides the rest; a
// missing dir is empty.
func readArtifacts[T any](dir string, read func(path string) (T, error)) ([]T, []error, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	var out []T
	var warnings []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || !baton.ValidID(id) {
			continue // temp files of atomic writes start with '.', which ValidID refuses
		}
		v, err := read(filepath.Join(dir, e.Name()))
		if err != nil {
			warnings = append(warnings, err)
			continue
		}
		out = append(out, v)
	}
	return out, warnings, nil
}

// Latest is the packet reference that picks the packet to continue.
const Latest = "latest"

// ResolvePacket finds the packet ref names: an exact id, a unique id
// prefix, or "latest" (the most recently updated draft or active packet,
// else the most recently updated packet). Returns NotFound, or Conflict
// for an ambiguous prefix (the error lists the candidates).
func (s *Store) ResolvePacket(ref string) (*baton.Packet, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, baton.Errorf(baton.Invalid, "no packet named: give an id, a unique id prefix, or latest")
	}
	if ref == Latest {
		return s.latestPacket()
	}
	if err := baton.CheckID("packet", ref); err != nil {
		return nil, err
	}
	if p, err := s.FindPacketByID(ref); err == nil || baton.ErrorCode(err) != baton.NotFound {
		return p, err
	}
	// A prefix of the id, or of its slug: match file names, decode matches.
	entries, err := os.ReadDir(s.path(PacketsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list packets: %w", err)
	}
	var matches []*baton.Packet
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || !baton.ValidID(id) {
			continue
		}
		slug := id[min(len(id), len(baton.IDTimeLayout)+1):]
		if !strings.HasPrefix(id, ref) && !strings.HasPrefix(slug, ref) {
			continue
		}
		if p, err := s.FindPacketByID(id); err == nil {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 0:
		return nil, baton.Errorf(baton.NotFound, "no packet matches %q: run `baton packet list` to see packets", ref)
	case 1:
		return matches[0], nil
	}
	ids := make([]string, 0, len(matches))
	for _, m := range matches {
		ids = append(ids, m.ID)
	}
	return nil, baton.Errorf(baton.Conflict, "%q matches %d packets (%s): give more of the id", ref, len(ids), strings.Join(ids, ", "))
}

// UpdatePacket applies fn to the stored packet under its lock and writes
// the result atomically, bumping updated_at. fn's error aborts the update.
func (s *Store) UpdatePacket(ctx context.Context, id string, fn func(*baton.Packet) error) (*baton.Packet, error) {
	if err := baton.CheckID("packet", id); err != nil {
		return nil, err
	}
	path := s.packetPath(id)
	unlock, err := Lock(ctx, path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := s.readPacket(path)
	if err != nil {
		return nil, err
	}
	if err := fn(p); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Second)
	if now.Before(p.CreatedAt) {
		now = p.CreatedAt
	}
	p.UpdatedAt = now
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(path, frontmatter.EncodePacket(p), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// PacketPath returns the file of packet id (which must be valid).
func (s *Store) PacketPath(id string) (string, error) {
	if err := baton.CheckID("packet", id); err != nil {
		return "", err
	}
	return s.packetPath(id), nil
}

// NewestPacket returns the most recently created packet, or nil when there
// is none. Packet ids start with their UTC creation time, so it reads only
// the packet whose id sorts last, and falls back to a full listing when
// that file cannot be read or its name does not carry a timestamp.
func (s *Store) NewestPacket() (*baton.Packet, error) {
	entries, err := os.ReadDir(s.path(PacketsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list packets: %w", err)
	}
	newest := ""
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if ok && !e.IsDir() && baton.ValidID(id) && id > newest {
			newest = id
		}
	}
	if newest == "" {
		return nil, nil
	}
	if _, err := time.Parse(baton.IDTimeLayout, newest[:min(len(newest), len(baton.IDTimeLayout))]); err == nil {
		if p, err := s.FindPacketByID(newest); err == nil {
			return p, nil
		}
	}
	all, _, err := s.FindPackets(PacketFilter{})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	best := all[0]
	for _, p := range all[1:] {
		if p.CreatedAt.After(best.CreatedAt) {
			best = p
		}
	}
	return best, nil
}

// latestPacket is ResolvePacket("latest"): the most recently updated draft
// or active packet, else the most recently updated packet. It reads only
// the status and updated_at lines of each packet's frontmatter and decodes
// just the winner, so pickup stays fast in a store with hundreds of
// packets; a file whose lines it cannot read quickly is decoded in full.
func (s *Store) latestPacket() (*baton.Packet, error) {
	type cand struct {
		id      string
		updated time.Time
		open    bool
	}
	entries, err := os.ReadDir(s.path(PacketsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list packets: %w", err)
	}
	var cands []cand
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || !baton.ValidID(id) {
			continue
		}
		st, upd, ok := peekPacket(s.packetPath(id))
		if !ok {
			p, err := s.FindPacketByID(id)
			if err != nil {
				continue // listings skip unreadable packets
			}
			st, upd = p.Status, p.UpdatedAt
		}
		cands = append(cands, cand{id, upd, st == baton.PacketDraft || st == baton.PacketActive})
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.open != b.open {
			return a.open
		}
		if !a.updated.Equal(b.updated) {
			return a.updated.After(b.updated)
		}
		return a.id > b.id
	})
	for _, c := range cands {
		if p, err := s.FindPacketByID(c.id); err == nil {
			return p, nil
		}
	}
	return nil, baton.Errorf(baton.NotFound, "no packets yet: create one with `baton handoff <purpose>`")
}

// peekPacket reads status and updated_at from the first lines of a packet
// written the way baton writes them, and reports false for anything else.
func peekPacket(path string) (baton.PacketStatus, time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", time.Time{}, false
	}
	defer f.Close()
	var buf [2048]byte
	n, _ := io.ReadFull(f, buf[:])
	head := string(buf[:n])
	if !strings.HasPrefix(head, "---\n") {
		return "", time.Time{}, false
	}
	var status baton.PacketStatus
	var updated time.Time
	for _, line := range strings.Split(head[4:], "\n") {
		switch {
		case line == "---":
			return status, updated, status.Valid() && !updated.IsZero()
		case strings.HasPrefix(line, "status: "):
			status = baton.PacketStatus(strings.TrimPrefix(line, "status: "))
		case strings.HasPrefix(line, "updated_at: "):
			t, err := time.Parse(time.RFC3339, strings.TrimPrefix(line, "updated_at: "))
			if err != nil {
				return "", time.Time{}, false
			}
			updated = t.UTC()
		}
	}
	return "", time.Time{}, false // no closing line in the first 2 KiB
}
