package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpProc is the real binary serving MCP on stdio.
type mcpProc struct {
	t     *testing.T
	in    io.WriteCloser
	lines *bufio.Scanner
	cmd   *exec.Cmd
}

func startMCP(t *testing.T, dir string, env []string, args ...string) *mcpProc {
	t.Helper()
	cmd := exec.Command(batonBin, append([]string{"mcp"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mcpProc{t: t, in: in, lines: bufio.NewScanner(out), cmd: cmd}
	p.lines.Buffer(nil, 4<<20)
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("baton mcp exited with %v at end of input; stderr: %s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Error("baton mcp did not exit at end of input")
		}
	})
	return p
}

func (p *mcpProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads the next message, skipping notifications.
func (p *mcpProc) recv() map[string]any {
	p.t.Helper()
	for p.lines.Scan() {
		var m map[string]any
		if err := json.Unmarshal(p.lines.Bytes(), &m); err != nil {
			p.t.Fatalf("baton mcp wrote %q: %v", p.lines.Text(), err)
		}
		if _, isNote := m["method"]; isNote && m["id"] == nil {
			continue
		}
		return m
	}
	p.t.Fatalf("baton mcp closed its output: %v", p.lines.Err())
	return nil
}

func resultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// The real binary over stdio, as a client starts it: initialize, list,
// call, a malformed message, a cancelled call, and a clean exit at end of
// input.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// A GitHub API that never answers, so a brief call is still running
	// when it is cancelled; it says when the call reached it and when the
	// call gave up.
	hang := make(chan struct{})
	var release sync.Once
	unhang := func() { release.Do(func() { close(hang) }) }
	arrived, gaveUp := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default: // said already, by another request of the call
		}
	}
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signal(arrived)
		select {
		case <-hang:
		case <-r.Context().Done():
			signal(gaveUp)
		}
	}))
	defer gh.Close()
	defer unhang()
	env := gitEnv(home, "GITHUB_TOKEN=test-token", "GITHUB_API_URL="+gh.URL+"/", "BATON_GITHUB_ALLOW_HTTP_LOOPBACK=1")
	repo := userRepo(t, env)
	batonRun(t, env, repo, "handoff", "wire the parser", "--next-prompt", "Finish the lexer, then run go test ./...")

	p := startMCP(t, repo, env)
	p.send(initLine)
	if m := p.recv(); m["id"] != float64(1) || !strings.Contains(m["result"].(map[string]any)["instructions"].(string), repo) {
		t.Fatalf("initialize = %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	m := p.recv()
	tools, _ := m["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 12 {
		t.Errorf("tools/list gave %d tools: %v", len(tools), m)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pickup","arguments":{}}}`)
	if m := p.recv(); m["id"] != float64(3) || !strings.Contains(resultText(m), "Finish the lexer, then run go test ./...") {
		t.Errorf("pickup = %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"pickup"`) // cut short
	if m := p.recv(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Errorf("a malformed line = %v, want -32700", m)
	}
	// A call cancelled while it runs gets no answer; the session goes on.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fix_issue_brief","arguments":{"issue":"7","repo":"octo/app"}}}`)
	waitFor(t, arrived, "the brief call's GitHub request")
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"the user pressed Esc"}}`)
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if m := p.recv(); m["id"] != float64(6) {
		t.Errorf("ping after a cancellation = %v", m)
	}
	select {
	case <-gaveUp:
	case <-time.After(10 * time.Second):
		// The request's end was not seen (a loaded machine, a kept
		// connection): let GitHub answer now. A call that was not
		// cancelled would then answer, which the end of this test finds.
		t.Log("the GitHub request of the cancelled call was not seen to end; releasing it")
		unhang()
	}
	p.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"packets","arguments":{}}}`)
	if m := p.recv(); m["id"] != float64(7) || !strings.Contains(resultText(m), "wire the parser") {
		t.Errorf("the next message after a cancelled call = %v, want the answer to call 7", m)
	}
	// Nothing else comes before the server exits at the end of its input:
	// no late answer to the cancelled call.
	p.in.Close()
	for p.lines.Scan() {
		if strings.Contains(p.lines.Text(), `"id":5`) {
			t.Errorf("the cancelled call was answered: %s", p.lines.Text())
		}
	}
}

// waitFor waits for a signal on ch, failing the test after a generous
// time in case it never comes.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
	}
}

// --tools serves a subset; a name that is no tool is a usage error.
func TestMCPToolsFlag(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	p := startMCP(t, repo, env, "--tools", "pickup,handoff")
	p.send(initLine)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	tools, _ := p.recv()["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 2 {
		t.Errorf("--tools pickup,handoff listed %d tools", len(tools))
	}
	cmd := exec.Command(batonBin, "mcp", "--tools", "pickup,nosuch")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 || !strings.Contains(string(out), `no tool "nosuch"`) {
		t.Errorf("--tools nosuch: exit %d, %s", code, out)
	}
}

// startMCPHTTP runs `baton mcp --http` and returns its base URL.
func startMCPHTTP(t *testing.T, dir string, env []string, addr string, args ...string) string {
	t.Helper()
	cmd := exec.Command(batonBin, append([]string{"mcp", "--http", addr}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "baton mcp: serving "); ok {
			go io.Copy(io.Discard, stderr)
			return u
		}
	}
	t.Fatalf("baton mcp --http printed no address")
	return ""
}

