package fsstore

import (
	"github.com/baton-agent/baton/internal/gitx/gittest"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func mustMkdir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s := Open(t.TempDir(), Options{Now: fixedClock(), NewProjectID: func() string { return "11111111-2222-4333-8444-555555555555" }})
	if _, err := s.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	// A git repo with a nested package and no marker.
	repo := mustMkdir(t, filepath.Join(tmp, "repo"))
	gittest.Git(t, repo, "init", "-q")
	deep := mustMkdir(t, filepath.Join(repo, "a", "b", "c"))
	// A monorepo marker above a nested project.
	mono := mustMkdir(t, filepath.Join(tmp, "mono"))
	gittest.Git(t, mono, "init", "-q")
	if _, err := Open(mono, Options{}).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	monoDeep := mustMkdir(t, filepath.Join(mono, "services", "api", "internal"))
	// Outside git.
	plain := mustMkdir(t, filepath.Join(tmp, "plain", "x"))
	// A store made above a repository (a session started in $HOME).
	home := mustMkdir(t, filepath.Join(tmp, "home"))
	if _, err := Open(home, Options{}).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	homeRepo := mustMkdir(t, filepath.Join(home, "src", "app"))
	gittest.Git(t, homeRepo, "init", "-q")
	homeRepoDeep := mustMkdir(t, filepath.Join(homeRepo, "cmd"))

	tests := []struct {
		name, start, root string
		how               Found
	}{
		{"git root from nested dir", deep, repo, FoundGitRoot},
		{"git root itself", repo, repo, FoundGitRoot},
		{"marker from nested dir", monoDeep, mono, FoundMarker},
		{"marker at root", mono, mono, FoundMarker},
		{"outside git", plain, plain, FoundWorkDir},
		{"a store above the git root does not capture it", homeRepoDeep, homeRepo, FoundGitRoot},
		{"the store above serves outside repositories", home, home, FoundMarker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, how := Discover(tt.start)
			if root != tt.root || how != tt.how {
				t.Errorf("Discover(%s) = %s, %s; want %s, %s", tt.start, root, how, tt.root, tt.how)
			}
		})
	}

	// Creating a store in the nested git repo's subdir makes it the root
	// for everything below it, ahead of the git root.
	sub := filepath.Join(repo, "a")
	if _, err := Open(sub, Options{}).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	if root, how := Discover(deep); root != sub || how != FoundMarker {
		t.Errorf("after init in %s: Discover(%s) = %s, %s", sub, deep, root, how)
	}
	if got := StoresAbove(homeRepo); len(got) != 1 || got[0] != filepath.Join(home, Dir) {
		t.Errorf("StoresAbove(%s) = %v, want the store in %s", homeRepo, got, home)
	}
}

func TestInitIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r1, err := s.ReadRoot()
	if err != nil {
		t.Fatal(err)
	}
	s2 := Open(s.Root(), Options{NewProjectID: func() string { return "other" }})
	created, err := s2.Init(context.Background())
	if err != nil || created {
		t.Fatalf("second Init() = %v, %v; want false, nil", created, err)
	}
	r2, _ := s2.ReadRoot()
	if diff := cmp.Diff(r1, r2); diff != "" {
		t.Errorf("root.json changed on re-init (-want +got):\n%s", diff)
	}
	for _, d := range []string{PacketsDir, LoopsDir, IndexesDir, ScratchDir} {
		if fi, err := os.Stat(filepath.Join(s.Dir(), d)); err != nil || !fi.IsDir() {
			t.Errorf("%s missing after Init: %v", d, err)
		}
	}
	if r1.Version != baton.StoreVersion || r1.ProjectID == "" || r1.CreatedAt.IsZero() {
		t.Errorf("root.json = %+v; want version, project_id and created_at set", r1)
	}
}

func testPacket(purpose string) *baton.Packet {
	return &baton.Packet{Purpose: purpose, Preamble: "\n", Sections: []baton.Section{{Heading: baton.SectionIntent, Body: "\n" + purpose + "\n"}}}
}

