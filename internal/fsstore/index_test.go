package fsstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-agent/baton"
)

func sampleEntries() []entry {
	return []entry{
		{ID: "20261122T093400Z-b", Status: "active", Created: 1763800440, Updated: 1763800500, Mod: 1763800500000000002, Size: 300,
			Session: "s 1\t\"x\"", Title: "", Loop: loopFields{Iteration: 3, MaxIterations: 20, Blocks: 1, Outcome: "", SourcePacket: "p1", Compacted: "p2"},
			Promises: []string{"DONE", "all \"green\"", ""}},
		{ID: "20261122T093400Z-a", Status: "done", Created: 1763800441, Updated: 1763800440, Mod: 1, Size: 1, Promises: nil,
			Title: "ünïcödé\nline", Loop: loopFields{Outcome: "DONE"}},
	}
}

func sampleIndex() *index {
	return newIndex("loop", dirStamp{Mod: 1764117300123456789, Ino: 42, Size: 4096, Count: 3, Racy: true}, sampleEntries(), []string{"20261122T000000Z-bad", "20261122T000000Z-worse"})
}

// header is what an index says of itself.
type header struct {
	Kind          string
	Stamp         dirStamp
	N             int
	Newest        string
	NewestCreated int64
	Bad           []string
	Entries       []entry
}

func headerOf(t testing.TB, idx *index) header {
	t.Helper()
	es, err := idx.all()
	if err != nil {
		t.Fatalf("reading the entries: %v", err)
	}
	return header{idx.Kind, idx.Stamp, idx.N, idx.Newest, idx.NewestCreated, idx.Bad, es}
}

func TestIndexRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleIndex()
	got, err := decodeIndex(encodeIndex(want), "loop")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(headerOf(t, want), headerOf(t, got)); diff != "" {
		t.Errorf("decodeIndex(encodeIndex(x)) mismatch (-want +got):\n%s", diff)
	}
	if got.Newest != "20261122T093400Z-a" || got.N != 2 {
		t.Errorf("newest = %s of %d; want 20261122T093400Z-a of 2", got.Newest, got.N)
	}
	b := encodeIndex(want)
	for _, bad := range [][]byte{
		b[:len(b)-1], // no final newline
		b[:len(b)/2], // cut
		[]byte(strings.Replace(string(b), "stamp 1764117300123456789", "stamp 1764117300123456788", 1)), // the head changed: its checksum no longer fits
		[]byte(strings.Replace(string(b), "\nend\n", "\nend\ne\tx\n", 1)),                               // longer than its head says
		[]byte(strings.Replace(string(b), "baton-index 5 loop", "baton-index 5 packet", 1)),             // another kind
	} {
		if _, err := decodeIndex(bad, "loop"); err == nil {
			t.Errorf("decodeIndex accepted a damaged index:\n%s", bad)
		}
	}
	if _, err := decodeIndex(b, "packet"); err == nil {
		t.Errorf("decodeIndex read a loop index as a packet index")
	}
	// Entry lines zeroed (a crash before the data reached the disk): found
	// when read.
	zeroed := slices.Clone(b)
	at := strings.Index(string(zeroed), "e\t")
	for i := at; i < at+20; i++ {
		zeroed[i] = 0
	}
	if idx, err := decodeIndex(zeroed, "loop"); err == nil {
		if _, err := idx.all(); err == nil {
			t.Error("an index with zeroed entry lines read without an error")
		}
	}
	// A line out of order: found when read.
	es := sampleEntries()
	es[0], es[1] = es[1], es[0]
	idx, err := decodeIndex(encodeIndex(newIndex("loop", dirStamp{}, es, nil)), "loop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.all(); err == nil {
		t.Error("an index with entries out of order read without an error")
	}
}