func mcpHTTPClient(ctx context.Context, url, token string) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: bearer{token}}
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	return client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// --http serves the same tools over streamable HTTP: open on loopback,
// behind the bearer token when BATON_API_TOKEN is set, and refused on a
// non-loopback address without one.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	batonRun(t, env, repo, "handoff", "over http", "--next-prompt", "Serve it over HTTP.")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	url := startMCPHTTP(t, repo, env, "127.0.0.1:0")
	cs, err := mcpHTTPClient(ctx, url, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "pickup", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "Serve it over HTTP.") {
		t.Fatalf("pickup over http = %+v, %v", res, err)
	}
	cs.Close()
	// A web page reaching the loopback server through the browser.
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Host": "evil.example"}} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initLine))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
			if k == "Host" {
				req.Host = v
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a request with %v got %d, want 403", h, resp.StatusCode)
		}
	}

	url = startMCPHTTP(t, repo, append(env, "BATON_API_TOKEN=s3cret-token"), "127.0.0.1:0")
	if _, err := mcpHTTPClient(ctx, url, ""); err == nil {
		t.Error("a client without the token connected")
	}
	if _, err := mcpHTTPClient(ctx, url, "wrong"); err == nil {
		t.Error("a client with a wrong token connected")
	}
	cs, err = mcpHTTPClient(ctx, url, "s3cret-token")
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "packets", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("packets with the token = %+v, %v", res, err)
	}
	cs.Close()

	// The token `baton serve` generated in the data directory counts too.
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "api-token"), []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url = startMCPHTTP(t, repo, append(env, "BATON_DATA_DIR="+data), "127.0.0.1:0")
	if _, err := mcpHTTPClient(ctx, url, ""); err == nil {
		t.Error("a client without serve's token connected")
	}
	if cs, err := mcpHTTPClient(ctx, url, "file-token"); err != nil {
		t.Errorf("with serve's token: %v", err)
	} else {
		cs.Close()
	}

	cmd := exec.Command(batonBin, "mcp", "--http", "0.0.0.0:0")
	cmd.Dir, cmd.Env = repo, env
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "is not loopback and there is no API token") {
		t.Errorf("--http 0.0.0.0:0 without a token: exit %d, %s", code, out)
	}
}

// Over HTTP the delivery tools follow baton serve's rules: without an API
// token the server reads but changes nothing, even with a database;
// with one, delivery_create takes only the repositories it was given,
// and ten wrong tokens in a minute get 429 while the right one still
// works.
func TestMCPHTTPDeliveries(t *testing.T) {
	t.Parallel()
	home, data := t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data)
	repo, other := userRepo(t, env), userRepo(t, env)
	batonRun(t, env, repo, "delivery", "create", "--repo", ".", "--summary", "Already here", "--agent", "command:true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call := func(cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res.Content[0].(*sdk.TextContent).Text, res.IsError
	}

	url := startMCPHTTP(t, repo, env, "127.0.0.1:0")
	cs, err := mcpHTTPClient(ctx, url, "")
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(cs, "deliveries", map[string]any{}); isErr || !strings.Contains(text, "Already here") {
		t.Errorf("deliveries without a token = %q (error %v), want the list", text, isErr)
	}
	for tool, args := range map[string]map[string]any{
		"delivery_create": {"repo": repo, "summary": "Sneak this in"},
		"delivery_reject": {"delivery": "#1", "note": "no"},
		"delivery_cancel": {"delivery": "#1"},
	} {
		if text, isErr := call(cs, tool, args); !isErr || !strings.Contains(text, "no API token") {
			t.Errorf("%s without a token = %q (error %v), want it refused", tool, text, isErr)
		}
	}
	cs.Close()
	if out := batonRun(t, env, repo, "delivery", "list", "--json"); strings.Contains(out, "Sneak this in") || !strings.Contains(out, `"plan"`) {
		t.Errorf("the deliveries changed without a token:\n%s", out)
	}

	url = startMCPHTTP(t, repo, append(env, "BATON_API_TOKEN=mcp-token"), "127.0.0.1:0")
	for i := range 10 {
		if code := postStatus(t, url, "wrong"); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d = %d, want 401", i+1, code)
		}
	}
	if code := postStatus(t, url, "wrong"); code != http.StatusTooManyRequests {
		t.Errorf("the 11th wrong token = %d, want 429", code)
	}
	cs, err = mcpHTTPClient(ctx, url, "mcp-token")
	if err != nil {
		t.Fatalf("the right token after ten wrong ones: %v", err)
	}
	defer cs.Close()
	if text, isErr := call(cs, "delivery_create", map[string]any{"repo": repo, "summary": "Add a health check"}); isErr || !strings.Contains(text, "Created") {
		t.Errorf("delivery_create in the repository it runs in = %q (error %v)", text, isErr)
	}
	if text, isErr := call(cs, "delivery_create", map[string]any{"repo": other, "summary": "Elsewhere"}); !isErr || !strings.Contains(text, "is not a repository this server was given") {
		t.Errorf("delivery_create in another repository = %q (error %v), want it refused", text, isErr)
	}
}

// postStatus posts an initialize request with a bearer token and
// returns the status.
func postStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(initLine))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// doctor starts the MCP server a project file registers only when it is
// the baton on PATH: .mcp.json is the checkout's to write, and a hostile
// one must not get doctor to run its program.
func TestDoctorRefusesForeignMCPCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := gitEnv(home)
	repo := userRepo(t, env)
	marker := filepath.Join(t.TempDir(), "ran")
	script := filepath.Join(repo, "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(`{"mcpServers":{"baton":{"command":"./evil.sh","args":["mcp"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(batonBin, "doctor")
	cmd.Dir, cmd.Env = repo, env
	out, err := cmd.CombinedOutput()
	if _, statErr := os.Stat(marker); statErr == nil {
		t.Fatal("doctor ran the program a project's .mcp.json named")
	}
	if err == nil || !strings.Contains(string(out), "registers `./evil.sh mcp`, not `baton mcp`: not started") {
		t.Errorf("doctor with a foreign MCP command: %v\n%s", err, out)
	}
}
