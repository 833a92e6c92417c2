package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

type fixture struct {
	t   *testing.T
	st  *fsstore.Store
	ctx context.Context
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), now: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	f.st = fsstore.Open(t.TempDir(), fsstore.Options{Now: func() time.Time { f.now = f.now.Add(time.Second); return f.now }})
	if _, err := f.st.Init(f.ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) packet(purpose, body string) *baton.Packet {
	f.t.Helper()
	p := &baton.Packet{Status: baton.PacketDraft, Purpose: purpose, Source: "user",
		Sections: []baton.Section{{Heading: baton.SectionIntent, Body: "\n" + body + "\n"}}}
	if err := f.st.CreatePacket(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) search(q Query) []Result {
	f.t.Helper()
	res, _, err := Run(f.ctx, f.st, q)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func ids(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Kind)+":"+r.ID)
	}
	return out
}

// Packets, loop prompts and loop notes are found by their words, best
// match first, with a snippet, the artifact's id and its file.
func TestSearchFindsPacketsLoopsAndNotes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	auth := f.packet("Move sessions to JWT", "The login handler signs tokens; refresh tokens rotate on use.")
	f.packet("Cache the dashboard", "Render the dashboard from a cache warmed at start.")
	l := &baton.Loop{Prompt: "Port the token refresh to the new signer", Iteration: 1, MaxIterations: 5, CompletionPromises: []string{"DONE"},
		Notes: "\n- 2026-11-26T09:00:00Z the signer rejected expired tokens twice\n"}
	if err := f.st.CreateLoop(f.ctx, l); err != nil {
		t.Fatal(err)
	}
	res := f.search(Query{Text: "tokens"})
	if got := strings.Join(ids(res), " "); !strings.Contains(got, "packet:"+auth.ID) || !strings.Contains(got, "loop:"+l.ID) || !strings.Contains(got, "note:"+l.ID) || strings.Contains(got, "Cache") {
		t.Fatalf("search tokens = %v", got)
	}
	for _, r := range res {
		if !strings.Contains(r.Snippet, "«token") || r.Path == "" || !strings.HasPrefix(r.Path, f.st.Dir()) {
			t.Errorf("result %+v: want a snippet marking the word and the artifact's file", r)
		}
	}
	// Every word must match; the purpose (title) outweighs the body.
	if res := f.search(Query{Text: "JWT login"}); len(res) != 1 || res[0].ID != auth.ID || res[0].Title != "Move sessions to JWT" {
		t.Errorf("search JWT login = %+v", res)
	}
	if res := f.search(Query{Text: "signer", Kinds: []Kind{KindNote}}); len(res) != 1 || res[0].Kind != KindNote {
		t.Errorf("search signer in notes = %+v", res)
	}
	// No document with every word: those with any are ranked instead.
	if res := f.search(Query{Text: "dashboard nonexistentword"}); len(res) != 1 || !res[0].AnyWords {
		t.Errorf("search with one unknown word = %+v", res)
	}
	// The query's text is words, never FTS5 syntax.
	for _, q := range []string{`"tokens`, `tokens AND (`, `-tokens`, `NEAR(tokens`, `tokens*`, `title:tokens`, `tokens OR`} {
		if _, _, err := Run(f.ctx, f.st, Query{Text: q}); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
	if _, _, err := Run(f.ctx, f.st, Query{Text: "  ()  "}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("search with no words: %v, want Invalid", err)
	}
}

