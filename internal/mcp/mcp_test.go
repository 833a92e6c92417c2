package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/goaltree"
	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/handoff"
	"github.com/baton-agent/baton/internal/prompt/budget"
	"github.com/baton-agent/baton/internal/queue"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

// clock ticks a minute per call, so ids made by successive calls differ
// and every output is the same on every run.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Minute)
	return c.t
}

// protocolVersion is what the clients in these tests speak: the version
// Claude Code 2.1 and Codex 0.169 send in initialize. The SDK's own
// newer, stateless revision is tested by TestLatestProtocol.
var protocolVersion = "2025-06-18"

type fixture struct {
	t   *testing.T
	dir string
	srv *Server
	cs  *sdk.ClientSession
	gh  *githubtest.Server
}

// repo makes a git repository with one commit on main.
func repo(t testing.TB) string {
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "add", "-A")
	gittest.Git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// connect serves opts on an in-memory transport and connects a real SDK
// client to it.
func connect(t testing.TB, opts Options, client *sdk.Client) (*Server, *sdk.ClientSession) {
	t.Helper()
	if opts.Now == nil {
		c := &clock{t: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
		opts.Now = c.now
	}
	if opts.Watch == 0 {
		opts.Watch = -1
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	if client == nil {
		client = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	}
	cs, err := client.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return srv, cs
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, dir: repo(t)}
	f.gh = githubtest.NewServer(t)
	gh := func(ctx context.Context, r github.Repo, apiURL string) (*github.Client, error) {
		return github.New(github.Options{BaseURL: f.gh.URL(), Token: "t"})
	}
	f.srv, f.cs = connect(t, Options{Version: "test", Root: f.dir, WorkDir: f.dir, GitHub: gh}, nil)
	return f
}

// call runs a tool and returns its result rendered for a golden file:
// the text, whether it is an error, and the structured output.
func (f *fixture) call(name string, args any) (string, *sdk.CallToolResult) {
	f.t.Helper()
	res, err := f.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	argText, _ := json.Marshal(args)
	fmt.Fprintf(&b, "=== %s %s", name, argText)
	if res.IsError {
		b.WriteString(" (isError)")
	}
	b.WriteString("\n")
	for _, c := range res.Content {
		b.WriteString(c.(*sdk.TextContent).Text)
		b.WriteString("\n")
	}
	if res.StructuredContent != nil {
		s, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintf(&b, "--- structured\n%s\n", s)
	}
	return strings.ReplaceAll(b.String(), f.dir, "$ROOT"), res
}

func (f *fixture) write(rel, data string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, rel), []byte(data), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// Every store tool, in the order a session uses them, against a golden
// transcript; errors are results with isError, and the session goes on.
func TestTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var out strings.Builder
	step := func(name string, args any, wantError bool) *sdk.CallToolResult {
		t.Helper()
		text, res := f.call(name, args)
		if res.IsError != wantError {
			t.Errorf("%s %v: isError = %v, want %v:\n%s", name, args, res.IsError, wantError, text)
		}
		out.WriteString(text)
		return res
	}
	step("packets", map[string]any{}, false)
	step("pickup", map[string]any{}, true)
	f.write("auth.go", "package main\n")
	step("handoff", map[string]any{
		"purpose":     "finish the auth refactor",
		"body":        "## Decisions\n\nKeep the session cookie.\n\n## Open Questions\n\nRotate keys?\n",
		"next_prompt": "Run go test ./... and fix the failures", "files": []string{"auth.go"}, "validators": []string{"go test ./..."},
	}, false)
	step("handoff", map[string]any{"purpose": "  "}, true)
	step("packets", map[string]any{"status": "draft"}, false)
	step("packets", map[string]any{"status": "archived"}, true)
	step("pickup", map[string]any{}, false)
	small := step("pickup", map[string]any{"packet": "latest", "budget_bytes": 700}, false)
	if got := len(small.Content[0].(*sdk.TextContent).Text); got > 700 {
		t.Errorf("pickup with budget_bytes 700 gave %d bytes", got)
	}
	step("pickup", map[string]any{"packet": "nosuch"}, true)
	step("files_add", map[string]any{"paths": []string{"main.go"}}, false)
	step("files_add", map[string]any{"paths": []string{"later.go"}}, true)
	step("files_add", map[string]any{"paths": []string{"later.go"}, "missing_ok": true}, false)
	step("files_add", map[string]any{"paths": []string{"../outside.go"}, "missing_ok": true}, true)
	step("files_add", map[string]any{"paths": []string{}}, true)
	step("files", map[string]any{}, false)
	step("files", map[string]any{"all": true, "limit": 2}, false)
	step("loop_status", map[string]any{}, true)
	step("loop_start", map[string]any{}, true)
	step("loop_start", map[string]any{"prompt": "Make the tests pass", "promises": []string{"ALL GREEN"}, "max_iterations": 5}, false)
	step("loop_status", map[string]any{}, false)
	step("loop_cancel", map[string]any{}, false)
	step("loop_cancel", map[string]any{"loop": "nosuch"}, true)
	step("loop_start", map[string]any{"from_packet": "latest", "max_iterations": -1}, true)
	step("loop_start", map[string]any{"from_packet": "latest"}, false)
	// Budgets and verify commands, as the CLI's flags give them.
	step("loop_start", map[string]any{"prompt": "Keep the build green", "max_tokens": -1}, true)
	step("loop_start", map[string]any{"prompt": "Keep the build green", "max_tokens": 50000, "max_cost_usd": 2.5,
		"max_duration_seconds": 5400, "verify": []string{"go build ./..."}, "verify_timeout_seconds": 120}, false)
	step("loop_start", map[string]any{"prompt": "x", "verify_timeout_seconds": 3600}, true)
	golden.CheckString(t, "tools.golden.txt", out.String())
}

