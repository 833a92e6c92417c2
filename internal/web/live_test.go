package web_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/web"
)

// liveEvent is one event of the dashboard's shared stream.
type liveEvent struct {
	event string
	data  map[string]any
}

// readLive reads the shared stream at u until n events have come.
func readLive(t *testing.T, u string, n int, during func()) []liveEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s = %d %s: %s", u, resp.StatusCode, ct, b)
	}
	var out []liveEvent
	var cur liveEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case line == "" && cur.event != "":
			out = append(out, cur)
			cur = liveEvent{}
			if len(out) == 1 && during != nil {
				go during()
			}
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		}
	}
	return out
}

// One stream carries every delivery a browser's pages watch, each event
// naming its delivery and resuming after the event named, and a pulse
// (the waiting count) first and whenever it changes.
func TestLiveStreamCarriesManyDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	a, b := e.create("Stream A"), e.create("Stream B")
	u := e.srv.URL + "/live?watch=" + a.ID + ":0," + b.ID + ":1"
	evs := readLive(t, u, 6, func() { e.do("POST", "/api/deliveries/"+a.ID+"/close", "", true, nil) })
	if evs[0].event != "pulse" || evs[0].data["version"] == "" {
		t.Fatalf("the stream starts with %+v, want the pulse", evs[0])
	}
	seen := map[string][]float64{}
	for _, ev := range evs[1:] {
		if ev.event == "pulse" {
			continue
		}
		id, _ := ev.data["delivery"].(string)
		seq, _ := ev.data["seq"].(float64)
		seen[id] = append(seen[id], seq)
	}
	if len(seen[a.ID]) < 2 || seen[a.ID][0] != 1 {
		t.Errorf("events of A: %v, want from 1 on", seen[a.ID])
	}
	if len(seen[b.ID]) == 0 || seen[b.ID][0] != 2 {
		t.Errorf("events of B: %v, want from 2 on (after 1)", seen[b.ID])
	}
	for _, bad := range []string{"?watch=nope", "?watch=" + a.ID + ":x", "?watch=" + strings.Repeat(a.ID+":0,", 70) + a.ID + ":0"} {
		resp, err := http.Get(e.srv.URL + "/live" + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET /live%s = %d, want 400", bad, resp.StatusCode)
		}
	}
}

// Static files are named by their content's hash, cached for a year
// under that name, revalidated by ETag otherwise, and gzipped for
// clients that take it.
func TestStaticFilesAreCompressedAndCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	page := get(t, http.DefaultClient, e.srv.URL+"/settings")
	m := regexp.MustCompile(`src="(/static/live\.js\?v=[0-9a-f]{10})"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page names live.js without a hash:\n%s", between(page, "<head>", "</head>"))
	}
	req, _ := http.NewRequest("GET", e.srv.URL+m[1], nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatalf("live.js is not gzipped (%s): %v", resp.Header.Get("Content-Encoding"), err)
	}
	body, _ := io.ReadAll(zr)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(string(body), "BatonHub") ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || resp.Header.Get("ETag") == "" {
		t.Errorf("live.js: %s, Cache-Control %q, ETag %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"))
	}
	t.Logf("live.js: %d bytes gzipped, %d plain", resp.ContentLength, len(body))

	req, _ = http.NewRequest("GET", e.srv.URL+"/static/style.css", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	r2, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 200 || r2.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("style.css without its hash = %d, Cache-Control %q; want 200 revalidated", r2.StatusCode, r2.Header.Get("Cache-Control"))
	}
	req.Header.Set("If-None-Match", r2.Header.Get("ETag"))
	r3, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusNotModified {
		t.Errorf("style.css with its ETag = %d, want 304", r3.StatusCode)
	}
}

// Pages go gzipped to a client that takes it, and the same page plain
// to one that does not: a delivery's page with a big diff is hundreds of
// KiB of markup.
func TestPagesAreCompressed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	fetch := func(enc string) *http.Response {
		req, _ := http.NewRequest("GET", e.srv.URL+"/settings", nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	plain := fetch("")
	want, _ := io.ReadAll(plain.Body)
	plain.Body.Close()
	if plain.Header.Get("Content-Encoding") != "" || !strings.Contains(string(want), "</html>") {
		t.Fatalf("without Accept-Encoding: %s, %d bytes", plain.Header.Get("Content-Encoding"), len(want))
	}
	zipped := fetch("gzip, br")
	defer zipped.Body.Close()
	if zipped.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(zipped.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("with gzip: Content-Encoding %q, Vary %q", zipped.Header.Get("Content-Encoding"), zipped.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// The CSRF token differs per request only if the session does: none here.
	if string(got) != string(want) {
		t.Errorf("the gzipped page is not the page:\n%s\n---\n%s", got, want)
	}
	t.Logf("/settings: %d bytes plain, %d gzipped", len(want), zipped.ContentLength)
}

// A server whose workers would run an agent that is not installed
// refuses a delivery with the fix, instead of one whose plan fails at
// once; a server whose agents run on workers elsewhere takes it.
func TestCreateSaysTheAgentIsMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	e.web.Agent = web.AgentStatus{Name: "claude", Fix: "Install Claude Code, or restart with --agent codex."}
	body := `{"repo":"` + e.repo + `","summary":"Needs an agent"}`
	var ae apiError
	if resp := e.do("POST", "/api/deliveries", body, true, &ae); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(ae.Message, "claude, is not installed") || !strings.Contains(ae.Message, "restart with --agent codex") {
		t.Errorf("create with claude missing = %d %+v", resp.StatusCode, ae)
	}
	e.web.Agent.Elsewhere = true
	if resp := e.do("POST", "/api/deliveries", body, true, nil); resp.StatusCode != http.StatusCreated {
		t.Errorf("create on a server whose workers are elsewhere = %d, want 201", resp.StatusCode)
	}
}

// A retry from the API can switch the agent, to a harness baton knows
// only; no other action takes one.
func TestAPIRetrySwitchesTheAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	d := e.create("Retry me elsewhere")
	ctx := t.Context()
	run, err := e.svc.Act(ctx, d.ID, delivery.Input{Action: delivery.ActRun, Actor: "worker:test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Act(ctx, d.ID, delivery.Input{Action: delivery.ActFail, Actor: "worker:test", Attempt: run.Attempt, Note: "claude: not found"}); err != nil {
		t.Fatal(err)
	}
	e.wantError("POST", "/api/deliveries/"+d.ID+"/retry", `{"agent":"command:/bin/evil"}`, true, http.StatusBadRequest, "invalid")
	e.wantError("POST", "/api/deliveries/"+d.ID+"/close", `{"agent":"codex"}`, true, http.StatusBadRequest, "invalid")
	var v struct {
		RunStatus string `json:"run_status"`
		Config    struct {
			Agent string `json:"agent"`
		} `json:"config"`
	}
	if resp := e.do("POST", "/api/deliveries/"+d.ID+"/retry", `{"agent":"codex","reason":"claude is missing"}`, true, &v); resp.StatusCode != 200 || v.Config.Agent != "codex" || v.RunStatus != "pending" {
		t.Errorf("retry with codex = %d %+v", resp.StatusCode, v)
	}
}
