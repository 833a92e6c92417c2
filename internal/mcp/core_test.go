package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// Where the CLI and the MCP server once decided differently, both now
// call one core function. This is the MCP server's side of each choice;
// the CLI's is internal/cli's TestSharedCoreChoices.
func TestSharedCoreChoices(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	gittest.Git(t, dir, "remote", "add", "origin", "https://github.com/octo/app.git")
	gh := githubtest.NewServer(t)
	gh.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start"})
	open := func(context.Context, github.Repo, string) (*github.Client, error) {
		return github.New(github.Options{BaseURL: gh.URL(), Token: "t"})
	}
	// The server starts in a directory outside the project, as a client
	// may start it, with --root naming the project.
	_, cs := connect(t, Options{Version: "test", Root: dir, WorkDir: t.TempDir(), GitHub: open}, nil)
	f := &fixture{t: t, dir: dir, cs: cs}
	mustCall := func(name string, args map[string]any) string {
		t.Helper()
		text, res := f.call(name, args)
		if res.IsError {
			t.Fatalf("%s %v:\n%s", name, args, text)
		}
		return text
	}

	// budget.Parse: budget_bytes 0 is the default, as --budget 0
	// now is on the CLI.
	mustCall("handoff", map[string]any{"purpose": "carry on", "next_prompt": "go on"})
	if def, zero := mustCall("pickup", map[string]any{}), mustCall("pickup", map[string]any{"budget_bytes": 0}); def != strings.Replace(zero, `"budget_bytes":0`, "", 1) {
		t.Errorf("pickup with budget_bytes 0 differs:\n%s\nvs\n%s", zero, def)
	}

	// loop.Resolve: "current" names the foreground loop, as on the CLI,
	// and a named loop does not need the foreground pointer.
	mustCall("loop_start", map[string]any{"prompt": "Fix the tests"})
	if text := mustCall("loop_status", map[string]any{"loop": "current"}); !strings.Contains(text, "fix-the-tests: active") {
		t.Errorf("loop_status current:\n%s", text)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agent/context/indexes/active-loop.json"), []byte("{damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCall("loop_status", map[string]any{"loop": "fix-the"})

	// Store.Files: since a packet, as the CLI's files --since.
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCall("files_add", map[string]any{"paths": []string{"README.md"}})
	_, res := f.call("files", map[string]any{"since": "latest"})
	if sc, _ := res.StructuredContent.(map[string]any); res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "README.md") || sc["since"] == nil {
		t.Errorf("files since latest = %+v", res)
	}

	// github.Open: the repository is the project's, not the directory the
	// server was started in.
	if text := mustCall("fix_issue_brief", map[string]any{"issue": "7"}); !strings.Contains(text, "Crash on start") {
		t.Errorf("fix_issue_brief 7:\n%s", text)
	}
	// A request that is wrong is refused before GitHub is asked.
	gh.ResetRequests()
	if text, res := f.call("fix_issue_brief", map[string]any{"issue": "7", "comments": 101}); !res.IsError || !strings.Contains(text, "between 0 and 100") {
		t.Errorf("fix_issue_brief with 101 comments:\n%s", text)
	}
	if log := gh.RequestLog(); len(log) != 0 {
		t.Errorf("a refused brief asked GitHub: %v", log)
	}
}