// The brief tools fetch from GitHub (a fake that serves the API's real
// shapes) exactly as the commands do.
func TestBriefTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.gh.AddIssue("octo/app", githubtest.Issue{Number: 7, Title: "Crash on start", Body: "It panics in main.", Labels: []string{"bug"}})
	f.gh.AddPullRequest("octo/app", githubtest.PullRequest{Number: 24, Title: "Fix the crash", Body: "Fixes #7", Diff: githubtest.DiffText("diff --git a/main.go b/main.go\n--- a/main.go\n+++ b/main.go\n@@ -1 +1,2 @@\n package main\n+// fixed\n")})
	var out strings.Builder
	for _, c := range []struct {
		name    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"fix_issue_brief", map[string]any{"issue": "7", "repo": "octo/app"}, false, "Crash on start"},
		{"fix_issue_brief", map[string]any{"issue": "https://github.com/octo/app/issues/7"}, false, "It panics in main."},
		{"fix_issue_brief", map[string]any{"issue": "seven", "repo": "octo/app"}, true, "issue must be an issue number"},
		{"fix_issue_brief", map[string]any{"issue": "7", "repo": "octo/app", "comments": 500}, true, "comments must be between 0 and"},
		{"fix_issue_brief", map[string]any{"issue": "7"}, true, "cannot tell which GitHub repository this is"},
		{"review_pr_brief", map[string]any{"pr": "#24", "repo": "octo/app"}, false, "+// fixed"},
		{"implement_feature_brief", map[string]any{"request": "add a --dry-run flag"}, false, "add a --dry-run flag"},
		{"implement_feature_brief", map[string]any{"issue": "7", "repo": "octo/app"}, false, "Crash on start"},
		{"implement_feature_brief", map[string]any{}, true, "needs an issue"},
	} {
		text, res := f.call(c.name, c.args)
		if res.IsError != c.isError || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError %v, want %v and %q:\n%s", c.name, c.args, res.IsError, c.isError, c.want, text)
		}
		out.WriteString(text)
	}
	golden.CheckString(t, "briefs.golden.txt", out.String())
}

func TestResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	_, res := f.call("handoff", map[string]any{"purpose": "ship it", "next_prompt": "Ship it."})
	id := res.StructuredContent.(map[string]any)["id"].(string)
	_, res = f.call("loop_start", map[string]any{"prompt": "again"})
	loopID := res.StructuredContent.(map[string]any)["id"].(string)

	list, err := f.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	if want := []string{"baton://packets/" + id, "baton://loops/" + loopID}; fmt.Sprint(uris) != fmt.Sprint(want) {
		t.Errorf("resources = %v, want %v", uris, want)
	}
	tmpls, err := f.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 2 {
		t.Fatalf("templates = %v, %v", tmpls, err)
	}
	read, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/" + id})
	if err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(filepath.Join(f.dir, ".agent/context/packets", id+".md"))
	if read.Contents[0].Text != string(onDisk) || read.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("packet resource = %q, want the file %q", read.Contents[0].Text, onDisk)
	}
	if read, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://loops/" + loopID}); err != nil || !strings.Contains(read.Contents[0].Text, "## Loop Prompt\n\nagain\n") {
		t.Errorf("loop resource = %v, %v", read, err)
	}
	// Ids are checked before any path is built: nothing outside the store.
	for _, uri := range []string{"baton://packets/../../main.go", "baton://packets/%2e%2e%2fmain", "baton://packets/nosuch", "baton://other/x"} {
		if _, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("read %s: %v, want not found", uri, err)
		}
	}
	// A packet linked out of the store is not followed.
	secret := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(secret, []byte("secret"), 0o600)
	os.Symlink(secret, filepath.Join(f.dir, ".agent/context/packets/20261125T120000Z-linked.md"))
	if read, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/20261125T120000Z-linked"}); err == nil {
		t.Errorf("a symlinked packet was read: %q", read.Contents[0].Text)
	}
	// A FIFO in a packet's place is refused at once, not waited on, and a
	// packet over 8 MiB is not read.
	packets := filepath.Join(f.dir, ".agent/context/packets")
	if err := syscall.Mkfifo(filepath.Join(packets, "20261125T120001Z-fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(packets, "20261125T120002Z-huge.md"), make([]byte, maxResourceBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"20261125T120001Z-fifo", "20261125T120002Z-huge"} {
		done := make(chan error, 1)
		go func() {
			_, err := f.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://packets/" + id})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("packet %s was read", id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("reading packet %s blocked", id)
		}
	}

	prompts, err := f.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[fix-issue handoff implement-feature pickup review-pr]" {
		t.Errorf("prompts = %v", names)
	}
	got, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "pickup", Arguments: map[string]string{"packet": id}})
	if err != nil {
		t.Fatal(err)
	}
	toolText, _ := f.call("pickup", map[string]any{"packet": id})
	if body := got.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(toolText, body) || got.Messages[0].Role != "user" {
		t.Errorf("pickup prompt differs from the pickup tool:\n%s", body)
	}
	got, err = f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "handoff", Arguments: map[string]string{"purpose": "wire the parser"}})
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckString(t, "handoff_prompt.golden.txt", got.Messages[0].Content.(*sdk.TextContent).Text)
	got, err = f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "implement-feature", Arguments: map[string]string{"request": "add a --dry-run flag"}})
	if err != nil || !strings.Contains(got.Messages[0].Content.(*sdk.TextContent).Text, "add a --dry-run flag") {
		t.Errorf("implement-feature prompt = %v, %v", got, err)
	}
	if _, err := f.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "fix-issue", Arguments: map[string]string{"issue": "x"}}); err == nil {
		t.Error("fix-issue with a bad issue gave no error")
	}
}

// A packet written behind the server's back (a hook, the CLI) is listed
// and announced.
func TestResourceListChanged(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	changed := make(chan struct{}, 8)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	_, cs := connect(t, Options{Root: dir, WorkDir: dir, Watch: 20 * time.Millisecond}, client)
	st := fsstore.Open(dir, fsstore.Options{})
	if _, err := st.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := handoff.Create(context.Background(), st, time.Now(), handoff.Input{Purpose: "written elsewhere", Source: "user", WorkDir: dir}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/list_changed after a packet appeared")
	}
	list, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(list.Resources) != 1 || !strings.Contains(list.Resources[0].URI, "written-elsewhere") {
		t.Fatalf("resources = %+v, %v", list, err)
	}
}

