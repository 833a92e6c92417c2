package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/web"
)

// The project page shows each loop as every edge does (loop.View): its
// status and outcome, iteration and limit, promises, session, what it
// spent against its budgets, and its verify commands with the last run.
// The CLI's --json and the MCP loop tools show the same view (their
// goldens: internal/cli's loop_*.golden.json, internal/mcp's
// tools.golden.txt).
func TestProjectPageLoops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	root := t.TempDir()
	at := time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)
	now := func() time.Time { return at }
	st := fsstore.Open(root, fsstore.Options{Now: now})
	ctx := t.Context()
	if _, err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	old, _, err := loop.Start(ctx, st, loop.StartRequest{Prompt: "Port the handlers", MaxIterations: 0, Promises: []string{"DONE", "BLOCKED"}, SessionID: "s1", Now: at})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := loop.SetStatus(ctx, st, old.ID, loop.StatusChange{Change: loop.Cancel, Now: at.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	l, _, err := loop.Start(ctx, st, loop.StartRequest{Prompt: "Make the tests pass", MaxIterations: -1,
		MaxTokens: 50000, MaxCostUSD: 2.5, MaxDuration: 90 * time.Minute, Verify: []string{"go test ./..."}, Now: at.Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// Two rounds in, one verification failed, as the Stop hook records them.
	if _, err := st.UpdateLoop(ctx, l.ID, func(l *baton.Loop) error {
		l.Iteration, l.Spent = 2, baton.Spend{Tokens: baton.Tokens{Input: 1200, Output: 300}, CostUSD: 0.0125}
		l.VerifyRuns = append(l.VerifyRuns, baton.VerifyRun{At: at.Add(150 * time.Second), Iteration: 1, Promise: "DONE",
			Checks: []baton.VerifyCheck{{Command: "go test ./...", ExitCode: 1, DurationMS: 4200, Confined: true}}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.web.Project = &web.Project{Root: root, Load: func(ctx context.Context) (web.ProjectView, error) {
		fg, err := st.Foreground()
		if err != nil {
			return web.ProjectView{}, err
		}
		views, _, err := loop.Views(st, fsstore.LoopFilter{}, fg, at.Add(3*time.Minute))
		return web.ProjectView{Root: root, Loops: views}, err
	}}
	resp, err := http.Get(e.srv.URL + "/project")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	start, end := strings.Index(page, "<h2>Loops</h2>"), strings.LastIndex(page, "</table>")
	if resp.StatusCode != http.StatusOK || start < 0 || end < start {
		t.Fatalf("GET /project = %d without the loops table:\n%s", resp.StatusCode, page)
	}
	golden.CheckString(t, "project_loops.golden.html", page[start:end+len("</table>")]+"\n")
}
