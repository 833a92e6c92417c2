package fsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
)

// packets is the packet kind of artifact. Its writes are durable, as a
// loop's are: a handoff written just before a crash of the machine is
// what the next session picks up.
var packets = artifact[*baton.Packet]{
	durable: true,
	kind:    "packet", dir: PacketsDir, listHint: "baton packet list", index: PacketIndex,
	entryOf: packetEntry, peek: peekPacket,
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
// is none: the one the index names (among those created in the same
// second, the one written last), read from its file; a packet that cannot
// be read is passed over for the next.
func (s *Store) NewestPacket() (*baton.Packet, error) {
	for force := false; ; force = true {
		idx, err := packets.loadIndex(s, force)
		if err != nil {
			return nil, err
		}
		if idx.N == 0 {
			return nil, nil
		}
		p, stale, err := newestPacket(s, idx)
		if !stale || force {
			return p, err
		}
	}
}

// newestPacket reads the packet idx names the newest, or, when that one
// cannot be read, the next by creation. stale reports a file that says
// otherwise than the index.
func newestPacket(s *Store, idx *index) (*baton.Packet, bool, error) {
	e, ok, err := idx.lookup(idx.Newest) // near the top: the newest packet was written lately
	if err != nil || !ok {
		return nil, true, nil
	}
	p, same, err := packets.readEntry(s, e)
	if !same {
		return nil, true, nil
	}
	if err == nil {
		return p, false, nil
	}
	es, err := idx.all()
	if err != nil {
		return nil, true, nil
	}
	byCreated := slices.Clone(es)
	slices.SortStableFunc(byCreated, func(x, y entry) int { return cmp.Compare(y.Created, x.Created) })
	for _, e := range byCreated {
		p, same, err := packets.readEntry(s, e)
		if !same {
			return nil, true, nil
		}
		if err == nil {
			return p, false, nil
		}
	}
	return nil, false, nil
}

// NewestCreated is when the newest packet was created, from the index
// alone (zero when there is none): what the files touched since the last
// packet are counted from.
func (s *Store) NewestCreated() (time.Time, error) {
	idx, err := packets.loadIndex(s, false)
	if err != nil || idx.N == 0 {
		return time.Time{}, err
	}
	return time.Unix(idx.NewestCreated, 0).UTC(), nil
}

// NewestOfSession returns the newest packet written for a harness
// session, from the index (ok false when there is none): the walk stops
// at the first, which is the newest.
func (s *Store) NewestOfSession(sessionID string) (sum PacketSummary, ok bool, err error) {
	for force := false; ; force = true {
		idx, err := packets.loadIndex(s, force)
		if err != nil {
			return sum, false, err
		}
		for i := 0; ; i++ {
			e, more, err := idx.at(i)
			if err != nil && !force {
				break // a damaged line: rebuild
			}
			if err != nil || !more {
				return sum, false, err
			}
			if e.Session == sessionID {
				return e.packetSummary(), true, nil
			}
		}
	}
}

// PacketSummary is what the index records of a packet: enough to pick a
// packet without reading every one.
type PacketSummary struct {
	ID                   string
	Status               baton.PacketStatus
	CreatedAt, UpdatedAt time.Time
	SessionID            string
	Purpose              string
	// ModTime is the file's modification time, which orders packets
	// updated in the same second.
	ModTime time.Time
}

func (e entry) packetSummary() PacketSummary {
	return PacketSummary{ID: e.ID, Status: baton.PacketStatus(e.Status), CreatedAt: time.Unix(e.Created, 0).UTC(),
		UpdatedAt: time.Unix(e.Updated, 0).UTC(), SessionID: e.Session, Purpose: e.Title, ModTime: time.Unix(0, e.Mod)}
}

// PacketSummaries summarises every packet, newest updated_at first (within
// a second, the file written last; then by id, "x-10" before "x-9"), from
// the packet index, so hooks and pickup stay fast in a store with
// thousands of packets, or a few huge ones. Packets that cannot be read
// are returned as warnings.
func (s *Store) PacketSummaries() ([]PacketSummary, []error, error) {
	es, _, warnings, err := packets.allEntries(s)
	if err != nil {
		return nil, nil, err
	}
	out := make([]PacketSummary, len(es))
	for i, e := range es {
		out[i] = e.packetSummary()
	}
	return out, warnings, nil
}

// PacketQuery asks for one page of the packet list.
type PacketQuery struct {
	Status baton.PacketStatus // "" for all
	// Full reads each packet of the page whole (Packets); without it the
	// page is the index's summaries (Summaries), each checked against its
	// file's size and time.
	Full bool
	// Limit is the most packets on the page; 0 for all.
	Limit int
	// Cursor continues after the page whose Next it is; "" starts at the
	// newest packet.
	Cursor string
}

// PacketPage is one page of packets, newest updated_at first.
type PacketPage struct {
	Packets   []*baton.Packet // with PacketQuery.Full
	Summaries []PacketSummary // without it
	// Next is the cursor of the following page; "" on the last.
	Next string
	// More counts the packets after this page.
	More int
	// Skipped are the packets that cannot be read (on the first page).
	Skipped []error
}

// ListPackets returns one page of packets: the index picks them, and
// each is read from its file (Full) or its file's size and time checked
// against the index, so a page of twenty costs twenty reads or stats
// whatever the store holds. A cursor names a place in the order, not an offset, so
// packets written between two pages neither repeat nor vanish from the
// pages that follow.
func (s *Store) ListPackets(q PacketQuery) (PacketPage, error) {
	var after *stamp
	if q.Cursor != "" {
		c, err := parseCursor(q.Cursor)
		if err != nil {
			return PacketPage{}, err
		}
		after = &c
	}
	if q.Limit < 0 {
		return PacketPage{}, baton.Errorf(baton.Invalid, "a limit of %d packets: give a number of packets, or 0 for all", q.Limit)
	}
	for force := false; ; force = true {
		page, stale, err := listPackets(s, q, after, force)
		if !stale {
			return page, err
		}
	}
}

// listPackets makes a page from the index. stale reports a file that
// says otherwise than the index (then, unless the index was just rebuilt,
// the page is abandoned).
func listPackets(s *Store, q PacketQuery, after *stamp, force bool) (page PacketPage, stale bool, err error) {
	idx, warnings, err := packets.entries(s, force)
	if err != nil {
		return page, false, err
	}
	if after == nil {
		page.Skipped = warnings
	}
	for i := 0; ; i++ {
		e, ok, err := idx.at(i)
		if err != nil {
			return page, !force, err // a damaged line: rebuild
		}
		if !ok {
			break
		}
		if (after != nil && !newer(*after, e.stamp())) || (q.Status != "" && baton.PacketStatus(e.Status) != q.Status) {
			continue
		}
		if q.Limit > 0 && len(page.Packets)+len(page.Summaries) == q.Limit {
			if q.Status == "" {
				page.More = idx.N - i // every later entry is on a later page
				break
			}
			page.More++
			continue
		}
		if !q.Full {
			fi, err := os.Lstat(packets.path(s, e.ID))
			if err != nil || fi.ModTime().UnixNano() != e.Mod || fi.Size() != e.Size {
				if !force {
					return page, true, nil
				}
				continue
			}
			page.Summaries = append(page.Summaries, e.packetSummary())
			page.Next = cursorOf(e)
			continue
		}
		p, same, err := packets.readEntry(s, e)
		if !same && !force {
			return page, true, nil
		}
		if baton.ErrorCode(err) == baton.NotFound {
			continue // gone since the rebuild
		} else if err != nil {
			page.Skipped = append(page.Skipped, err)
			continue
		}
		page.Packets = append(page.Packets, p)
		page.Next = cursorOf(e)
	}
	if page.More == 0 {
		page.Next = ""
	}
	return page, false, nil
}

// cursorOf is the cursor after e: its updated_at, file time and id.
func cursorOf(e entry) string { return fmt.Sprintf("%d.%d.%s", e.Updated, e.Mod, e.ID) }

// parseCursor reads a cursor cursorOf made.
func parseCursor(c string) (stamp, error) {
	bad := baton.Errorf(baton.Invalid, "cursor %q is not one baton gave: list again without it", clipText(c))
	f := strings.SplitN(c, ".", 3)
	if len(f) != 3 || !baton.ValidID(f[2]) {
		return stamp{}, bad
	}
	updated, err1 := parseInt(f[0])
	mod, err2 := parseInt(f[1])
	if err1 != nil || err2 != nil {
		return stamp{}, bad
	}
	return stamp{id: f[2], at: time.Unix(updated, 0).UTC(), mod: time.Unix(0, mod)}, nil
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
// most recently updated packet of any status (Fallback). The index
// chooses, and just the winner is read; the unreadable packets it passes
// over are returned in Skipped. Packet is nil when no packet can be read.
func (s *Store) Latest() (LatestPacket, error) {
	for force := false; ; force = true {
		idx, warnings, err := packets.entries(s, force)
		if err != nil {
			return LatestPacket{}, err
		}
		l := LatestPacket{Skipped: warnings}
		p, fallback, skipped, stale, err := latestPacket(s, idx, force)
		if err != nil && !stale {
			return LatestPacket{}, err
		}
		if !stale {
			l.Packet, l.Fallback, l.Skipped = p, fallback, append(l.Skipped, skipped...)
			return l, nil
		}
	}
}

// latestPacket walks the index in listing order for the newest draft or
// active packet that can be read, remembering the newest of any status
// for the fallback: in a store of thousands it reads a line or two.
// stale reports a file (or a line) that says otherwise than the index.
func latestPacket(s *Store, idx *index, force bool) (p *baton.Packet, fallback bool, skipped []error, stale bool, err error) {
	open := func(status string) bool {
		return status == string(baton.PacketDraft) || status == string(baton.PacketActive)
	}
	var other []entry // not open, in order: the fallback's candidates
	read := func(e entry) (*baton.Packet, bool) {
		p, same, err := packets.readEntry(s, e)
		if !same && !force {
			stale = true // the file says otherwise: believe it, after a rebuild
			return nil, false
		}
		if baton.ErrorCode(err) == baton.NotFound {
			return nil, false
		} else if err != nil {
			skipped = append(skipped, err)
			return nil, false
		}
		return p, true
	}
	for i := 0; ; i++ {
		e, ok, err := idx.at(i)
		if err != nil {
			return nil, false, nil, !force, err
		}
		if !ok {
			break
		}
		if !open(e.Status) {
			other = append(other, e)
			continue
		}
		if p, ok := read(e); ok {
			return p, !open(string(p.Status)), skipped, false, nil
		} else if stale {
			return nil, false, nil, true, nil
		}
	}
	for _, e := range other {
		if p, ok := read(e); ok {
			return p, !open(string(p.Status)), skipped, false, nil
		} else if stale {
			return nil, false, nil, true, nil
		}
	}
	return nil, false, skipped, false, nil
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

// packetEntry is what the index records of a packet.
func packetEntry(p *baton.Packet) entry {
	return entry{ID: p.ID, Status: string(p.Status), Created: p.CreatedAt.Unix(), Updated: p.UpdatedAt.Unix(), Session: p.SessionID, Title: p.Purpose}
}

// peekPacket reads a packet's index entry from its first lines, for a
// packet written the way baton writes them, and reports false for
// anything else, which is then decoded in full: the entry must be what
// decoding would give.
func peekPacket(s *Store, path string) (entry, bool) {
	var e entry
	f, err := s.files.OpenRegular(path)
	if err != nil {
		return e, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > MaxArtifactBytes {
		return e, false // too large to read: decoding refuses it, naming it
	}
	e.Mod, e.Size = fi.ModTime().UnixNano(), fi.Size()
	var buf [peekHead]byte
	n, _ := io.ReadFull(f, buf[:])
	head := string(buf[:n])
	if !strings.HasPrefix(head, "---\n") {
		return e, false
	}
	var created, updated time.Time
	seen := map[string]bool{}
	for _, line := range strings.Split(head[4:], "\n") {
		if line == "---" {
			e.Created, e.Updated = created.Unix(), updated.Unix()
			ok := baton.PacketStatus(e.Status).Valid() && !created.IsZero() && !updated.IsZero() && e.Title != "" &&
				e.ID == strings.TrimSuffix(filepath.Base(path), ".md")
			return e, ok
		}
		key, val, _ := strings.Cut(line, ": ")
		if seen[key] {
			return e, false // a key twice: decoding refuses it
		}
		seen[key] = true
		var err error
		switch key {
		case "id":
			e.ID, err = peekString(val)
		case "status":
			e.Status = val
		case "created_at":
			created, err = parseUTC(val)
		case "updated_at":
			updated, err = parseUTC(val)
		case "session_id":
			e.Session, err = peekString(val)
		case "purpose":
			e.Title, err = peekString(val)
		}
		if err != nil {
			return e, false
		}
	}
	return e, false // no closing line in the first 2 KiB
}

// errNotPlain is a frontmatter value peekString leaves to the decoder.
var errNotPlain = errors.New("not a value as baton writes it")

// peekString reads a string value written the way baton writes one:
// plain when that reads back as itself, else a JSON string; one with
// escapes is left to the YAML decoder, whose escapes differ from JSON's.
func peekString(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		if strings.Contains(v, `\`) || len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return "", errNotPlain
		}
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return "", errNotPlain
		}
		return s, nil
	}
	if !frontmatter.PlainSafe(v) {
		return "", errNotPlain
	}
	return v, nil
}

func parseUTC(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	return t.UTC(), err
}