func TestPacketsCreateListResolve(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	a, b, c := testPacket("auth refactor"), testPacket("auth refactor"), testPacket("billing migration")
	for _, p := range []*baton.Packet{a, b, c} {
		p.CreatedAt = time.Date(2026, 11, 22, 8, 34, 0, 0, time.UTC) // same second: ids collide
		if err := s.CreatePacket(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if a.ID != "20261122T083400Z-auth-refactor" || b.ID != "20261122T083400Z-auth-refactor-2" {
		t.Errorf("ids = %s, %s; want the second suffixed -2", a.ID, b.ID)
	}
	if _, err := s.UpdatePacket(ctx, a.ID, func(p *baton.Packet) error { p.Status = baton.PacketDone; return nil }); err != nil {
		t.Fatal(err)
	}
	list, warns, err := s.FindPackets(PacketFilter{})
	if err != nil || len(warns) != 0 {
		t.Fatalf("FindPackets() = %v, %v", warns, err)
	}
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	want := []string{a.ID, "20261122T083400Z-billing-migration", b.ID}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("FindPackets order mismatch (-want +got):\n%s", diff)
	}

	tests := []struct {
		ref, want string
		code      baton.Code
	}{
		{a.ID, a.ID, ""},
		{"billing", "20261122T083400Z-billing-migration", ""},
		{"20261122T083400Z-b", "20261122T083400Z-billing-migration", ""},
		{"auth", "", baton.Conflict},
		{"latest", "20261122T083400Z-billing-migration", ""}, // a is done: skip it
		{"nothing-like-it", "", baton.NotFound},
		{"../etc/passwd", "", baton.Invalid},
		{"/etc/passwd", "", baton.Invalid},
		{"", "", baton.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			p, err := s.ResolvePacket(tt.ref)
			if got := baton.ErrorCode(err); got != tt.code {
				t.Fatalf("ResolvePacket(%q) error = %v (code %q), want code %q", tt.ref, err, got, tt.code)
			}
			if err == nil && p.ID != tt.want {
				t.Errorf("ResolvePacket(%q) = %s, want %s", tt.ref, p.ID, tt.want)
			}
		})
	}
}

func TestPathTraversalIDsRejected(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, id := range []string{"../x", "..", "a/../../b", "/abs/path", "x/y", ".hidden", "a..b", strings.Repeat("a", 200), "-dash"} {
		if _, err := s.FindPacketByID(id); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("FindPacketByID(%q) error = %v, want Invalid", id, err)
		}
		if _, err := s.UpdatePacket(context.Background(), id, func(*baton.Packet) error { return nil }); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("UpdatePacket(%q) error = %v, want Invalid", id, err)
		}
		p := testPacket("x")
		p.ID = id
		if err := s.CreatePacket(context.Background(), p); baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("CreatePacket(id %q) error = %v, want Invalid", id, err)
		}
	}
}

func TestCorruptPacketSkippedInListing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	good := testPacket("good one")
	if err := s.CreatePacket(ctx, good); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(s.Dir(), PacketsDir, "20261122T000000Z-bad.md")
	if err := os.WriteFile(bad, []byte("---\nid: 20261122T000000Z-bad\nstatus: ???\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, warns, err := s.FindPackets(PacketFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != good.ID {
		t.Errorf("FindPackets() listed %d packets; want only %s", len(list), good.ID)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Error(), bad) {
		t.Errorf("warnings = %v; want one naming %s", warns, bad)
	}
	if _, err := s.FindPacketByID("20261122T000000Z-bad"); err == nil || !strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("FindPacketByID(bad) error = %v; want it to name the file and the problem", err)
	}
}