// A server started outside any project answers, says how to point it at
// one, and creates no store; the client's roots do not move it (the
// protocol deprecates them): --root does.
func TestOutsideProject(t *testing.T) {
	t.Parallel()
	nowhere := t.TempDir()
	_, cs := connect(t, Options{WorkDir: nowhere}, nil)
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "outside any project") || !strings.Contains(ins, "--root") {
		t.Errorf("instructions = %q", ins)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "packets", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "pass --root DIR") {
		t.Errorf("packets outside a project = %+v, %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "handoff", Arguments: map[string]any{"purpose": "nowhere"}})
	if err != nil || !res.IsError {
		t.Errorf("handoff outside a project = %+v, %v; want a tool error", res, err)
	}
	if _, err := os.Stat(filepath.Join(nowhere, ".agent")); err == nil {
		t.Error("a store was created outside any project")
	}
}

// The whole tools/list costs under 2 000 o200k tokens, and --tools
// serves a subset.
func TestToolListTokens(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	_, cs := connect(t, Options{Root: dir, WorkDir: dir}, nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(allTools) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(allTools))
	}
	b, _ := json.Marshal(list)
	enc, err := budget.NewO200k()
	if err != nil {
		t.Fatal(err)
	}
	n := enc.Count(string(b))
	t.Logf("tools/list: %d tools, %d bytes, %d o200k tokens", len(list.Tools), len(b), n)
	if n >= 2000 {
		t.Errorf("tools/list is %d o200k tokens; keep it under 2000", n)
	}
	for _, tl := range list.Tools {
		a := tl.Annotations
		if a == nil || a.ReadOnlyHint == (a.DestructiveHint != nil) {
			t.Errorf("%s: annotations %+v: a tool is read-only or says whether it destroys", tl.Name, a)
		}
	}

	_, cs = connect(t, Options{Root: dir, WorkDir: dir, Tools: []string{"pickup", "handoff"}}, nil)
	list, err = cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 2 {
		t.Fatalf("--tools pickup,handoff listed %v, %v", list, err)
	}
	if _, err := New(Options{Tools: []string{"pickup", "nosuch"}}); err == nil || !strings.Contains(err.Error(), `no tool "nosuch"`) {
		t.Errorf("an unknown tool = %v", err)
	}
}

// A client on the SDK's newest revision (server/discover, no
// initialize) is served too.
func TestLatestProtocol(t *testing.T) {
	// Not parallel: the fixtures' protocol version is the package's.
	defer func(v string) { protocolVersion = v }(protocolVersion)
	protocolVersion = ""
	f := newFixture(t)
	if _, res := f.call("handoff", map[string]any{"purpose": "on the newest protocol"}); res.IsError {
		t.Fatalf("handoff failed: %+v", res)
	}
	if text, res := f.call("pickup", map[string]any{}); res.IsError || !strings.Contains(text, "on the newest protocol") {
		t.Fatalf("pickup = %s", text)
	}
}

// deliveryFixture serves the delivery tools over a fresh SQLite file.
func deliveryFixture(t *testing.T) *fixture {
	dir := repo(t)
	srv, cs := connect(t, Options{Root: dir, WorkDir: dir, Deliveries: deliveryOpener(t)}, nil)
	return &fixture{t: t, dir: dir, srv: srv, cs: cs}
}

// deliveryOpener opens the delivery service on a fresh SQLite file, as
// Options.Deliveries does.
func deliveryOpener(t *testing.T) func(context.Context) (*delivery.Service, error) {
	dsn := filepath.Join(t.TempDir(), "baton.db")
	return func(ctx context.Context) (*delivery.Service, error) {
		q, err := queue.Open(ctx, dsn, queue.Config{})
		if err != nil {
			return nil, err
		}
		return &delivery.Service{Queue: q, DataDir: filepath.Dir(dsn)}, nil
	}
}

