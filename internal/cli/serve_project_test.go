package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/agentrun/agenttest"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/web"
)

// Inside a project, serve's project page shows the goal-tree run (tree,
// current node, iterations with their guard logs), packets and loops,
// read from the project as the commands left it.
func TestServeProjectPage(t *testing.T) {
	t.Parallel()
	e := runProject(t, calcGoal)
	fake := agenttest.New(t,
		agenttest.Turn{Final: map[string]any{"status": "decomposed", "summary": "two parts", "children": children("Lexer", "Parser")}},
		agenttest.Turn{Files: []agenttest.File{{Path: "src/lexer.txt", Content: "tokens BUG\n"}}, Final: answer("done", "lexer complete")},
	)
	e.useFake(fake)
	e.ok("", "", "run", "init", "--guard", bugGuard)
	if r := e.run("", "", "run", "loop", "--max-iterations", "2"); r.code != ExitError {
		t.Fatalf("run loop = %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	e.ok("", "", "handoff", "finish the lexer")
	e.ok("", "", "loop", "start", "--promise", "DONE", "fix the lexer")
	// A guard log an agent made huge is shown by its end.
	huge := filepath.Join(e.dir, ".agent/context/runner/iterations/calc/1/guard.log")
	if err := os.WriteFile(huge, []byte(strings.Repeat("noise\n", 20000)+"THE END\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	f := &Factory{WorkDir: e.dir, Getenv: func(string) string { return "" }, Now: time.Now}
	p := web.NewProject(f.Store(), f.Now)
	if p == nil {
		t.Fatal("no project found in a project")
	}
	q, err := queue.Open(t.Context(), sqlstoretest.DSN(t, sqlstore.SQLite), queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	svc := &delivery.Service{Queue: q, DataDir: t.TempDir()}
	feed := delivery.NewFeed(svc, 0)
	t.Cleanup(feed.Close)
	srv := httptest.NewServer((&web.Server{Deliveries: svc, Feed: feed, Open: true, Project: p}).Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/project")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /project = %d\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{
		"current node 1 &#34;Lexer&#34; (attempt 2 of 3)", // the guard failed: the lexer is tried again
		"leaves: 0 passed, 2 open, 0 stuck of 2; 2 iterations",
		"Parser",
		"src/lexer.txt:1:tokens BUG",    // iteration 2's guard log
		"earlier output cut", "THE END", // iteration 1's, by its end
		"status done, guard fail",
		"finish the lexer", // the packet
		`fix-the-lexer</code> <span class="badge">foreground</span></td><td data-label="Status">active`, // the loop
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the project page lacks %q", want)
		}
	}
	if strings.Contains(page, strings.Repeat("noise\n", 12000)) {
		t.Error("the project page shows the whole of a huge guard log")
	}

	// Outside a project there is no project page.
	out := &Factory{WorkDir: t.TempDir(), Getenv: func(string) string { return "" }, Now: time.Now}
	if web.NewProject(out.Store(), time.Now) != nil {
		t.Error("a directory without a store has a project page")
	}
}
