package web_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/testenv"
	"github.com/baton-agent/baton/internal/web"
)

// newServedEnv is newEnv served the way baton serve serves it: by
// web.Server.Serve on a real listener, with its timeouts. set changes
// the server before it starts.
func newServedEnv(t *testing.T, set func(*web.Server)) *env {
	t.Helper()
	return served(t, newEnv(t, sqlstore.SQLite), set)
}

// served serves e's delivery service and intake through Server.Serve on
// a listener of its own, with set's changes to a new Server.
func served(t *testing.T, e *env, set func(*web.Server)) *env {
	t.Helper()
	ws := &web.Server{Deliveries: e.web.Deliveries, Feed: e.web.Feed, Token: token, Open: true, Repos: e.web.Repos,
		Intake: e.web.Intake, Heartbeat: e.web.Heartbeat, Agent: e.web.Agent, Agents: e.web.Agents}
	if set != nil {
		set(ws)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ws.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v after its context ended, want nil", err)
		}
	})
	// Only the URL of the stand-in is used: requests go to Serve.
	return &env{t: t, srv: &httptest.Server{URL: "http://" + ln.Addr().String()}, svc: e.svc, web: ws, repo: e.repo, dsn: e.dsn}
}

// rawRequest sends head (request line and headers, without the blank
// line) and the first part of a body on a new connection, and returns
// the connection for the test to read the answer from.
func rawRequest(t *testing.T, base, head, partial string) net.Conn {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n\r\n"+partial); err != nil {
		t.Fatal(err)
	}
	return c
}

// status reads the status line of the answer on c, waiting at most
// limit; "" when the connection closed or nothing came.
func readStatus(t *testing.T, c net.Conn, limit time.Duration) (string, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Status, nil
}

// A body that trickles in is cut when the server's body timeout ends,
// on the unauthenticated routes and behind the token alike, and the
// connection is closed.
func TestServeCutsSlowBodies(t *testing.T) {
	t.Parallel()
	e := newServedEnv(t, func(s *web.Server) { s.BodyTimeout = 200 * time.Millisecond })
	for _, head := range []string{
		"POST /api/webhooks/github HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nX-GitHub-Event: issues\nContent-Length: 1000",
		"POST /login HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/x-www-form-urlencoded\nContent-Length: 1000",
		"POST /api/deliveries HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer " + token + "\nContent-Type: application/json\nContent-Length: 1000",
	} {
		c := rawRequest(t, e.srv.URL, head, `{"repo":`)
		// Without a body deadline the server waits for the other 992
		// bytes as long as the connection lives: the 10 s here fail it.
		got, err := readStatus(t, c, 10*time.Second)
		if err != nil || !strings.HasPrefix(got, "408") {
			t.Errorf("%s with a stalled body: %q, %v, want 408 within the 200ms body timeout", strings.SplitN(head, "\n", 2)[0], got, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("after the 408 the connection gave %d bytes, %v, want it closed", n, err)
		}
	}
}

// The body deadline ends with the body: an event stream, which reads no
// body, lives on long after it.
func TestEventStreamOutlivesBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newServedEnv(t, func(s *web.Server) { s.BodyTimeout = 100 * time.Millisecond })
	d := e.create("Stream me")
	resp, err := http.Get(e.srv.URL + "/api/deliveries/" + d.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	sc := bufio.NewScanner(resp.Body)
	beats := 0
	for sc.Scan() {
		if sc.Text() == ": heartbeat" {
			beats++
		}
		if time.Since(start) > 5*100*time.Millisecond && beats > 0 {
			return
		}
	}
	t.Fatalf("the stream ended after %s (%d heartbeats, %v): the body deadline cut it", time.Since(start), beats, sc.Err())
}

// Bodies nobody has authenticated yet (webhooks, sign-in) are read a few
// at a time; one more gets 503 at once instead of a connection held open.
func TestServeCapsUnauthenticatedBodies(t *testing.T) {
	t.Parallel()
	e := newServedEnv(t, func(s *web.Server) {
		s.BodyTimeout = time.Minute // the held bodies stay for the whole test
		s.MaxOpenBodies = 2
	})
	held := []net.Conn{
		rawRequest(t, e.srv.URL, "POST /login HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/x-www-form-urlencoded\nContent-Length: 1000", "token="),
		rawRequest(t, e.srv.URL, "POST /api/webhooks/github HTTP/1.1\nHost: 127.0.0.1\nContent-Length: 1000", "{"),
	}
	// The held requests reach their handlers soon after they connect;
	// until both hold a slot, a third one still gets through.
	third := func() int {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/webhooks/github", strings.NewReader(`{}`))
		req.Header.Set("X-GitHub-Event", "ping")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		return resp.StatusCode
	}
	seen := map[int]int{} // status: how many times, said on failure
	if !testenv.Until(10*time.Second, nil, func() bool { c := third(); seen[c]++; return c == http.StatusServiceUnavailable }) {
		for i, c := range held {
			st, err := readStatus(t, c, 100*time.Millisecond)
			t.Logf("held request %d: answered %q, %v", i, st, err)
		}
		t.Fatalf("waited 10s for a third unauthenticated body to get 503; the third got %v", seen)
	}
	// Authenticated requests are not counted.
	if d := e.create("Still served"); d.ID == "" {
		t.Error("an authenticated create failed while the slots were taken")
	}
	for _, c := range held {
		c.Close()
	}
	if !testenv.Until(10*time.Second, nil, func() bool { return third() != http.StatusServiceUnavailable }) {
		t.Fatal("waited 10s for the slots to free once the held clients went away")
	}
}

// A name the server was not given gets 421 and one line: a page on
// evil.example rebound to 127.0.0.1 reads nothing.
func TestServeRefusesUnknownHost(t *testing.T) {
	t.Parallel()
	e := newServedEnv(t, func(s *web.Server) { s.Hosts = []string{"baton.example.com"} })
	e.create("A secret plan")
	get := func(path, host string) (int, string) {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/api/deliveries", "/", "/api/settings", "/login"} {
		code, body := get(path, "evil.example:7070")
		if code != http.StatusMisdirectedRequest || strings.Count(body, "\n") != 1 || strings.Contains(body, "secret") {
			t.Errorf("GET %s with Host evil.example:7070 = %d %q, want 421 and one line", path, code, body)
		}
	}
	u, _ := url.Parse(e.srv.URL)
	for _, host := range []string{u.Host, "localhost:7070", "LOCALHOST", "[::1]:7070", "baton.example.com", "Baton.Example.COM.:443", "10.1.2.3:7070"} {
		if code, body := get("/api/deliveries", host); code != http.StatusOK || !strings.Contains(body, "secret") {
			t.Errorf("GET /api/deliveries with Host %s = %d, want 200 with the list", host, code)
		}
	}
	// Probes name whatever they like and learn nothing.
	if code, _ := get("/healthz", "evil.example"); code != http.StatusOK {
		t.Errorf("GET /healthz with Host evil.example = %d, want 200", code)
	}
}