// With a delivery database the delivery tools and resource are served,
// on a real SQLite file, through the same service the CLI uses.
func TestDeliveryTools(t *testing.T) {
	t.Parallel()
	f := deliveryFixture(t)
	dir, cs := f.dir, f.cs
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != len(allTools)+len(deliveryTools) {
		t.Fatalf("tools with a database = %d, %v", len(list.Tools), err)
	}
	b, _ := json.Marshal(list)
	enc, _ := budget.NewO200k()
	n := enc.Count(string(b))
	t.Logf("tools/list with the delivery tools: %d tools, %d bytes, %d o200k tokens", len(list.Tools), len(b), n)
	// loop_start's budgets and verify commands took it past 2000; the
	// state each decision names (refused once the delivery moves) past
	// 2100; delivery_say (a person's message to the running agent) and
	// loop_start's stall_rounds past 2200.
	if n >= 2300 {
		t.Errorf("tools/list with the delivery tools is %d o200k tokens; keep it under 2300", n)
	}

	check := func(name string, args map[string]any, isError bool, want string) *sdk.CallToolResult {
		t.Helper()
		text, res := f.call(name, args)
		if res.IsError != isError || !strings.Contains(text, want) {
			t.Errorf("%s %v: isError %v (want %v), want %q in:\n%s", name, args, res.IsError, isError, want, text)
		}
		return res
	}
	check("deliveries", map[string]any{}, false, "No deliveries")
	check("delivery_create", map[string]any{}, true, "give issue")
	check("delivery_create", map[string]any{"repo": dir}, true, "repo needs summary")
	res := check("delivery_create", map[string]any{"repo": dir, "summary": "Add a --dry-run flag"}, false, "Created #1")
	id := res.StructuredContent.(map[string]any)["delivery"].(map[string]any)["id"].(string)
	check("delivery_create", map[string]any{"repo": dir, "summary": "Add a --dry-run flag"}, false, "Already there: #1")
	check("deliveries", map[string]any{"phase": "plan"}, false, "#1 "+id+": Add a --dry-run flag")
	check("deliveries", map[string]any{"phase": "nowhere"}, true, "nowhere")
	check("delivery", map[string]any{"delivery": "#1"}, false, "create by mcp")
	check("delivery", map[string]any{"delivery": "#9"}, true, "")
	check("delivery_reject", map[string]any{"delivery": "#1"}, true, "note")
	check("delivery_reject", map[string]any{"delivery": "#1", "note": " "}, true, "reject needs a reason")
	check("delivery_reject", map[string]any{"delivery": "#1", "note": "x", "notes": "no path here"}, true, "start a note with the file and line")
	check("delivery_reject", map[string]any{"delivery": "#1", "note": "x", "notes": "../etc/passwd:1: x"}, true, "not a file of the repository")
	check("delivery_cancel", map[string]any{"delivery": "#1"}, true, "")
	check("delivery_approve", map[string]any{"delivery": "#1"}, true, "")
	check("delivery_cancel", map[string]any{"delivery": "#1", "state": "plan/succeeded/5"}, true, "it was plan/succeeded (attempt 5), it is now plan/queued")
	check("delivery_cancel", map[string]any{"delivery": "#1", "state": "plan/nowhere/5"}, true, "no status")

	read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://deliveries/" + id})
	if err != nil || read.Contents[0].MIMEType != "application/json" || !strings.Contains(read.Contents[0].Text, `"phase_log"`) ||
		!strings.Contains(read.Contents[0].Text, `"waiting_for_person"`) {
		t.Errorf("delivery resource = %+v, %v", read, err)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "baton://deliveries/nosuch"}); err == nil {
		t.Error("a missing delivery was read")
	}

	// Without a database the tools are not served, and --tools says why.
	if _, err := New(Options{Tools: []string{"deliveries"}}); err == nil || !strings.Contains(err.Error(), "needs a delivery database") {
		t.Errorf("--tools deliveries without a database = %v", err)
	}
}

// baton://runner/tree is listed while a goal-tree run exists, and reads
// as `baton run tree` prints it.
func TestRunnerTreeResource(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	_, cs := connect(t, Options{Root: dir, WorkDir: dir}, nil)
	ctx := context.Background()
	has := func() bool {
		list, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Resources {
			if r.URI == runnerTreeURI {
				return true
			}
		}
		return false
	}
	if has() {
		t.Fatal("runner tree listed before any run")
	}
	goal, err := goaltree.ParseGoalFile([]byte("# Ship the parser\n\nMake the parser pass its tests.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := goaltree.Init(ctx, goaltree.Layout{Root: dir}, goaltree.InitOptions{Goal: goal, Config: goaltree.DefaultConfig(), NoBranch: true, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if !has() {
		t.Fatal("runner tree not listed during a run")
	}
	read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: runnerTreeURI})
	if err != nil || !strings.Contains(read.Contents[0].Text, "Ship the parser") || !strings.Contains(read.Contents[0].Text, "leaves passed") {
		t.Errorf("runner tree = %+v, %v", read, err)
	}
}