func TestJSONLTornTail(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	log := filepath.Join(s.IndexDir(), RelevantFilesLog)
	e := baton.RelevantFile{Timestamp: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), FilePath: "a.go", Source: baton.FromTool, Confidence: 0.5}
	if err := s.AppendRelevantFiles(ctx, e); err != nil {
		t.Fatal(err)
	}
	// A writer died mid-line.
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-11-22T09:00:01Z","file_pa`)
	f.Close()
	var got []string
	st, err := s.ScanRelevantFiles(func(r baton.RelevantFile) error { got = append(got, r.FilePath); return nil })
	if err != nil || st.Corrupt != 1 || len(got) != 1 {
		t.Fatalf("scan with torn tail = %v, %+v, %v; want 1 line, 1 corrupt", got, st, err)
	}
	// The next append starts on a fresh line: only the torn line is lost.
	e.FilePath = "b.go"
	if err := s.AppendRelevantFiles(ctx, e); err != nil {
		t.Fatal(err)
	}
	got = nil
	st, _ = s.ScanRelevantFiles(func(r baton.RelevantFile) error { got = append(got, r.FilePath); return nil })
	if diff := cmp.Diff([]string{"a.go", "b.go"}, got); diff != "" || st.Corrupt != 1 {
		t.Errorf("after append: %+v (-want +got):\n%s", st, diff)
	}
}

func TestRankFiles(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e := func(min int, path string, src baton.FileSource) baton.RelevantFile {
		return baton.RelevantFile{Timestamp: t0.Add(time.Duration(min) * time.Minute), FilePath: path, Source: src, Confidence: 0.5}
	}
	entries := []baton.RelevantFile{
		e(0, "old.go", baton.FromTool), e(1, "old.go", baton.FromTool), e(2, "old.go", baton.FromTool), // 3 touches, 2h before the end
		e(120, "hot.go", baton.FromTool), e(121, "hot.go", baton.FromTool),
		e(122, "new.go", baton.FromUser),
	}
	if err := s.AppendRelevantFiles(context.Background(), entries...); err != nil {
		t.Fatal(err)
	}
	ranks, _, err := s.RankFiles(FileQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range ranks {
		order = append(order, r.Path)
	}
	if diff := cmp.Diff([]string{"hot.go", "new.go", "old.go"}, order); diff != "" {
		t.Errorf("rank order mismatch (-want +got):\n%s\n%+v", diff, ranks)
	}
	if !ranks[1].Confirmed || ranks[0].Count != 2 || ranks[2].Count != 3 {
		t.Errorf("ranks = %+v", ranks)
	}
	since, _, _ := s.RankFiles(FileQuery{Since: t0.Add(100 * time.Minute)})
	if len(since) != 2 {
		t.Errorf("RankFiles(since) = %d files, want 2", len(since))
	}
}

func TestRelPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := Open(root, Options{})
	mustMkdir(t, filepath.Join(root, "pkg", "sub"))
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		base, p, want string
		ok            bool
	}{
		{root, filepath.Join(root, "a.go"), "a.go", true},
		{filepath.Join(root, "pkg"), "sub/b.go", "pkg/sub/b.go", true},
		{root, "../outside.go", "", false},
		{root, "/etc/passwd", "", false},
		{root, filepath.Join(link, "pkg", "c.go"), "pkg/c.go", true},
		{root, "", "", false},
	}
	for _, tt := range tests {
		got, ok := s.RelPath(tt.base, tt.p)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RelPath(%s, %s) = %q, %v; want %q, %v", tt.base, tt.p, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRootJSONShape(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b, err := os.ReadFile(filepath.Join(s.Dir(), "root.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"project_id", "created_at", "version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("root.json lacks %q: %s", k, b)
		}
	}
}

// latest reads status and updated_at cheaply, but a hand-edited packet that
// quotes them must still count, and an open packet beats a newer done one.
func TestLatestPacketPeekAndFallback(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	older, newer := testPacket("older open"), testPacket("newer done")
	older.CreatedAt = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	newer.CreatedAt = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	newer.Status = baton.PacketDone
	for _, p := range []*baton.Packet{older, newer} {
		if err := s.CreatePacket(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := s.ResolvePacket(Latest); err != nil || p.ID != older.ID {
		t.Fatalf("latest = %v, %v; want the open packet %s", p, err, older.ID)
	}
	// A person quotes the fields: the quick reader gives up, decoding decides.
	edited := "---\nid: 20261122T080000Z-edited\ncreated_at: \"2026-11-22T08:00:00Z\"\nupdated_at: \"2026-11-22T08:00:00Z\"\nstatus: \"active\"\npurpose: edited by hand\n---\n"
	if err := os.WriteFile(filepath.Join(s.Dir(), PacketsDir, "20261122T080000Z-edited.md"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := s.ResolvePacket(Latest); err != nil || p.ID != "20261122T080000Z-edited" {
		t.Fatalf("latest = %v, %v; want the hand-edited active packet", p, err)
	}
}

func TestNewUUID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		u := newUUID()
		if !re.MatchString(u) || seen[u] {
			t.Fatalf("newUUID() = %q: not a fresh version 4 UUID", u)
		}
		seen[u] = true
	}
}