// The index follows the store: a new, changed or removed packet is
// indexed again at the next search, and nothing else is read again.
func TestSearchIsIncremental(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := 0; i < 5; i++ {
		f.packet("Packet about apples", "apples")
	}
	ix, err := Open(f.ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	rep, err := ix.Refresh(f.ctx)
	if err != nil || rep.Indexed != 5 {
		t.Fatalf("first refresh = %+v, %v", rep, err)
	}
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 0 || rep.Removed != 0 {
		t.Fatalf("refresh with nothing changed = %+v, %v", rep, err)
	}
	p := f.packet("Packet about pears", "pears")
	if _, err := f.st.UpdatePacket(f.ctx, p.ID, func(p *baton.Packet) error { p.Purpose = "Packet about plums"; return nil }); err != nil {
		t.Fatal(err)
	}
	path, _ := f.st.PacketPath(p.ID)
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 1 {
		t.Fatalf("refresh after one packet = %+v, %v", rep, err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "plums"}); len(res) != 1 || res[0].Path != path {
		t.Errorf("search plums = %+v", res)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "pears"}); len(res) != 1 {
		t.Errorf("search pears (still in the body) = %+v", res)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Removed != 1 {
		t.Fatalf("refresh after a removal = %+v, %v", rep, err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "plums"}); len(res) != 0 {
		t.Errorf("a removed packet is still found: %+v", res)
	}
	// A packet edited in place (by an editor, not baton) changes neither
	// its directory nor the store's index: it is seen at the next full
	// check, at most a minute later.
	apple, _ := f.st.ResolvePacket("latest")
	applePath, _ := f.st.PacketPath(apple.ID)
	edit := func(from, to string) {
		t.Helper()
		b, _ := os.ReadFile(applePath)
		if err := os.WriteFile(applePath, []byte(strings.Replace(string(b), from, to, -1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("about apples", "about quinces")
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 0 {
		t.Fatalf("refresh right after an in-place edit = %+v, %v; want it left to the full check", rep, err)
	}
	clock := time.Now().Add(2 * fullCheckEvery)
	ix.now = func() time.Time { return clock }
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 1 {
		t.Fatalf("full check after an in-place edit = %+v, %v", rep, err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "quinces"}); len(res) != 1 {
		t.Errorf("search quinces = %+v", res)
	}
	// The store's entry of the edited packet stays stale until its index
	// is rebuilt: the next change indexes the new packet, not the edited
	// one again.
	f.packet("Packet about kiwis", "kiwis")
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 1 {
		t.Fatalf("refresh after a new packet, with an edited one = %+v, %v; want only the new one indexed", rep, err)
	}
	// A corrupt packet is skipped and reported, the rest still found.
	os.WriteFile(filepath.Join(f.st.Dir(), fsstore.PacketsDir, "20261126T090000Z-broken.md"), []byte("---\nbroken"), 0o644)
	if rep, err := ix.Refresh(f.ctx); err != nil || len(rep.Skipped) != 1 {
		t.Errorf("refresh with a corrupt packet = %+v, %v", rep, err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "apples"}); len(res) != 5 { // the quince packet's body still says apples
		t.Errorf("search apples = %d results, want 5", len(res))
	}
}

// Transcripts are searched only when the project opts in: then the
// messages of the transcripts sessions.jsonl names are found, by session
// and file, and what a transcript gains is added at the next search.
func TestSearchTranscriptsOptIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.packet("Unrelated", "nothing here")
	tr := filepath.Join(t.TempDir(), "ce084a1e.jsonl")
	data, err := os.ReadFile("../transcript/testdata/usage_claude.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tr, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := baton.SessionRecord{SessionID: "ce084a1e", Harness: baton.HarnessClaude, TranscriptPath: tr, At: f.now}
	if err := f.st.AppendSession(f.ctx, rec); err != nil {
		t.Fatal(err)
	}
	if res := f.search(Query{Text: "greeting"}); len(res) != 0 {
		t.Fatalf("transcripts searched without opting in: %v", ids(res))
	}
	ix, err := Open(f.ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.SetTranscripts(f.ctx, true); err != nil {
		t.Fatal(err)
	}
	rep, err := ix.Refresh(f.ctx)
	if err != nil || rep.Messages != 3 || !rep.Transcripts {
		t.Fatalf("refresh with transcripts = %+v, %v", rep, err)
	}
	res, err := ix.Search(f.ctx, Query{Text: "greeting written"})
	if err != nil || len(res) != 1 || res[0].Kind != KindTranscript || res[0].ID != "ce084a1e" || res[0].Path != tr || !strings.Contains(res[0].Title, "claude session ce084a1e") {
		t.Fatalf("search in transcripts = %+v, %v", res, err)
	}
	// The transcript grows: only the new line is read.
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "now add a farewell"}})
	fh, _ := os.OpenFile(tr, os.O_APPEND|os.O_WRONLY, 0o644)
	fh.Write(append(line, '\n'))
	fh.Close()
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Messages != 1 {
		t.Fatalf("refresh after the transcript grew = %+v, %v", rep, err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "farewell"}); len(res) != 1 {
		t.Errorf("search farewell = %+v", res)
	}
	// Opting out drops them.
	if err := ix.SetTranscripts(f.ctx, false); err != nil {
		t.Fatal(err)
	}
	if res, _ := ix.Search(f.ctx, Query{Text: "farewell"}); len(res) != 0 {
		t.Errorf("transcripts still found after opting out: %+v", res)
	}
}

// The index is a file baton writes in the store: a link in its place is
// refused, never followed.
func TestSearchRefusesALinkedIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "elsewhere.db")
	dir, err := f.st.MakeIndexDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, File)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(f.ctx, f.st, Query{Text: "x"}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("search with a linked index: %v, want Invalid", err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the index was written through the link")
	}
}

// The store's .gitignore keeps the index out of git.
func TestSearchIndexIsNotCommitted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, err := os.ReadFile(filepath.Join(f.st.Dir(), ".gitignore"))
	if err != nil || !strings.Contains(string(b), "/indexes/search.db*") {
		t.Errorf(".gitignore = %q, %v", b, err)
	}
}