// The deliveries tool takes the words every edge's list filter takes,
// and says which: each word its schema names filters, and the schema
// names every word delivery.ParseFilter takes. Its results are the
// delivery view, as the HTTP API returns it.
func TestDeliveriesToolTakesTheFilterVocabulary(t *testing.T) {
	t.Parallel()
	f := deliveryFixture(t)
	ctx := context.Background()
	res := f.callOK("delivery_create", map[string]any{"repo": f.dir, "summary": "Add a --dry-run flag\nAnd document it."})
	id := res.StructuredContent.(map[string]any)["delivery"].(map[string]any)["id"].(string)

	list, err := f.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var props map[string]any
	for _, tool := range list.Tools {
		if tool.Name == "deliveries" {
			props = tool.InputSchema.(map[string]any)["properties"].(map[string]any)
		}
	}
	advertised := func(field string) []string {
		desc, _ := props[field].(map[string]any)["description"].(string)
		desc, _, _ = strings.Cut(desc, " (")
		return strings.FieldsFunc(strings.ReplaceAll(desc, " or ", ", "), func(r rune) bool { return r == ',' || r == ' ' })
	}
	want := map[string][]string{"phase": {}, "status": {}, "state": delivery.FilterStates}
	for _, p := range delivery.FilterPhases {
		want["phase"] = append(want["phase"], string(p))
	}
	for _, st := range delivery.FilterStatuses {
		want["status"] = append(want["status"], string(st))
	}
	for field, ws := range want {
		if got := advertised(field); !slices.Equal(got, ws) {
			t.Errorf("deliveries advertises %s %q, want the parser's words %q", field, got, ws)
		}
		for _, w := range advertised(field) {
			if text, res := f.call("deliveries", map[string]any{field: w}); res.IsError {
				t.Errorf("deliveries %s=%s, a word its schema offers, is refused:\n%s", field, w, text)
			}
		}
	}
	// The filter filters: the new delivery is plan/pending, queued, active.
	for _, tc := range []struct {
		args map[string]any
		n    int
	}{
		{map[string]any{"phase": "plan", "status": "pending", "state": "active"}, 1},
		{map[string]any{"state": "closed"}, 0},
		{map[string]any{"status": "succeeded"}, 0},
		{map[string]any{"phase": "close"}, 0},
	} {
		res := f.callOK("deliveries", tc.args)
		if got := len(res.StructuredContent.(map[string]any)["deliveries"].([]any)); got != tc.n {
			t.Errorf("deliveries %v lists %d, want %d", tc.args, got, tc.n)
		}
	}
	if text, res := f.call("deliveries", map[string]any{"status": "waiting"}); !res.IsError || !strings.Contains(text, "want pending, running, succeeded, failed or blocked") {
		t.Errorf("deliveries status=waiting = %s, want a refusal naming the statuses", text)
	}

	// The results are the view: a title, seconds, what a person may do.
	item := f.callOK("deliveries", map[string]any{}).StructuredContent.(map[string]any)["deliveries"].([]any)[0].(map[string]any)
	if item["id"] != id || item["title"] != "Add a --dry-run flag" || item["waiting_for_person"] != false || item["config"].(map[string]any)["phase_timeout_seconds"] != 3600.0 {
		t.Errorf("deliveries item = %v, want the delivery view", item)
	}
	detail := f.callOK("delivery", map[string]any{"delivery": id}).StructuredContent.(map[string]any)
	for _, key := range []string{"delivery", "phase_log", "agent_runs", "cost_usd", "last_event"} {
		if _, ok := detail[key]; !ok {
			t.Errorf("delivery result has no %q: %v", key, detail)
		}
	}
	if d := detail["delivery"].(map[string]any); d["title"] != "Add a --dry-run flag" || d["summary"] != "Add a --dry-run flag\nAnd document it." {
		t.Errorf("delivery result's delivery = %v", d)
	}
}

// callOK calls a tool that must succeed.
func (f *fixture) callOK(name string, args any) *sdk.CallToolResult {
	f.t.Helper()
	text, res := f.call(name, args)
	if res.IsError {
		f.t.Fatalf("%s %v failed:\n%s", name, args, text)
	}
	return res
}

