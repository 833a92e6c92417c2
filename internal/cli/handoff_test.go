package cli

import (
	"github.com/baton-agent/baton/internal/golden"

	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
)

const agentBody = `Notes before any heading go to Notes.

## Intent
Finish the JWT refactor without breaking sessions.

## Constraints
- No new dependencies.

## Decisions
- HS256 for now; RS256 later.

## Relevant Files
### Confirmed
- ` + "`internal/auth/jwt.go`" + ` — the signer

## Next Prompt
Run ` + "`go test ./internal/auth/...`" + ` and fix the two failing expiry tests.

## Open Questions
- Do refresh tokens rotate?

## Rollout
Behind a flag first.
`

func TestHandoffPickupGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.write("internal/auth/session.go", "package auth\n") // uncommitted
	e.vars["BATON_SESSION_ID"] = "5b1c0a2e-1111-4222-8333-944445555666"
	e.vars["BATON_HARNESS"] = "claude"

	// Agents touched files before the handoff (as the post-tool-use hook records).
	st := fsstore.Open(e.dir, fsstore.Options{})
	if _, err := st.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	t0 := e.now.Add(-30 * time.Minute)
	var entries []baton.RelevantFile
	for i, p := range []string{"internal/auth/session.go", "internal/auth/jwt.go", "internal/auth/session.go", "README.md"} {
		entries = append(entries, baton.RelevantFile{Timestamp: t0.Add(time.Duration(i) * time.Minute), FilePath: p, Source: baton.FromTool, Confidence: 0.5})
	}
	if err := st.AppendRelevantFiles(t.Context(), entries...); err != nil {
		t.Fatal(err)
	}

	r := e.ok("internal/auth", agentBody, "handoff", "finish the JWT refactor", "--body", "-", "--validator", "go test ./...", "--file", "jwt.go")
	id := strings.TrimSpace(r.stdout)
	if id != "20261122T093400Z-finish-the-jwt-refactor" {
		t.Fatalf("handoff printed %q", id)
	}
	packet := e.read(".agent/context/packets/" + id + ".md")
	golden.CheckString(t, "handoff_packet.golden.md", packet)

	// pickup from a nested directory renders the same packet; the repository
	// moved on in between, and pickup says so.
	e.git("add", "internal") // not .agent: root.json holds a random project id
	e.git("commit", "-q", "-m", "add session store")
	r = e.ok("internal", "", "pickup", "latest")
	golden.CheckString(t, "pickup.golden.md", e.scrub(r.stdout))
	if packet != e.read(".agent/context/packets/"+id+".md") {
		t.Error("pickup changed the packet")
	}

	// A tight budget drops optional sections and reports it.
	r = e.ok("", "", "pickup", "finish", "--budget", "1000", "--explain")
	if len(r.stdout) > 1000 {
		t.Errorf("pickup --budget 1000 printed %d bytes", len(r.stdout))
	}
	golden.CheckString(t, "pickup_explain.golden.txt", r.stderr)

	r = e.run("", "", "pickup", "latest", "--budget", "100")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "too small") || r.stdout != "" {
		t.Errorf("pickup --budget 100 = %d, %q, %q; want exit 2, an error, no prompt", r.code, r.stdout, r.stderr)
	}
}

func TestHandoffWarningsAndJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Outside git: no repository state, the store is created at cwd.
	r := e.ok("", "", "handoff", "tiny", "--json")
	var out struct {
		SchemaVersion int      `json:"schema_version"`
		ID            string   `json:"id"`
		Warnings      []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("handoff --json printed %q: %v", r.stdout, err)
	}
	if out.SchemaVersion != 1 || out.ID == "" || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "no Next Prompt") {
		t.Errorf("handoff --json = %+v", out)
	}
	if !strings.Contains(r.stderr, "created the context store") {
		t.Errorf("first write did not announce the store: %q", r.stderr)
	}
	big := strings.Repeat("x", 5000)
	r = e.ok("", "", "handoff", "big", "--next-prompt", big)
	if !strings.Contains(r.stderr, "Next Prompt is 5000 bytes") {
		t.Errorf("no warning for a 5000-byte Next Prompt: %q", r.stderr)
	}
	if strings.Contains(r.stderr, "created the context store") {
		t.Errorf("second write announced the store again: %q", r.stderr)
	}
	r = e.run("", "", "handoff")
	if r.code != ExitUsage {
		t.Errorf("handoff without purpose exited %d", r.code)
	}
	r = e.run("", "", "handoff", "x", "--body", "/does/not/exist")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "cannot read --body") {
		t.Errorf("handoff --body missing = %d %q", r.code, r.stderr)
	}
}

func TestPacketCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	first := strings.TrimSpace(e.ok("", "", "handoff", "alpha work", "--next-prompt", "go").stdout)
	e.now = e.now.Add(time.Minute)
	second := strings.TrimSpace(e.ok("", "", "handoff", "beta work", "--next-prompt", "go").stdout)

	r := e.ok("", "", "packet", "list")
	golden.CheckString(t, "packet_list.golden.txt", r.stdout)

	// A page at a time: the next page's command is on stderr.
	r = e.ok("", "", "packet", "list", "--limit", "1")
	next := strings.Fields(strings.TrimPrefix(r.stderr, "1 more: baton packet list --cursor "))
	if !strings.Contains(r.stdout, second) || strings.Contains(r.stdout, first) || len(next) == 0 || !strings.HasPrefix(r.stderr, "1 more: ") {
		t.Fatalf("packet list --limit 1 = %q, stderr %q", r.stdout, r.stderr)
	}
	r = e.ok("", "", "packet", "list", "--limit", "1", "--cursor", next[0], "--json")
	var page struct {
		Packets    []struct{ ID string } `json:"packets"`
		More       int                   `json:"more"`
		NextCursor string                `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Packets) != 1 || page.Packets[0].ID != first || page.More != 0 || page.NextCursor != "" {
		t.Errorf("the second page = %+v, %v", page, err)
	}
	if r := e.run("", "", "packet", "list", "--cursor", "garbage"); r.code != ExitUsage || !strings.Contains(r.stderr, "list again without it") {
		t.Errorf("packet list --cursor garbage = %d %q", r.code, r.stderr)
	}

	e.now = e.now.Add(time.Minute)
	r = e.ok("", "", "packet", "activate", "alpha")
	if r.stdout != fmt.Sprintf("packet %s: draft -> active\n", first) {
		t.Errorf("activate printed %q", r.stdout)
	}
	r = e.ok("", "", "packet", "list", "--status", "active", "--json")
	var list struct {
		Packets []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			UpdatedAt string `json:"updated_at"`
		} `json:"packets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Packets) != 1 || list.Packets[0].ID != first || list.Packets[0].UpdatedAt != "2026-11-22T09:36:00Z" {
		t.Errorf("list --status active --json = %+v", list)
	}
	e.ok("", "", "packet", "done", second)
	e.now = e.now.Add(time.Minute)
	e.ok("", "", "packet", "block", first)
	if r := e.run("", "", "pickup", "latest"); r.code != 0 || !strings.Contains(r.stdout, "alpha work") {
		t.Errorf("latest with no draft/active packet should fall back to the newest: %d %q", r.code, r.stderr)
	}

	r = e.ok("", "", "packet", "show", "beta")
	if !strings.HasPrefix(r.stdout, "---\nid: "+second+"\n") || !strings.Contains(r.stdout, "status: done") {
		t.Errorf("packet show printed:\n%s", r.stdout)
	}
	r = e.ok("", "", "packet", "open", "beta")
	if want := filepath.Join(e.dir, ".agent/context/packets", second+".md") + "\n"; r.stdout != want {
		t.Errorf("packet open = %q, want %q", r.stdout, want)
	}

	for _, bad := range []string{"../x", "/etc/passwd", "a/b"} {
		r := e.run("", "", "packet", "show", bad)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "invalid packet id") {
			t.Errorf("packet show %q = %d %q; want exit 2 naming the bad id", bad, r.code, r.stderr)
		}
	}
	r = e.run("", "", "packet", "show", "20261122T093")
	if r.code != ExitError || !strings.Contains(r.stderr, "matches 2 packets") {
		t.Errorf("ambiguous prefix = %d %q", r.code, r.stderr)
	}
	r = e.run("", "", "packet", "list", "--status", "finished")
	if r.code != ExitUsage {
		t.Errorf("bad --status exited %d", r.code)
	}

	// The editor is run on the file and the result re-validated.
	script := filepath.Join(t.TempDir(), "ed.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nsed -i 's/^status: done/status: broken/' \"$1\"\n"), 0o755)
	e.vars["EDITOR"] = script
	r = e.run("", "", "packet", "open", "beta", "--edit")
	if r.code == 0 || !strings.Contains(r.stderr, "no longer parses") {
		t.Errorf("editing a packet into an invalid state = %d %q", r.code, r.stderr)
	}
}

func TestFilesCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("internal/auth", "", "files", "add", "jwt.go", "../../README.md")
	r := e.run("", "", "files", "add", "/etc/passwd")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "outside the project root") {
		t.Errorf("files add outside root = %d %q", r.code, r.stderr)
	}
	r = e.ok("", "", "files", "--json")
	var out struct {
		Files []struct {
			Path      string `json:"path"`
			Confirmed bool   `json:"confirmed"`
		} `json:"files"`
	}
	json.Unmarshal([]byte(r.stdout), &out)
	if len(out.Files) != 2 || !out.Files[0].Confirmed {
		t.Errorf("files --json = %s", r.stdout)
	}
	// After a handoff, `baton files` starts from that packet.
	e.now = e.now.Add(time.Minute)
	e.ok("", "", "handoff", "snap", "--next-prompt", "go")
	r = e.ok("", "", "files")
	if r.stdout != "" || !strings.Contains(r.stderr, "no relevant files (since packet") {
		t.Errorf("files after handoff = %q %q", r.stdout, r.stderr)
	}
	r = e.ok("", "", "files", "--all")
	if !strings.Contains(r.stdout, "internal/auth/jwt.go") || !strings.Contains(r.stdout, "README.md") {
		t.Errorf("files --all = %q", r.stdout)
	}
}

func TestRootAndInit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	if r := e.ok("internal/auth", "", "root"); r.stdout != e.dir+"\n" {
		t.Errorf("root from a subdirectory = %q, want %q", r.stdout, e.dir)
	}
	r1 := e.ok("internal", "", "init")
	r2 := e.ok("", "", "init")
	if !strings.Contains(r1.stdout, "created") || !strings.Contains(r2.stdout, "already exists") {
		t.Errorf("init twice: %q then %q", r1.stdout, r2.stdout)
	}
	other := t.TempDir()
	if r := e.ok("", "", "root", "--root", other); r.stdout != other+"\n" {
		t.Errorf("root --root = %q", r.stdout)
	}
	e.vars["BATON_ROOT"] = other
	if r := e.ok("", "", "root", "--json"); !strings.Contains(r.stdout, `"found_by": "override"`) {
		t.Errorf("BATON_ROOT not honoured: %q", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"nope"}, {"pickup", "--bogus"}, {"packet", "show"}, {"init", "extra"}} {
		r := e.run("", "", args...)
		if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "baton: ") {
			t.Errorf("baton %v = %d, %q, %q; want exit 2 and an error on stderr only", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := e.ok("", "", "version"); r.stdout == "" {
		t.Error("version printed nothing")
	}
}

// A packet checked out with CRLF line endings reads as it was written:
// no CR in what pickup renders, and a rewrite goes back to LF.
func TestCRLFPacket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	id := strings.TrimSpace(e.ok("", "", "handoff", "alpha work", "--next-prompt", "run the tests\nthen commit").stdout)
	rel := ".agent/context/packets/" + id + ".md"
	e.write(rel, strings.ReplaceAll(e.read(rel), "\n", "\r\n"))
	r := e.ok("", "", "pickup", id)
	if strings.Contains(r.stdout, "\r") || !strings.Contains(r.stdout, "run the tests\nthen commit") {
		t.Errorf("pickup of a CRLF packet:\n%q", r.stdout)
	}
	e.ok("", "", "packet", "activate", id)
	if got := e.read(rel); strings.Contains(got, "\r") {
		t.Errorf("the packet was written back with CR bytes:\n%q", got)
	}
}

