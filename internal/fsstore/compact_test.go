package fsstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-agent/baton"
)

// compactionStore is a store with 70 packets an hour apart and a log over
// the compaction threshold: touches between the packets, people's
// confirmations (some attached to a packet), and fifty hours of touches
// since the newest packet, most of which compaction merges.
func compactionStore(t *testing.T) (*Store, []*baton.Packet) {
	t.Helper()
	ctx := context.Background()
	s := newStore(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ps []*baton.Packet
	for i := range 70 {
		p := testPacket(fmt.Sprintf("task %d", i))
		p.CreatedAt = t0.Add(time.Duration(i+1) * time.Hour)
		if err := s.CreatePacket(ctx, p); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	f, err := os.Create(s.indexPath(RelevantFilesLog))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	const n = 45_000 // about 4.5 MiB
	for i := range n {
		at := t0.Add(time.Duration(i) * (120 * time.Hour / n)).Truncate(time.Second)
		// Each hour's session works on 40 files of one package, and on a
		// few everybody touches.
		path := fmt.Sprintf("pkg%02d/f%03d.go", int(at.Sub(t0).Hours())%17, (i*31)%40)
		if i%10 == 0 {
			path = fmt.Sprintf("shared/f%d.go", i%3)
		}
		e := baton.RelevantFile{Timestamp: at, FilePath: path, Source: baton.FromTool, Confidence: 0.5}
		every := 1000
		if h := at.Sub(t0).Hours(); h > 71 && h < 75 {
			every = 50 // people confirm files since the newest packet too, long enough ago to be merged
		}
		switch {
		case i%every == 0:
			e.Source, e.Confidence = baton.FromUser, 1
			e.FilePath = fmt.Sprintf("shared/f%d.go", i%3)
		case i%every == 1: // the same file, confirmed into a packet
			e.Source, e.Confidence, e.PacketID = baton.FromUser, 1, ps[min(i*70/n, 69)].ID
			e.FilePath = fmt.Sprintf("shared/f%d.go", (i-1)%3)
		}
		enc.Encode(e)
	}
	w.Flush()
	f.Close()
	return s, ps
}

// listings are the Files answers compaction must keep.
func listings(t *testing.T, s *Store, ps []*baton.Packet) map[string]FileList {
	t.Helper()
	out := map[string]FileList{}
	reqs := map[string]FilesRequest{"pending": {}, "all": {All: true}, "all, top 5": {All: true, Limit: 5}}
	for _, i := range []int{69, 60, 30, 6, 5} {
		reqs["since "+ps[i].ID] = FilesRequest{Since: ps[i].ID}
	}
	for name, req := range reqs {
		l, err := s.Files(req)
		if err != nil {
			t.Fatalf("Files(%s) = %v", name, err)
		}
		l.SkippedLines = 0
		out[name] = l
	}
	return out
}

// An append that takes the log past the threshold compacts it: the log
// shrinks to its merged lines and its last MiB.
func TestLogCompaction(t *testing.T) {
	t.Parallel()
	s, ps := compactionStore(t)
	p := s.indexPath(RelevantFilesLog)
	fi, _ := os.Stat(p)
	// The next append compacts.
	touch := baton.RelevantFile{Timestamp: ps[69].CreatedAt.Add(100 * time.Hour), FilePath: "new.go", Source: baton.FromTool, Confidence: 0.5}
	if err := s.AppendRelevantFiles(context.Background(), touch); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if after.Size() > fi.Size()/2 {
		t.Fatalf("the log is %d bytes after compaction, %d before", after.Size(), fi.Size())
	}
	f, _ := os.Open(p)
	h, ok := readLogHeader(f, after.Size())
	f.Close()
	if !ok || h.Raw >= after.Size() || len(h.Intervals) != exactPackets+1 {
		t.Fatalf("compacted header = %+v, %v", h, ok)
	}

	// The append was compacted with the rest: new.go is in the listings.
	if l, err := s.Files(FilesRequest{Since: ps[69].ID, Limit: 1}); err != nil || len(l.Files) == 0 || l.Files[0].Path != "new.go" {
		t.Errorf("Files(since the newest) after compaction = %+v, %v; want new.go first", l.Files, err)
	}
}

// Compaction changes no answer of files: the default listing, the whole
// log, since each of the newest 64 packets; since an older packet, the
// listing says it is approximate. Compacting again changes nothing.
func TestLogCompactionKeepsListings(t *testing.T) {
	t.Parallel()
	s, ps := compactionStore(t)
	before := listings(t, s, ps)
	for round := range 3 {
		if err := s.compactLogNow(); err != nil {
			t.Fatal(err)
		}
		got := listings(t, s, ps)
		for name, want := range before {
			g := got[name]
			wantApprox := name == "since "+ps[5].ID
			if g.Approximate != wantApprox {
				t.Errorf("round %d: Files(%s).Approximate = %v, want %v", round, name, g.Approximate, wantApprox)
			}
			if wantApprox {
				continue
			}
			if diff := cmp.Diff(want, g, cmpopts.EquateApprox(0, 0.0011)); diff != "" {
				t.Errorf("round %d: Files(%s) changed by compaction (-before +after):\n%s", round, name, diff)
			}
		}
	}
}

// compactLogNow compacts whatever the log's size, for tests.
func (s *Store) compactLogNow() error { return s.compactLog(context.Background(), true) }

// A log where every touch is another file cannot keep every interval
// apart and still shrink: it merges the oldest intervals too.
func TestLogCompactionOfDistinctFiles(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 70 {
		p := testPacket(fmt.Sprintf("task %d", i))
		p.CreatedAt = t0.Add(time.Duration(i+1) * time.Hour)
		if err := s.CreatePacket(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(s.indexPath(RelevantFilesLog))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	const n = 60_000
	for i := range n {
		enc.Encode(baton.RelevantFile{Timestamp: t0.Add(time.Duration(i) * (71 * time.Hour / n)), FilePath: fmt.Sprintf("d%02d/f%05d.go", i%50, i%3000), Source: baton.FromTool, Confidence: 0.5})
	}
	w.Flush()
	f.Close()
	before, _ := s.Files(FilesRequest{All: true})
	fi, _ := os.Stat(s.indexPath(RelevantFilesLog))
	if err := s.compactLogNow(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(s.indexPath(RelevantFilesLog))
	if after.Size() > fi.Size()/2 {
		t.Errorf("the log is %d bytes after compaction, %d before", after.Size(), fi.Size())
	}
	got, _ := s.Files(FilesRequest{All: true})
	if diff := cmp.Diff(before, got, cmpopts.EquateApprox(0, 0.0011)); diff != "" {
		t.Errorf("compaction changed the whole log's listing (-before +after):\n%s", diff)
	}
}

// A log of files each touched once (a codegen run, a vendored tree) does
// not grow by compaction, and lists the same.
func TestLogCompactionOfSingleTouches(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f, err := os.Create(s.indexPath(RelevantFilesLog))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	const n = 20_000
	for i := range n {
		enc.Encode(baton.RelevantFile{Timestamp: t0.Add(time.Duration(i) * time.Second), FilePath: fmt.Sprintf("gen/f%05d.go", i), Source: baton.FromTool, Confidence: 0.5})
	}
	w.Flush()
	f.Close()
	before, _ := s.Files(FilesRequest{All: true})
	fi, _ := os.Stat(s.indexPath(RelevantFilesLog))
	if err := s.compactLogNow(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(s.indexPath(RelevantFilesLog))
	if after.Size() > fi.Size()+4<<10 {
		t.Errorf("compaction grew the log from %d to %d bytes", fi.Size(), after.Size())
	}
	got, _ := s.Files(FilesRequest{All: true})
	if diff := cmp.Diff(before, got, cmpopts.EquateApprox(0, 0.0011)); diff != "" {
		t.Errorf("compaction changed the listing (-before +after):\n%s", diff)
	}
}

// A damaged header costs speed, never an answer: the log is read whole.
func TestLogHeaderDamaged(t *testing.T) {
	t.Parallel()
	s, ps := compactionStore(t)
	if err := s.compactLogNow(); err != nil {
		t.Fatal(err)
	}
	before := listings(t, s, ps)
	p := s.indexPath(RelevantFilesLog)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	line, rest, _ := strings.Cut(string(b), "\n")
	for name, bad := range map[string]string{
		"offsets past the end": strings.Replace(line, `"raw":`, `"raw":9`, 1),
		"offsets mid-line":     strings.Replace(line, `"at":`, `"at":1`, 2),
		"not json":             line[:len(line)/2] + "}",
		"another version":      strings.Replace(line, `"version":1`, `"version":2`, 1),
	} {
		if err := os.WriteFile(p, []byte(bad+"\n"+rest), 0o644); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, listings(t, s, ps)); diff != "" {
			t.Errorf("%s: a damaged header changed a listing (-before +after):\n%s", name, diff)
		}
	}
}

// Processes append while others compact: every touch is counted once.
func TestConcurrentAppendsWithCompaction(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const workers, batches, perBatch = 4, 12, 1000 // about 12 MB: compacts twice or more
	var cmds []*exec.Cmd
	for w := range workers {
		c := helperCmd(t, "BATON_FSSTORE_HELPER=append-batches", "ROOT="+s.Root(), "N="+strconv.Itoa(batches), "BATCH="+strconv.Itoa(perBatch), "WORKER="+strconv.Itoa(w))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer failed: %v", err)
		}
	}
	ranks, st, err := s.RankFiles(FileQuery{})
	if err != nil || st.Corrupt != 0 {
		t.Fatalf("RankFiles = %+v, %v", st, err)
	}
	total := 0
	for _, r := range ranks {
		total += r.Count
		if want := workers * batches; r.Count != want {
			t.Errorf("%s counted %d times, want %d", r.Path, r.Count, want)
			break
		}
	}
	if total != workers*batches*perBatch {
		t.Errorf("%d touches counted, want %d", total, workers*batches*perBatch)
	}
	f, _ := os.Open(s.indexPath(RelevantFilesLog))
	defer f.Close()
	fi, _ := f.Stat()
	if _, ok := readLogHeader(f, fi.Size()); !ok {
		t.Errorf("the log was never compacted (%d bytes)", fi.Size())
	}
}

// helperAppendBatches appends N batches of BATCH touches, one per file.
func helperAppendBatches() int {
	s := Open(os.Getenv("ROOT"), Options{})
	n, _ := strconv.Atoi(os.Getenv("N"))
	per, _ := strconv.Atoi(os.Getenv("BATCH"))
	for range n {
		es := make([]baton.RelevantFile, per)
		for i := range es {
			es[i] = baton.RelevantFile{Timestamp: time.Now().UTC(), FilePath: fmt.Sprintf("dir/a-long-enough-path-to-fill-the-log/file-%05d.go", i), Source: baton.FromTool, Confidence: 0.5}
		}
		if err := s.AppendRelevantFiles(context.Background(), es...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}
