package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// Where the CLI and the MCP server once decided differently, both now
// call one core function. This is the CLI's side of each choice; the MCP
// server's is internal/mcp's TestSharedCoreChoices.
func TestSharedCoreChoices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := newGitHub(e)
	addReviewFixture(srv)
	e.checkoutOf("https://github.com/octo/app.git")

	// budget.Parse: a byte budget of 0 is the default, as an MCP
	// budget_bytes of 0 always was (pickup refused it).
	e.ok("", "", "handoff", "carry on", "--next-prompt", "go on")
	if def, zero := e.ok("", "", "pickup").stdout, e.ok("", "", "pickup", "--budget", "0").stdout; zero != def {
		t.Errorf("pickup --budget 0 differs from pickup:\n%s\nvs\n%s", zero, def)
	}

	// loop.Resolve: a named loop does not need the foreground pointer, as
	// over MCP (loop status refused it when the pointer was damaged), and
	// "current" names the foreground loop.
	var started struct{ ID string }
	if err := json.Unmarshal([]byte(e.ok("", "", "loop", "start", "--json", "Fix the tests").stdout), &started); err != nil {
		t.Fatal(err)
	}
	if r := e.ok("", "", "loop", "status", "current"); !strings.HasPrefix(r.stdout, "loop "+started.ID+" (foreground)") {
		t.Errorf("loop status current:\n%s", r.stdout)
	}
	e.write(e.indexPath("foreground-loops.json"), "{damaged")
	r := e.ok("", "", "loop", "status", "fix-the")
	if !strings.HasPrefix(r.stdout, "loop "+started.ID+"\n") || !strings.Contains(r.stderr, "foreground-loops.json") {
		t.Errorf("loop status <prefix> with a damaged pointer: stdout\n%s\nstderr %s", r.stdout, r.stderr)
	}
	if r := e.run("", "", "loop", "cancel"); r.code == 0 || !strings.Contains(r.stderr, "foreground-loops.json") {
		t.Errorf("loop cancel with a damaged pointer = %d, stderr %s; want the pointer named", r.code, r.stderr)
	}

	// Store.Files: since a packet, as the MCP files tool now takes too.
	e.ok("", "", "files", "add", "README.md")
	var files struct{ Files []struct{ Path string } }
	if err := json.Unmarshal([]byte(e.ok("", "", "files", "--since", "latest", "--json").stdout), &files); err != nil {
		t.Fatal(err)
	}
	if len(files.Files) != 1 || files.Files[0].Path != "README.md" {
		t.Errorf("files --since latest = %+v, want README.md", files.Files)
	}

	// github.Open: the repository is the project's (--root), as the MCP
	// server took it, not the working directory's (here a checkout of
	// another repository, which has no pull request 12).
	other := e.dir + "/elsewhere"
	e.write("elsewhere/.keep", "")
	gittest.Git(t, other, "init", "-q", "-b", "main")
	gittest.Git(t, other, "remote", "add", "origin", "https://github.com/other/lib.git")
	srv.ResetRequests()
	r = e.run("elsewhere", "", "--root", e.dir, "review-pr", "12", "--json")
	var doc struct{ Repo string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Repo != "octo/app" {
		t.Errorf("review-pr 12 with --root from another checkout = %d, repo %q, stderr %s", r.code, doc.Repo, r.stderr)
	}
	if slices.ContainsFunc(srv.RequestLog(), func(s string) bool { return strings.Contains(s, "other/lib") }) {
		t.Errorf("review-pr asked the working directory's repository: %v", srv.RequestLog())
	}
}

// A handoff too large for the store to read back is refused with the
// reason, as over MCP, not reported written and then skipped by pickup.
func TestHandoffTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "the older packet", "--next-prompt", "go on")
	r := e.run("", "## Notes\n\n"+strings.Repeat("log line\n", 600_000), "handoff", "too much", "--body", "-")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "over the 4.0 MiB limit") || r.stdout != "" {
		t.Errorf("handoff with a 5 MiB body = %d, stdout %q, stderr %.300s", r.code, r.stdout, r.stderr)
	}
	if r := e.ok("", "", "pickup"); !strings.HasPrefix(r.stdout, "# Pickup: the older packet") || r.stderr != "" {
		t.Errorf("pickup after a refused handoff: stderr %s\n%.200s", r.stderr, r.stdout)
	}
}

// Handoffs in the same second (the test's clock stands still) are picked
// up newest first: the one written last, not the one whose id sorts last.
func TestPickupLatestWithinASecond(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.gitRepo()
	e.ok("", "", "handoff", "zeta", "--next-prompt", "go on")
	e.ok("", "", "handoff", "alpha", "--next-prompt", "go on")
	if r := e.ok("", "", "pickup", "latest"); !strings.HasPrefix(r.stdout, "# Pickup: alpha") {
		t.Errorf("pickup latest after zeta then alpha:\n%.100s", r.stdout)
	}
	for range 9 {
		e.ok("", "", "handoff", "retry", "--next-prompt", "go on")
	}
	if r := e.ok("", "", "pickup", "--json"); !strings.Contains(r.stdout, `"packet_id": "20261122T093400Z-retry-9"`) {
		t.Errorf("pickup after nine handoffs of one purpose in one second:\n%.300s", r.stdout)
	}
	e.ok("", "", "handoff", "retry", "--next-prompt", "go on")
	if r := e.ok("", "", "pickup", "--json"); !strings.Contains(r.stdout, `"packet_id": "20261122T093400Z-retry-10"`) {
		t.Errorf("pickup after ten handoffs of one purpose in one second:\n%.300s", r.stdout)
	}
}