// An index larger than its head is read in two steps: the head and the
// newest entries, then the rest when a reader gets there, from the same
// file only.
func TestIndexReadInPart(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var es []entry
	for i := range 2000 {
		es = append(es, entry{ID: fmt.Sprintf("20261122T%06dZ-packet-with-a-long-enough-name", 999999-i), Status: "done", Created: int64(2000 - i), Updated: int64(2000 - i), Title: strings.Repeat("purpose ", 8)})
	}
	whole := newIndex("packet", dirStamp{Mod: 7}, es, nil)
	p := s.indexPath(PacketIndex)
	if err := os.WriteFile(p, encodeIndex(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() *index {
		t.Helper()
		idx, err := packets.readIndex(s)
		if err != nil {
			t.Fatal(err)
		}
		if idx.src == nil || len(idx.body) > indexHead || idx.N != 2000 || idx.Newest != es[0].ID {
			t.Fatalf("readIndex read %d bytes of entries (partly: %v), %d entries, newest %s", len(idx.body), idx.src != nil, idx.N, idx.Newest)
		}
		return idx
	}
	idx := read()
	if e, ok, err := idx.at(3); err != nil || !ok || e.ID != es[3].ID {
		t.Errorf("at(3) = %v, %v, %v", e.ID, ok, err)
	}
	got, err := idx.all()
	if err != nil || len(got) != 2000 || got[1999].ID != es[1999].ID {
		t.Fatalf("all() = %d entries, %v", len(got), err)
	}
	// Replaced between the head and the rest: the rest is not taken from
	// the new file.
	idx = read()
	if err := os.WriteFile(p+".new", encodeIndex(newIndex("packet", dirStamp{Mod: 8}, es[:1500], nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.all(); err == nil {
		t.Error("the rest of a replaced index was read")
	}
}

// The line a write changes is spliced in: the result is the index of
// the new set of entries.
func TestIndexWith(t *testing.T) {
	t.Parallel()
	es := sampleEntries()
	idx := newIndex("loop", dirStamp{Mod: 9}, es[1:], []string{es[0].ID})
	got, err := idx.with(es[0], true) // a new newest, once unreadable
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(headerOf(t, newIndex("loop", dirStamp{Mod: 9}, es, nil)), headerOf(t, got), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("with(new) mismatch (-want +got):\n%s", diff)
	}
	older := es[0]
	older.Updated, older.Mod = 1, 0 // rewritten to sort last
	got, err = got.with(older, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(headerOf(t, newIndex("loop", dirStamp{Mod: 9}, []entry{es[1], older}, nil)), headerOf(t, got), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("with(replaced) mismatch (-want +got):\n%s", diff)
	}
}

// FuzzDecodeIndex: whatever bytes the index file holds, decoding and
// reading every entry never panics, and an index read whole is one
// encodeIndex writes back to the same index: valid ids and statuses, in
// listing order, as many lines as its header says, its newest among them.
func FuzzDecodeIndex(f *testing.F) {
	f.Add(encodeIndex(sampleIndex()), "loop")
	p := newIndex("packet", dirStamp{Mod: 5, Count: 1}, []entry{{ID: "x", Status: "draft", Title: "a packet"}}, nil)
	f.Add(encodeIndex(p), "packet")
	f.Add(encodeIndex(newIndex("packet", dirStamp{}, nil, nil)), "packet")
	f.Fuzz(func(t *testing.T, b []byte, kind string) {
		// Read in part (as a hook reads a large index): never a panic,
		// and never entries the whole file does not hold.
		var head []entry
		if part, _, err := decodeHead(slices.Clone(b[:len(b)/2]), int64(len(b)), kind); err == nil {
			part.src = nil // no file to read the rest from
			if es, err := part.all(); err == nil {
				head = es
			}
		}
		idx, err := decodeIndex(b, kind)
		if err != nil {
			return
		}
		if whole, err := idx.all(); err == nil && len(head) > 0 && !cmp.Equal(head, whole[:min(len(head), len(whole))], cmpopts.EquateEmpty()) {
			t.Fatalf("the head's entries %v are not the first of the whole %v", head, whole)
		}
		es, err := idx.all()
		if err != nil {
			return
		}
		if len(es) != idx.N {
			t.Fatalf("%d entries, the header says %d", len(es), idx.N)
		}
		for i, e := range es {
			if !baton.ValidID(e.ID) || !validStatus(kind, e.Status) {
				t.Fatalf("accepted entry %+v", e)
			}
			if i > 0 && !newerEntry(&es[i-1], &e) {
				t.Fatalf("accepted entries out of order: %s before %s", es[i-1].ID, e.ID)
			}
		}
		again, err := decodeIndex(encodeIndex(newIndex(kind, idx.Stamp, es, idx.Bad)), kind)
		if err != nil {
			t.Fatalf("decodeIndex(encodeIndex(decoded)) = %v", err)
		}
		if diff := cmp.Diff(es, headerOf(t, again).Entries, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("re-encoding changed the entries (-first +second):\n%s", diff)
		}
		if again.Stamp != idx.Stamp || !slices.Equal(again.Bad, idx.Bad) {
			t.Fatalf("re-encoding changed the header: %+v %v, then %+v %v", idx.Stamp, idx.Bad, again.Stamp, again.Bad)
		}
	})
}

// FuzzIndexEntryRoundTrip: any entry the store can record comes back
// from the file as it went in.
func FuzzIndexEntryRoundTrip(f *testing.F) {
	f.Add("20261122T093400Z-a", "done", int64(1), int64(2), int64(3), "s", "purpose", 1, "DONE\x00x", "out")
	f.Fuzz(func(t *testing.T, id, status string, created, updated, mod int64, session, title string, iter int, promises, outcome string) {
		kind := "packet"
		if baton.LoopStatus(status).Valid() {
			kind = "loop"
		}
		if !baton.ValidID(id) || !validStatus(kind, status) {
			return
		}
		e := entry{ID: id, Status: status, Created: created, Updated: updated, Mod: mod, Size: int64(len(title)), Session: session, Title: title}
		if kind == "loop" {
			e.Loop = loopFields{Iteration: iter, MaxIterations: -iter, Blocks: iter / 2, Outcome: outcome, SourcePacket: session, Compacted: title}
			if promises != "" {
				e.Promises = strings.Split(promises, "\x00")
			}
		}
		want := newIndex(kind, dirStamp{Mod: mod, Ino: uint64(updated), Size: created, Count: iter & 0xffff}, []entry{e}, nil)
		got, err := decodeIndex(encodeIndex(want), kind)
		if err != nil {
			t.Fatalf("decodeIndex(encodeIndex(%+v)) = %v", e, err)
		}
		if diff := cmp.Diff(headerOf(t, want), headerOf(t, got)); diff != "" {
			t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
		}
	})
}

// packetIDs lists what the store says it holds, from the index.
func packetIDs(t *testing.T, s *Store) []string {
	t.Helper()
	sums, _, err := s.PacketSummaries()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range sums {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids
}

// writePacketFile writes a packet the way another program (git, a person)
// would: without baton, so without touching the index.
func writePacketFile(t *testing.T, s *Store, id, status string) {
	t.Helper()
	b := "---\nid: " + id + "\ncreated_at: 2026-11-20T08:00:00Z\nupdated_at: 2026-11-20T08:00:00Z\nstatus: " + status + "\npurpose: from elsewhere\n---\n"
	if err := os.WriteFile(s.packetPath(id), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The index never hides a packet: one another program adds, removes or
// rewrites is seen by the next reader, and a writer that finds the index
// stale does not make it look current.
func TestIndexFollowsTheFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	clock := fixedClock()
	reopen := func() *Store { return Open(s.Root(), Options{Now: func() time.Time { return clock().Add(time.Hour) }}) }
	a := testPacket("first")
	if err := s.CreatePacket(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := packetIDs(t, s); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("packets = %v, want %v", got, []string{a.ID})
	}
	if _, err := os.Stat(s.indexPath(PacketIndex)); err != nil {
		t.Fatalf("a listing wrote no index: %v", err)
	}

	// Added by git, in a fresh process (no cached index).
	writePacketFile(t, s, "20261120T080000Z-pulled", "draft")
	s = reopen()
	if got := packetIDs(t, s); !slices.Equal(got, []string{"20261120T080000Z-pulled", a.ID}) {
		t.Errorf("after another program added a packet: %v", got)
	}

	// Added in the same tick of the filesystem's clock as baton's last
	// write: the directory's time is as the index recorded it, but the
	// stamp was racy, so the names are counted.
	b := testPacket("second")
	if err := s.CreatePacket(ctx, b); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Dir(), PacketsDir)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	writePacketFile(t, s, "20261120T090000Z-same-tick", "draft")
	if err := os.Chtimes(dir, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	s = reopen()
	if got := packetIDs(t, s); !slices.Contains(got, "20261120T090000Z-same-tick") {
		t.Errorf("a packet added in the same clock tick is not listed: %v", got)
	}

	// The same, with a write next instead of a read: the writer does not
	// count the names, the stamp it records stays racy, and the next
	// reader counts and finds the packet the writer did not know of.
	if fi, err = os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	writePacketFile(t, s, "20261120T093000Z-same-tick-then-write", "draft")
	if err := os.Chtimes(dir, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	third := testPacket("third")
	if err := reopen().CreatePacket(ctx, third); err != nil {
		t.Fatal(err)
	}
	idx, err := packets.readIndex(s)
	if err != nil || !idx.Stamp.Racy {
		t.Errorf("the stamp a writer recorded without counting is not racy: %+v, %v", idx, err)
	}
	s = reopen()
	if got := packetIDs(t, s); !slices.Contains(got, "20261120T093000Z-same-tick-then-write") {
		t.Errorf("a packet added in the same clock tick, then a write: not listed: %v", got)
	}
	if err := os.Remove(s.packetPath(third.ID)); err != nil { // the rest wants "second" newest
		t.Fatal(err)
	}

	// Removed by git.
	if err := os.Remove(s.packetPath("20261120T080000Z-pulled")); err != nil {
		t.Fatal(err)
	}
	if got := packetIDs(t, s); slices.Contains(got, "20261120T080000Z-pulled") {
		t.Errorf("a removed packet is still listed: %v", got)
	}

	// Rewritten in place (the directory does not change): latest reads
	// the file it picks, sees the difference and rebuilds.
	if l, err := s.Latest(); err != nil || l.Packet == nil || l.Packet.ID != b.ID {
		t.Fatalf("Latest() = %+v, %v; want %s", l.Packet, err, b.ID)
	}
	body, err := os.ReadFile(s.packetPath(b.ID))
	if err != nil {
		t.Fatal(err)
	}
	done := strings.Replace(string(body), "status: draft", "status: done", 1)
	f, err := os.OpenFile(s.packetPath(b.ID), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(done)
	f.Close()
	if l, err := s.Latest(); err != nil || l.Packet == nil || l.Packet.ID == b.ID {
		t.Errorf("Latest() after the packet was marked done in place = %+v, %v; want another packet", l.Packet, err)
	}

	// The same for a listing: a summary whose file changed is not shown
	// as the index had it.
	body, _ = os.ReadFile(s.packetPath(a.ID))
	if err := os.WriteFile(s.packetPath(a.ID), []byte(strings.Replace(string(body), "purpose: first", "purpose: first, renamed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListPackets(PacketQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range page.Summaries {
		if p.ID == a.ID && p.Purpose != "first, renamed" {
			t.Errorf("ListPackets after an edit in place lists %s as %q", a.ID, p.Purpose)
		}
	}

	// A writer that finds the index stale (a packet added behind its
	// back) records nothing over it; the next reader sees both.
	writePacketFile(t, s, "20261120T100000Z-behind", "draft")
	c := testPacket("third")
	if err := s.CreatePacket(ctx, c); err != nil {
		t.Fatal(err)
	}
	if idx, err := packets.readIndex(s); err == nil {
		if es, _ := idx.all(); !slices.ContainsFunc(es, func(e entry) bool { return e.ID == "20261120T100000Z-behind" }) {
			t.Errorf("the writer recorded its packet in a stale index:\n%s", encodeIndex(idx))
		}
	}
	got := packetIDs(t, Open(s.Root(), Options{}))
	if !slices.Contains(got, "20261120T100000Z-behind") || !slices.Contains(got, c.ID) {
		t.Errorf("after a write over a stale index: %v", got)
	}
}

// A checkout can put anything where the index goes: a link, a FIFO, a
// huge or damaged file. Reads answer from the files, at once, and the
// index is rebuilt as a regular file.
func TestIndexHostileFiles(t *testing.T) {
	t.Parallel()
	plants := map[string]func(p string) error{
		"a link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"a link to another file": func(p string) error {
			return os.Symlink(filepath.Join(filepath.Dir(p), "..", "root.json"), p)
		},
		"a named pipe": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"a huge file": func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(maxIndexBytes + 1)
		},
		"garbage":   func(p string) error { return os.WriteFile(p, []byte("baton-index 1 packet\nstamp x\n"), 0o644) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t)
			p := testPacket("the work")
			if err := s.CreatePacket(ctx, p); err != nil {
				t.Fatal(err)
			}
			idxPath := s.indexPath(PacketIndex)
			os.Remove(idxPath)
			if err := plant(idxPath); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				l, err := s.Latest()
				if err != nil || l.Packet == nil || l.Packet.ID != p.ID {
					t.Errorf("Latest() with %s as the index = %+v, %v", name, l.Packet, err)
				}
				page, err := s.ListPackets(PacketQuery{Limit: 10, Full: true})
				if err != nil || len(page.Packets) != 1 {
					t.Errorf("ListPackets with %s as the index = %+v, %v", name, page, err)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("reading the store blocked on %s as its index", name)
			}
			fi, err := os.Lstat(idxPath)
			if name != "directory" && (err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20) {
				t.Errorf("the index was not rebuilt over %s: %v, %v", name, fi, err)
			}
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Pages follow one another without repeating or losing a packet, even
// when packets are written between two pages.
func TestListPacketsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	var all []string
	for i := range 7 {
		p := testPacket("task " + string(rune('a'+i)))
		if err := s.CreatePacket(ctx, p); err != nil {
			t.Fatal(err)
		}
		all = append([]string{p.ID}, all...)
	}
	var got []string
	cursor := ""
	for n := 0; ; n++ {
		full := n%2 == 1 // whole packets, or the index's summaries
		page, err := s.ListPackets(PacketQuery{Limit: 3, Cursor: cursor, Full: full})
		if err != nil {
			t.Fatal(err)
		}
		if full != (len(page.Packets) > 0) || len(page.Packets)+len(page.Summaries) > 3 {
			t.Fatalf("page %d = %+v", n, page)
		}
		for _, p := range page.Packets {
			got = append(got, p.ID)
		}
		for _, p := range page.Summaries {
			got = append(got, p.ID)
		}
		if n == 0 {
			if page.More != 4 {
				t.Errorf("first page More = %d, want 4", page.More)
			}
			if err := s.CreatePacket(ctx, testPacket("written between pages")); err != nil {
				t.Fatal(err)
			}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if _, err := s.ListPackets(PacketQuery{Cursor: "nonsense"}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("ListPackets(bad cursor) error = %v, want Invalid", err)
	}
	done, err := s.ListPackets(PacketQuery{Status: baton.PacketDone})
	if err != nil || len(done.Summaries) != 0 {
		t.Errorf("ListPackets(done) = %+v, %v; want none", done, err)
	}
}

// FuzzParseCursor: a cursor is either refused or names a place that
// cursorOf writes back the same way.
func FuzzParseCursor(f *testing.F) {
	f.Add(cursorOf(entry{ID: "20261122T093400Z-a.b", Updated: 1763800440, Mod: 17}))
	f.Add("1.2.x")
	f.Fuzz(func(t *testing.T, c string) {
		st, err := parseCursor(c)
		if err != nil {
			return
		}
		if again := cursorOf(entry{ID: st.id, Updated: st.at.Unix(), Mod: st.mod.UnixNano()}); again != c {
			t.Fatalf("parseCursor(%q) = %+v, which writes back as %q", c, st, again)
		}
	})
}

// Listing loops reads the index, not every loop file, but a loop file
// changed behind the index's back is read again.
func TestListLoopsFromIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	l := testLoop("keep going")
	if err := s.CreateLoop(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateLoop(ctx, l.ID, func(l *baton.Loop) error { l.Iteration = 5; return nil }); err != nil {
		t.Fatal(err)
	}
	ls, warns, err := s.ListLoops(LoopFilter{})
	if err != nil || len(warns) > 0 || len(ls) != 1 || ls[0].Iteration != 5 || ls[0].Prompt != "" {
		t.Fatalf("ListLoops() = %+v, %v, %v; want the loop at iteration 5, without its prompt", ls, warns, err)
	}
	b, _ := os.ReadFile(loops.path(s, l.ID))
	if err := os.WriteFile(loops.path(s, l.ID), []byte(strings.Replace(string(b), "iteration: 5", "iteration: 17", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, _, err = s.ListLoops(LoopFilter{})
	if err != nil || len(ls) != 1 || ls[0].Iteration != 17 {
		t.Errorf("ListLoops() after an edit in place = %+v, %v; want iteration 17", ls, err)
	}
}

// A racy stamp is counted once after the clock moved on, and the count
// is written down beside the index, so later readers need not count: the
// settled file speaks of that index only.
func TestIndexSettledFile(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if _, _, err := s.PacketSummaries(); err != nil { // an index to keep
		t.Fatal(err)
	}
	if err := s.CreatePacket(context.Background(), testPacket("one")); err != nil {
		t.Fatal(err)
	}
	idx, err := packets.readIndex(s)
	if err != nil || !idx.Stamp.Racy {
		t.Fatalf("readIndex = %+v, %v; want the racy stamp its writer left", idx, err)
	}
	later := idx.Stamp
	later.Racy = false // as the directory reads once the clock moved on
	if !packets.current(s, idx, later) {
		t.Fatal("the index is not current")
	}
	ok := packets.indexPath(s) + settledSuffix
	if b, err := os.ReadFile(ok); err != nil || string(b) != settledLine(idx) {
		t.Fatalf("settled file = %q, %v; want %q", b, err, settledLine(idx))
	}
	// Another process believes it: it does not count (a name added in the
	// same tick as the stamp goes unseen, which is what counting was for).
	fresh, err := packets.readIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	writePacketFile(t, s, "20261120T080000Z-unseen", "draft")
	dir := filepath.Join(s.Dir(), PacketsDir)
	at := time.Unix(0, idx.Stamp.Mod)
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
	now, err := s.dirStamp(PacketsDir)
	if err != nil {
		t.Fatal(err)
	}
	now.Size = idx.Stamp.Size
	if !packets.current(s, fresh, now) {
		t.Error("a reader counted again although the stamp was settled")
	}
	// A settled file of another index is not believed.
	if err := os.WriteFile(ok, []byte(strings.Replace(settledLine(idx), "settled ", "settled 0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, _ = packets.readIndex(s)
	if packets.current(s, fresh, now) {
		t.Error("a settled file that names another index was believed")
	}
}

// A write to an index read in part splices its line in and copies the
// rest of the old file as it was: the file written is the index of the
// files, the same as one rebuilt from them.
func TestIndexWriteKeepsTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	for i := range 600 {
		id := fmt.Sprintf("20261101T%02d%02d00Z-task-%d", i/60, i%60, i)
		b := fmt.Sprintf("---\nid: %s\ncreated_at: 2026-11-01T%02d:%02d:00Z\nupdated_at: 2026-11-01T%02d:%02d:00Z\nstatus: done\npurpose: %s\n---\n",
			id, i/60, i%60, i/60, i%60, "task "+strings.Repeat("with a long purpose ", 4))
		if err := os.WriteFile(s.packetPath(id), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.PacketSummaries(); err != nil { // builds the index
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.indexPath(PacketIndex)); err != nil || fi.Size() <= indexHead {
		t.Fatalf("the index is %v bytes (%v); the test wants one larger than the head a reader reads", fi.Size(), err)
	}
	check := func(what string) {
		t.Helper()
		b, err := os.ReadFile(s.indexPath(PacketIndex))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeIndex(b, "packet")
		if err != nil {
			t.Fatalf("%s: the index written does not decode: %v", what, err)
		}
		want, err := packets.rebuildIndex(s, got.Stamp)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(headerOf(t, want), headerOf(t, got), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(header{}, "Stamp")); diff != "" {
			t.Errorf("%s: the index written (+) is not the files' (-):\n%s", what, diff)
		}
	}
	// Each in a process of its own: the index is read in part.
	fresh := func() *Store {
		return Open(s.Root(), Options{Now: func() time.Time { return time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) }})
	}
	p := testPacket("a new one")
	st := fresh()
	if err := st.CreatePacket(ctx, p); err != nil {
		t.Fatal(err)
	}
	check("a new packet")
	if idx := st.cachedIndex("packet"); idx == nil || idx.src == nil {
		t.Error("the write read the whole index: it should have read its head and copied the rest")
	}
	if _, err := fresh().UpdatePacket(ctx, "20261101T095900Z-task-599", func(p *baton.Packet) error { p.Status = baton.PacketActive; return nil }); err != nil {
		t.Fatal(err)
	}
	check("a recent packet updated")
	if _, err := fresh().UpdatePacket(ctx, "20261101T000000Z-task-0", func(p *baton.Packet) error { p.Status = baton.PacketBlocked; return nil }); err != nil {
		t.Fatal(err)
	}
	check("the oldest packet updated (its line beyond the part read)")
}

// The reads of one command share one count of a racy stamp's names; a
// process that lives on counts again once the count is older than
// recount, and finds what was added since.
func TestRacyCountStandsBriefly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	if err := s.CreatePacket(context.Background(), testPacket("first")); err != nil {
		t.Fatal(err)
	}
	packetIDs(t, s)
	idx := s.cachedIndex("packet")
	if idx == nil {
		t.Fatal("no cached index after a listing")
	}
	// As if the stamp were still racy and this process had just counted.
	idx.Stamp.Racy = true
	idx.settled.Store(false)
	os.Remove(s.indexPath(PacketIndex) + settledSuffix)
	dir := filepath.Join(s.Dir(), PacketsDir)
	writePacketFile(t, s, "20261120T090000Z-same-tick", "draft")
	at := time.Unix(0, idx.Stamp.Mod)
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
	idx.counted.Store(time.Now().UnixNano())
	if got := packetIDs(t, s); slices.Contains(got, "20261120T090000Z-same-tick") {
		t.Errorf("the names were counted again right after a count: %v", got)
	}
	idx.counted.Store(time.Now().Add(-2 * recount).UnixNano())
	if got := packetIDs(t, s); !slices.Contains(got, "20261120T090000Z-same-tick") {
		t.Errorf("a count older than %s still stood: %v", recount, got)
	}
}

// FileStamps are the files as the index records them; with stat, as they
// are now, which is the only way to see an edit made in place. A file
// the store refuses is left out with a warning, and Changes.String moves
// with every write.
func TestFileStamps(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	before, _ := s.Changes()
	p := &baton.Packet{Purpose: "stamped", Status: baton.PacketDraft}
	if err := s.CreatePacket(ctx, p); err != nil {
		t.Fatal(err)
	}
	after, _ := s.Changes()
	if before.String() == after.String() {
		t.Errorf("Changes().String() = %q before and after a packet was written", after)
	}
	path, _ := s.PacketPath(p.ID)
	stamps, warnings, err := s.PacketStamps(false)
	fi, _ := os.Stat(path)
	want := []FileStamp{{ID: p.ID, Path: path, Size: fi.Size(), Mod: fi.ModTime().UnixNano(), Updated: p.UpdatedAt.Unix()}}
	if err != nil || len(warnings) != 0 || !cmp.Equal(stamps, want) {
		t.Fatalf("PacketStamps(false) = %+v, %v, %v; want %+v", stamps, warnings, err, want)
	}
	// Since a time: the head of the listing, and how many there are.
	older := &baton.Packet{Purpose: "older", Status: baton.PacketDraft, CreatedAt: p.CreatedAt.Add(-time.Hour)}
	if err := s.CreatePacket(ctx, older); err != nil {
		t.Fatal(err)
	}
	if recent, total, warnings, err := s.PacketStampsSince(p.UpdatedAt); err != nil || len(warnings) != 0 || total != 2 || !cmp.Equal(recent, want) {
		t.Fatalf("PacketStampsSince(%v) = %+v, %d, %v, %v; want %+v of 2", p.UpdatedAt, recent, total, warnings, err, want)
	}
	if recent, total, _, err := s.PacketStampsSince(older.UpdatedAt); err != nil || total != 2 || len(recent) != 2 {
		t.Fatalf("PacketStampsSince(%v) = %+v, %d, %v; want both", older.UpdatedAt, recent, total, err)
	}
	if err := os.Remove(filepath.Join(s.Dir(), PacketsDir, older.ID+".md")); err != nil {
		t.Fatal(err)
	}
	if stamps, _, err := s.PacketStamps(false); err != nil || !cmp.Equal(stamps, want) { // the index, rebuilt
		t.Fatalf("PacketStamps(false) after a removal = %+v, %v; want %+v", stamps, err, want)
	}
	after, _ = s.Changes()
	// An edit in place: the directory and the index stay as they were.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(b, "\nmore\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Changes(); got.String() != after.String() {
		t.Errorf("an edit in place changed Changes(): %q, was %q", got, after)
	}
	if stamps, _, _ := s.PacketStamps(false); stamps[0].Size != want[0].Size {
		t.Errorf("PacketStamps(false) after an edit in place = %+v; want the index's stamp", stamps)
	}
	if stamps, _, _ := s.PacketStamps(true); stamps[0].Size != want[0].Size+6 {
		t.Errorf("PacketStamps(true) after an edit in place = %+v; want the file's size now", stamps)
	}
	// A named pipe in the loops directory is left out, never opened, as
	// every listing leaves it; a corrupt loop is left out with a warning.
	l := &baton.Loop{Prompt: "loop", Iteration: 1, MaxIterations: 3}
	if err := s.CreateLoop(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(s.Dir(), LoopsDir, "20261122T090000Z-fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), LoopsDir, "20261122T090001Z-broken.md"), []byte("---\nbroken"), 0o644); err != nil {
		t.Fatal(err)
	}
	stamps, warnings, err = s.LoopStamps(true)
	if err != nil || len(stamps) != 1 || stamps[0].ID != l.ID || len(warnings) != 1 || !strings.Contains(warnings[0].Error(), "broken") {
		t.Errorf("LoopStamps(true) with a FIFO and a corrupt loop = %+v, %v, %v; want the loop, and a warning naming the corrupt one", stamps, warnings, err)
	}
}

// A process that reads in order to write (a handoff, the pre-compact
// hook) takes a racy stamp as current without counting the names; the
// stamp its write records stays racy, and the next reader counts them
// and finds the packet the writer did not see.
func TestWriteFollowsLeavesTheCountToTheNextReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	packetIDs(t, s) // a listing makes the index that writes keep
	first := testPacket("first")
	if err := s.CreatePacket(ctx, first); err != nil {
		t.Fatal(err)
	}
	// As its write left it: a racy stamp nobody has counted yet (a loaded
	// machine may have taken longer than the racy window to record it).
	idx, err := packets.readIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.whole(); err != nil {
		t.Fatal(err)
	}
	idx.Stamp.Racy = true
	if err := s.files.WriteCache(s.indexPath(PacketIndex), encodeIndex(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.indexPath(PacketIndex) + settledSuffix)

	// Another program adds a newer packet in the same tick of the
	// filesystem's clock: the directory's time stays as recorded.
	dir := filepath.Join(s.Dir(), PacketsDir)
	at := time.Unix(0, idx.Stamp.Mod)
	const pulled = "20261122T100000Z-pulled"
	b := "---\nid: " + pulled + "\ncreated_at: 2026-11-22T10:00:00Z\nupdated_at: 2026-11-22T10:00:00Z\nstatus: draft\npurpose: from elsewhere\n---\n"
	if err := os.WriteFile(s.packetPath(pulled), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}

	w := Open(s.Root(), Options{Now: fixedClock()})
	w.WriteFollows()
	if p, err := w.NewestPacket(); err != nil || p == nil || p.ID != first.ID {
		t.Fatalf("NewestPacket, reading to write = %v, %v; want %s from the index, the names not counted", p, err, first.ID)
	}
	second := testPacket("second")
	if err := w.CreatePacket(ctx, second); err != nil {
		t.Fatal(err)
	}
	if idx, err := packets.readIndex(s); err != nil || !idx.Stamp.Racy {
		t.Errorf("the stamp a write after an uncounted read recorded is not racy: %+v, %v", idx, err)
	}

	r := Open(s.Root(), Options{Now: fixedClock()})
	want := []string{first.ID, second.ID, pulled}
	slices.Sort(want)
	if got := packetIDs(t, r); !slices.Equal(got, want) {
		t.Errorf("the next reader lists %v, want %v", got, want)
	}
	if p, err := r.NewestPacket(); err != nil || p == nil || p.ID != pulled {
		t.Errorf("the next reader's newest packet = %v, %v; want %s", p, err, pulled)
	}
}