// In a work tree too large for a whole `git status` on every handoff (a
// monorepo), handoff and pickup run none: they read branch and HEAD, and
// check only the packet's files against HEAD, and say so.
func TestHandoffPickupInALargeWorkTree(t *testing.T) {
	e := newEnv(t)
	e.gitRepo()
	// 2,500 more tracked files, committed without writing them out: a
	// whole status would list every one as deleted.
	blob := strings.TrimSpace(e.git("hash-object", "-w", "README.md"))
	var index strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&index, "100644 %s\tvendor/pkg%02d/file%04d.go\n", blob, i/100, i)
	}
	c := exec.Command("git", "update-index", "--index-info")
	c.Dir, c.Stdin = e.dir, strings.NewReader(index.String())
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git update-index: %v\n%s", err, out)
	}
	e.git("commit", "-q", "-m", "vendor everything")
	e.write("README.md", "# app, changed\n")
	e.write("internal/auth/session.go", "package auth\n") // new
	e.write("internal/auth/jwt.go", "package auth\n")     // as committed

	// Every git command baton runs is logged.
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "git.log")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$1\" >> "+log+"\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	e.ok("", "", "files", "add", "README.md", "internal/auth/session.go", "internal/auth/jwt.go")
	r := e.ok("", "", "handoff", "carry on", "--next-prompt", "go on")
	packet := e.read(".agent/context/packets/" + strings.TrimSpace(r.stdout) + ".md")
	for _, want := range []string{
		"- branch: `main`",
		"vendor everything",
		"- uncommitted: 2 of the packet's 3 files (the work tree tracks 2502 files; baton checked only the packet's)",
		"  - `README.md` (M)",
		"  - `internal/auth/session.go` (A)",
	} {
		if !strings.Contains(packet, want) {
			t.Errorf("the packet lacks %q:\n%s", want, packet)
		}
	}
	if strings.Contains(packet, "vendor/") {
		t.Errorf("the packet lists files outside it:\n%s", packet)
	}
	e.git("add", "internal/auth/session.go")
	e.git("commit", "-q", "-m", "add the session")
	r = e.ok("", "", "pickup", "latest")
	if want := "- 1 of the packet's files differ from HEAD now: `README.md`"; !strings.Contains(r.stdout, want) {
		t.Errorf("pickup does not say %q:\n%s", want, r.stdout)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if ran := strings.Fields(string(b)); slices.Contains(ran, "status") || len(ran) == 0 {
		t.Errorf("git ran %v; want no status", ran)
	}
}

// A handoff run from a Codex or pi shell names the session it ran in and
// who wrote it, from the variables those harnesses set there; an
// explicit --session-id wins.
func TestHandoffNamesTheSessionOfEachHarness(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ variable, id, source string }{
		{"CODEX_THREAD_ID", "019a0b1c-2d3e-7f40-8a5b-6c7d8e9f0a1b", "codex"},
		{"PI_SESSION_ID", "pi-session-7", "pi"},
		{"BATON_SESSION_ID", "5b1c0a2e-1111-4222-8333-944445555666", "user"},
	} {
		t.Run(c.variable, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.vars[c.variable] = c.id
			var out struct {
				Path string `json:"path"`
			}
			if err := json.Unmarshal([]byte(e.ok("", "", "handoff", "carry on", "--json").stdout), &out); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(out.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"\nsession_id: " + c.id + "\n", "\nsource: " + c.source + "\n"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("the packet does not say %s:\n%s", want, b)
				}
			}
			if err := json.Unmarshal([]byte(e.ok("", "", "handoff", "again", "--json", "--session-id", "given").stdout), &out); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(out.Path); !strings.Contains(string(b), "\nsession_id: given\n") {
				t.Errorf("--session-id did not win:\n%s", b)
			}
		})
	}
}

// A handoff remembers HEAD's subject in the store, and pickup takes it
// from there for the commit it names, without asking git: what the store
// holds for the new HEAD is what pickup says HEAD moved to.
func TestPickupTakesHeadSubjectFromTheStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "ship it", "--next-prompt", "Run the tests.")
	st := fsstore.Open(e.dir, fsstore.Options{})
	initial := strings.TrimSpace(e.git("rev-parse", "HEAD"))
	if got, ok := st.CommitSubject(initial); !ok || got != "initial commit" {
		t.Fatalf("after a handoff the store holds %q, %v for HEAD; want its subject", got, ok)
	}
	e.git("commit", "-q", "--allow-empty", "-m", "moved on")
	head := strings.TrimSpace(e.git("rev-parse", "HEAD"))
	st.RememberCommitSubject(head, "as the store remembers it")
	r := e.ok("", "", "pickup", "latest")
	if !strings.Contains(r.stdout, "since the handoff): as the store remembers it.") {
		t.Errorf("pickup did not take HEAD's subject from the store:\n%s", r.stdout)
	}
}
