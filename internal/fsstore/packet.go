package fsstore

import (
	"context"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
	"github.com/baton-agent/baton/internal/safefile"
)

// packets is the packet kind of artifact.
var packets = artifact[*baton.Packet]{
	kind: "packet", dir: PacketsDir, listHint: "baton packet list",
	decode:   frontmatter.DecodePacket,
	encode:   frontmatter.EncodePacket,
	id:       func(p *baton.Packet) string { return p.ID },
	setID:    func(p *baton.Packet, id string) { p.ID = id },
	times:    func(p *baton.Packet) (*time.Time, *time.Time) { return &p.CreatedAt, &p.UpdatedAt },
	validate: func(p *baton.Packet) error { return p.Validate() },
}

func (s *Store) packetPath(id string) string { return packets.path(s, id) }

// CreatePacket writes a new packet. When p.ID is empty it is made from the
// creation time and purpose; if that id is taken (two handoffs in the same
// second), a numeric suffix keeps both. The store is created on first use.
func (s *Store) CreatePacket(ctx context.Context, p *baton.Packet) error {
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
	return packets.create(ctx, s, p, base)
}

// FindPacketByID reads one packet. Returns Invalid for a bad id or a
// corrupt file (the error names the file), NotFound when it does not exist.
func (s *Store) FindPacketByID(id string) (*baton.Packet, error) { return packets.find(s, id) }

// PacketFilter narrows FindPackets. Zero values match everything.
type PacketFilter struct {
	Status baton.PacketStatus
}

// FindPackets lists packets, newest updated_at first (ties by id, newest
// first). Files that cannot be read are skipped and returned as warnings,
// so one bad file never hides the rest.
func (s *Store) FindPackets(filter PacketFilter) ([]*baton.Packet, []error, error) {
	return packets.list(s, func(p *baton.Packet) bool { return filter.Status == "" || p.Status == filter.Status })
}

// Latest is the packet reference that picks the packet to continue.
const Latest = "latest"

// ResolvePacket finds the packet ref names: an exact id, a unique prefix of
// the id or of its slug, or "latest" (the most recently updated draft or
// active packet, else the most recently updated packet). Returns NotFound,
// or Conflict for an ambiguous prefix (the error lists the candidates).
func (s *Store) ResolvePacket(ref string) (*baton.Packet, error) {
	switch strings.TrimSpace(ref) {
	case "":
		return nil, baton.Errorf(baton.Invalid, "no packet named: give an id, a unique id prefix, or latest")
	case Latest:
		return s.latestPacket()
	}
	return packets.resolve(s, ref)
}

// UpdatePacket applies fn to the stored packet under its lock and writes
// the result atomically, bumping updated_at. fn's error aborts the update.
func (s *Store) UpdatePacket(ctx context.Context, id string, fn func(*baton.Packet) error) (*baton.Packet, error) {
	return packets.update(ctx, s, id, fn)
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
	ids, err := packets.ids(s)
	if err != nil {
		return nil, err
	}
	newest := ""
	for _, id := range ids {
		newest = max(newest, id)
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
	ids, err := packets.ids(s)
	if err != nil {
		return nil, err
	}
	var cands []cand
	for _, id := range ids {
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
	f, err := safefile.OpenRegular(path)
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
