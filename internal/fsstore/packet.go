package fsstore

import (
	"context"
	"encoding/json"
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
// the packet whose id sorts last (among those created in the same second,
// the one written last), and falls back to a full listing when that file
// cannot be read or its name does not carry a timestamp.
func (s *Store) NewestPacket() (*baton.Packet, error) {
	ids, err := packets.ids(s)
	if err != nil {
		return nil, err
	}
	var best stamp
	timed := true
	for _, id := range ids {
		at, err := time.Parse(baton.IDTimeLayout, id[:min(len(id), len(baton.IDTimeLayout))])
		if err != nil {
			timed = false // a name without its time: only a full listing can tell
			break
		}
		if c := (stamp{id: id, at: at}); best.id == "" || !c.at.Before(best.at) {
			c.mod = modTime(s.packetPath(id))
			if best.id == "" || newer(c, best) {
				best = c
			}
		}
	}
	if timed && best.id != "" {
		if p, err := s.FindPacketByID(best.id); err == nil {
			return p, nil
		}
	}
	all, _, err := s.FindPackets(PacketFilter{})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	newest := all[0]
	for _, p := range all[1:] {
		if p.CreatedAt.After(newest.CreatedAt) {
			newest = p
		}
	}
	return newest, nil
}

// PacketSummary is what the first lines of a packet say: enough to pick
// a packet without decoding every one.
type PacketSummary struct {
	ID                   string
	Status               baton.PacketStatus
	CreatedAt, UpdatedAt time.Time
	SessionID            string
	// ModTime is the file's modification time, which orders packets
	// updated in the same second.
	ModTime time.Time
}

// PacketSummaries summarises every packet, newest updated_at first (within
// a second, the file written last; then by id, "x-10" before "x-9"). It reads only the frontmatter lines of packets
// written the way baton writes them, so hooks and pickup stay fast in a
// store with hundreds of packets, or a few huge ones; a file it cannot
// summarise that way is decoded in full, and one that cannot be read at
// all is returned as a warning.
func (s *Store) PacketSummaries() ([]PacketSummary, []error, error) {
	ids, err := packets.ids(s)
	if err != nil {
		return nil, nil, err
	}
	var out []PacketSummary
	var warnings []error
	for _, id := range ids {
		sum, ok := peekPacket(s.packetPath(id))
		if !ok {
			p, err := s.FindPacketByID(id)
			if err != nil {
				warnings = append(warnings, err)
				continue
			}
			sum = PacketSummary{Status: p.Status, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, SessionID: p.SessionID, ModTime: modTime(s.packetPath(id))}
		}
		sum.ID = id
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool {
		return newer(stamp{out[i].ID, out[i].UpdatedAt, out[i].ModTime}, stamp{out[j].ID, out[j].UpdatedAt, out[j].ModTime})
	})
	return out, warnings, nil
}

// LatestPacket is the packet "latest" names, and how it was chosen.
type LatestPacket struct {
	Packet *baton.Packet
	// Fallback is set when no draft or active packet could be read and
	// Packet is the most recently updated one of another status.
	Fallback bool
	// Skipped are the packets that could not be read on the way.
	Skipped []error
}

// Latest finds the packet `baton pickup latest` and the session-start hook
// continue: the most recently updated draft or active packet, else the
// most recently updated packet of any status (Fallback). It decodes just
// the winner, and the unreadable packets it passes over are returned in
// Skipped. Packet is nil when no packet can be read.
func (s *Store) Latest() (LatestPacket, error) {
	sums, warnings, err := s.PacketSummaries()
	if err != nil {
		return LatestPacket{}, err
	}
	l := LatestPacket{Skipped: warnings}
	open := func(p PacketSummary) bool { return p.Status == baton.PacketDraft || p.Status == baton.PacketActive }
	sort.SliceStable(sums, func(i, j int) bool { return open(sums[i]) && !open(sums[j]) })
	for _, c := range sums {
		p, err := s.FindPacketByID(c.ID)
		if err != nil {
			l.Skipped = append(l.Skipped, err)
			continue
		}
		l.Packet, l.Fallback = p, !open(c)
		return l, nil
	}
	return l, nil
}

// latestPacket is ResolvePacket("latest").
func (s *Store) latestPacket() (*baton.Packet, error) {
	l, err := s.Latest()
	if err != nil {
		return nil, err
	}
	if l.Packet == nil {
		if len(l.Skipped) > 0 {
			return nil, l.Skipped[0]
		}
		return nil, baton.Errorf(baton.NotFound, "no packets yet: create one with `baton handoff <purpose>`")
	}
	return l.Packet, nil
}

// peekHead is how much of a packet peekPacket reads.
const peekHead = 2048

// peekPacket reads status, times and session from the first lines of a
// packet written the way baton writes them, and reports false for
// anything else.
func peekPacket(path string) (PacketSummary, bool) {
	var sum PacketSummary
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return sum, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		sum.ModTime = fi.ModTime()
	}
	var buf [peekHead]byte
	n, _ := io.ReadFull(f, buf[:])
	head := string(buf[:n])
	if !strings.HasPrefix(head, "---\n") {
		return sum, false
	}
	for _, line := range strings.Split(head[4:], "\n") {
		key, val, _ := strings.Cut(line, ": ")
		var err error
		switch key {
		case "---":
			return sum, line == "---" && sum.Status.Valid() && !sum.UpdatedAt.IsZero() && !sum.CreatedAt.IsZero()
		case "status":
			sum.Status = baton.PacketStatus(val)
		case "created_at":
			sum.CreatedAt, err = parseUTC(val)
		case "updated_at":
			sum.UpdatedAt, err = parseUTC(val)
		case "session_id":
			if strings.HasPrefix(val, `"`) {
				err = json.Unmarshal([]byte(val), &sum.SessionID)
			} else {
				sum.SessionID = val
			}
		}
		if err != nil {
			return sum, false
		}
	}
	return sum, false // no closing line in the first 2 KiB
}

func parseUTC(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	return t.UTC(), err
}