// The search tool finds a packet by its words, through the same index
// as `baton search`.
func TestSearchTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.callOK("handoff", map[string]any{"purpose": "Rotate the signing keys", "next_prompt": "Replace the HMAC secret with a key pair"})
	text, res := f.call("search", map[string]any{"query": "signing keys"})
	if res.IsError || !strings.Contains(text, "packet ") || !strings.Contains(text, "Rotate the signing keys") || !strings.Contains(text, "«signing»") {
		t.Fatalf("search = %s", text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"kind":"packet"`) || !strings.Contains(string(b), `.agent/context/packets/`) {
		t.Errorf("structured result = %s", b)
	}
	if text, res := f.call("search", map[string]any{"query": "()"}); !res.IsError {
		t.Errorf("search without words = %s", text)
	}
}

// Started by a harness that names its session to its MCP servers (Claude
// Code's CLAUDE_CODE_SESSION_ID), loop_start binds the loop to that
// session and handoff records it; a session_id given wins. Over HTTP
// (no ClientEnv) nothing is bound by default.
func TestLoopStartBindsTheClientSession(t *testing.T) {
	t.Parallel()
	const claude = "9897cab8-4fa3-4e31-8762-7b8f7512b77f"
	env := map[string]string{"CLAUDE_CODE_SESSION_ID": claude}
	for _, c := range []struct {
		name      string
		clientEnv func(string) string
		given     string
		want      string
	}{
		{"stdio", func(k string) string { return env[k] }, "", claude},
		{"stdio, session given", func(k string) string { return env[k] }, "other", "other"},
		{"http", nil, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := repo(t)
			_, cs := connect(t, Options{Root: dir, WorkDir: dir, ClientEnv: c.clientEnv}, nil)
			args := map[string]any{"prompt": "Fix the tests"}
			hargs := map[string]any{"purpose": "ship it", "next_prompt": "Ship it."}
			if c.given != "" {
				args["session_id"], hargs["session_id"] = c.given, c.given
			}
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "loop_start", Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("loop_start: %v %+v", err, res)
			}
			if got, _ := res.StructuredContent.(map[string]any)["session_id"].(string); got != c.want {
				t.Errorf("the loop is bound to %q, want %q: %+v", got, c.want, res.StructuredContent)
			}
			res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "handoff", Arguments: hargs})
			if err != nil || res.IsError {
				t.Fatalf("handoff: %v %+v", err, res)
			}
			b, err := os.ReadFile(res.StructuredContent.(map[string]any)["path"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), "\nsession_id: "); has != (c.want != "") || (c.want != "" && !strings.Contains(string(b), "\nsession_id: "+c.want+"\n")) {
				t.Errorf("the packet's session, want %q:\n%s", c.want, b)
			}
		})
	}
}

// The delivery tool shows a set-up that stopped a phase: a line with its
// exit and its output in the text, a step of the timeline in the
// structured view.
func TestDeliveryToolShowsItsSetup(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	open := deliveryOpener(t)
	svc, err := open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	setup := []string{"echo fetching", "echo registry.example unreachable >&2; exit 7"}
	d, _, err := svc.Create(t.Context(), delivery.Request{Repo: dir, Summary: "Set up", Actor: "alice",
		Settings: delivery.Settings{Setup: &setup}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&delivery.Runner{Service: svc, Owner: "worker:test"}).Run(t.Context(), d.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	svc.Queue.Close()
	_, cs := connect(t, Options{Root: dir, WorkDir: dir, Deliveries: open}, nil)
	f := &fixture{t: t, dir: dir, cs: cs}
	text, res := f.call("delivery", map[string]any{"delivery": "#1"})
	if res.IsError || !strings.Contains(text, "set-up 1 for plan: failed, exit 7, 2 of 2 command(s) ran") || !strings.Contains(text, "registry.example unreachable") {
		t.Errorf("delivery tool text:\n%s", text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v delivery.DetailView
	if err := json.Unmarshal(b, &v); err != nil || len(v.Timeline) == 0 || v.Timeline[0].Setup == nil ||
		v.Timeline[0].Setup.ExitCode != 7 || !strings.Contains(v.Timeline[0].Setup.Output, "registry.example unreachable") {
		t.Errorf("delivery tool structured content = %s (%v)", b, err)
	}
}