// A word in more documents than a query ranks is ranked among those
// indexed last: the query's cost is bounded whatever the project's size.
func TestSearchRanksAtMostMaxRanked(t *testing.T) {
	// Not parallel: it lowers maxRanked for the package.
	defer func(n int) { maxRanked = n }(maxRanked)
	maxRanked = 10
	f := newFixture(t)
	var newest []string
	for i := 0; i < 30; i++ {
		p := f.packet(fmt.Sprintf("Packet %d", i), "common words here")
		if i >= 20 {
			newest = append(newest, p.ID)
		}
	}
	res := f.search(Query{Text: "common", Limit: 30})
	if len(res) != 10 {
		t.Fatalf("search common = %d results, want the 10 ranked", len(res))
	}
	for _, r := range res {
		if !slices.Contains(newest, r.ID) {
			t.Errorf("%s ranked, but it is not among the 10 indexed last", r.ID)
		}
	}
	if res := f.search(Query{Text: "common words", Limit: 30}); len(res) != 10 {
		t.Errorf("search common words = %d results, want 10", len(res))
	}
}

// After a write, a refresh reads the head of the store's listing, what
// was written since the last one, and still sees every kind of change:
// a new packet, an old one updated, a packet that arrives with an older
// time (a checkout) and one removed by hand.
func TestSearchAfterWritesSeesEveryChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var old []*baton.Packet
	for i := range 30 {
		old = append(old, f.packet(fmt.Sprintf("Packet %d about apples", i), "apples"))
	}
	ix, err := Open(f.ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if rep, err := ix.Refresh(f.ctx); err != nil || rep.Indexed != 30 {
		t.Fatalf("first refresh = %+v, %v", rep, err)
	}
	find := func(word string, want int) {
		t.Helper()
		if _, err := ix.Refresh(f.ctx); err != nil {
			t.Fatal(err)
		}
		if res, err := ix.Search(f.ctx, Query{Text: word, Limit: 100}); err != nil || len(res) != want || slices.Contains(ids(res), "packet:"+old[2].ID) {
			t.Fatalf("search %s = %v, %v; want %d results, without %s (removed)", word, ids(res), err, want, old[2].ID)
		}
	}
	f.packet("Packet about pears", "pears")
	find("pears", 1)
	// The oldest packet, updated: the write puts it first in the listing.
	if _, err := f.st.UpdatePacket(f.ctx, old[0].ID, func(p *baton.Packet) error { p.Purpose = "Packet about plums"; return nil }); err != nil {
		t.Fatal(err)
	}
	find("plums", 1)
	// A packet written elsewhere days ago arrives (a pull): older than
	// anything the head holds.
	moved := f.st.Dir() + "/" + fsstore.PacketsDir + "/20200101T000000Z-figs.md"
	b, err := os.ReadFile(mustPath(t, f.st, old[1].ID))
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.NewReplacer("about apples", "about figs", old[1].ID, "20200101T000000Z-figs",
		baton.FormatTime(old[1].CreatedAt), "2020-01-01T00:00:00Z", baton.FormatTime(old[1].UpdatedAt), "2020-01-01T00:00:00Z").Replace(string(b)))
	if err := os.WriteFile(moved, b, 0o644); err != nil {
		t.Fatal(err)
	}
	find("figs", 1)
	// One removed by hand.
	if err := os.Remove(mustPath(t, f.st, old[2].ID)); err != nil {
		t.Fatal(err)
	}
	find("apples", 30) // 30, less the removed one, and the figs packet's body
}

func mustPath(t *testing.T, st *fsstore.Store, id string) string {
	t.Helper()
	p, err := st.PacketPath(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
