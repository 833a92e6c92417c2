package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/web"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

const token = "baton_test_token"

type env struct {
	t    testing.TB
	srv  *httptest.Server
	svc  *delivery.Service
	web  *web.Server
	repo string
	dsn  string
}

// newEnv serves the API on a real database of dialect, with one local
// repository allowed.
func newEnv(t testing.TB, dialect sqlstore.Dialect) *env {
	t.Helper()
	return newEnvDSN(t, sqlstoretest.DSN(t, dialect))
}

func newEnvDSN(t testing.TB, dsn string) *env {
	t.Helper()
	return newEnvQueue(t, dsn, queue.Config{})
}

// newEnvQueue is newEnvDSN with the queue configured as cfg says.
func newEnvQueue(t testing.TB, dsn string, cfg queue.Config) *env {
	t.Helper()
	q, err := queue.Open(t.Context(), dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc := &delivery.Service{Queue: q, DataDir: t.TempDir(), DefaultAgent: "command:true"}
	repo := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "initial")
	feed := delivery.NewFeed(svc, 50*time.Millisecond)
	ws := &web.Server{Deliveries: svc, Feed: feed, Token: token, Open: true, Repos: []string{repo},
		Intake: &intake.Service{Deliveries: svc, WebhookSecret: "whsec"}, Heartbeat: 50 * time.Millisecond,
		Agent: web.AgentStatus{Name: "command:true", Installed: true}, Agents: harness.AgentNames()}
	srv := httptest.NewServer(ws.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		feed.Close()
		q.Close()
	})
	return &env{t: t, srv: srv, svc: svc, web: ws, repo: repo, dsn: dsn}
}

// do sends a request (with the token when auth) and decodes JSON into v.
func (e *env) do(method, path, body string, auth bool, v any) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp
}

type apiError struct{ Code, Message string }

func (e *env) wantError(method, path, body string, auth bool, status int, code string) {
	e.t.Helper()
	var ae apiError
	resp := e.do(method, path, body, auth, &ae)
	if resp.StatusCode != status || ae.Code != code || ae.Message == "" {
		e.t.Errorf("%s %s = %d %+v, want %d %s with a message", method, path, resp.StatusCode, ae, status, code)
	}
}

type deliveryJSON struct {
	ID        string   `json:"id"`
	Seq       int64    `json:"seq"`
	Phase     string   `json:"phase"`
	RunStatus string   `json:"run_status"`
	Actions   []string `json:"actions"`
}

func (e *env) create(summary string) deliveryJSON {
	e.t.Helper()
	var out struct {
		Created  bool         `json:"created"`
		Delivery deliveryJSON `json:"delivery"`
	}
	body, _ := json.Marshal(map[string]any{"repo": e.repo, "summary": summary})
	if resp := e.do("POST", "/api/deliveries", string(body), true, &out); resp.StatusCode != http.StatusCreated || !out.Created {
		e.t.Fatalf("create = %d %+v", resp.StatusCode, out)
	}
	return out.Delivery
}

func TestAPIDeliveries(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			e := newEnv(t, dialect)
			d := e.create("Add a health endpoint")
			if d.Phase != "plan" || d.RunStatus != "pending" || d.Seq != 1 {
				t.Errorf("created %+v", d)
			}
			// The same request again: the same delivery, 200.
			var again struct {
				Created  bool         `json:"created"`
				Delivery deliveryJSON `json:"delivery"`
			}
			body, _ := json.Marshal(map[string]any{"repo": e.repo, "summary": "Add a health endpoint"})
			if resp := e.do("POST", "/api/deliveries", string(body), true, &again); resp.StatusCode != 200 || again.Created || again.Delivery.ID != d.ID {
				t.Errorf("second create = %d %+v", resp.StatusCode, again)
			}
			for i := 2; i <= 5; i++ {
				e.create(fmt.Sprintf("Task %d", i))
			}
			// Cursor pagination: 2 + 2 + 1, newest first.
			var seqs []int64
			cursor := ""
			for pages := 0; pages < 5; pages++ {
				var page struct {
					Deliveries []deliveryJSON `json:"deliveries"`
					NextCursor string         `json:"next_cursor"`
				}
				e.do("GET", "/api/deliveries?limit=2&cursor="+cursor, "", false, &page)
				for _, x := range page.Deliveries {
					seqs = append(seqs, x.Seq)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if fmt.Sprint(seqs) != "[5 4 3 2 1]" {
				t.Errorf("paged seqs = %v", seqs)
			}
			var found struct {
				Deliveries []deliveryJSON `json:"deliveries"`
			}
			e.do("GET", "/api/deliveries?q=HEALTH&state=active", "", false, &found)
			if len(found.Deliveries) != 1 || found.Deliveries[0].ID != d.ID {
				t.Errorf("search = %+v", found)
			}
			// Actions: close, then retry is refused by the state machine (409).
			var closed deliveryJSON
			if resp := e.do("POST", "/api/deliveries/"+d.ID+"/close", `{"reason":"not needed"}`, true, &closed); resp.StatusCode != 200 || closed.Phase != "close" {
				t.Errorf("close = %d %+v", resp.StatusCode, closed)
			}
			e.wantError("POST", "/api/deliveries/"+d.ID+"/retry", "", true, 409, "conflict")
			e.wantError("POST", "/api/deliveries/"+d.ID+"/explode", "", true, 404, "not_found")
			e.wantError("GET", "/api/deliveries/nope-nope", "", false, 404, "not_found")
			e.wantError("GET", "/api/deliveries?phase=nowhere", "", false, 400, "invalid")
			var detail struct {
				Delivery deliveryJSON `json:"delivery"`
				PhaseLog []struct {
					DurationSeconds float64 `json:"duration_seconds"`
				} `json:"phase_log"`
				LastEvent int64 `json:"last_event"`
			}
			e.do("GET", "/api/deliveries/"+d.ID, "", false, &detail)
			if detail.Delivery.RunStatus != "failed" || len(detail.PhaseLog) < 3 || detail.LastEvent < 3 {
				t.Errorf("detail = %+v", detail)
			}
		})
	}
}

// Requests cannot choose what runs, cannot name another directory, and
// bodies are bounded.
func TestAPIRefusesWhatARequestMustNotChoose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	// A link inside the allowed repository to a repository it was not given.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, other, "init", "-q", "-b", "main")
	gittest.Git(t, other, "commit", "-q", "--allow-empty", "-m", "initial")
	if err := os.Symlink(other, filepath.Join(e.repo, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"repo":"` + e.repo + `/elsewhere","summary":"x"}`,
		`{"repo":"` + e.repo + `","summary":"x","agent":"command:rm -rf /"}`,
		`{"repo":"` + e.repo + `","summary":"x","verify":"curl evil"}`,
		`{"repo":"` + e.repo + `","summary":"x","agent_args":["--dangerously-skip-permissions"]}`,
		`{"repo":"/etc","summary":"x"}`,
		`{"repo":"` + e.repo + `/../..","summary":"x"}`,
		`{"repo":"` + e.repo + `","summary":"x","surprise":1}`,
		`not json`,
	} {
		e.wantError("POST", "/api/deliveries", body, true, 400, "invalid")
	}
	big := `{"summary":"` + strings.Repeat("x", web.MaxBody) + `"}`
	e.wantError("POST", "/api/deliveries", big, true, 413, "too_large")
	e.wantError("POST", "/api/sources", `{"repo":"octo/app","agent":"command:sh -c evil"}`, true, 400, "invalid")
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 0 {
		t.Errorf("refused requests stored %d deliveries", len(list))
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	e.wantError("POST", "/api/deliveries", `{}`, false, 401, "unauthorized")
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/deliveries", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("wrong token = %d, want 401", resp.StatusCode)
	}
	// Reads on loopback need no token; a closed server needs one for all.
	if resp := e.do("GET", "/api/deliveries", "", false, nil); resp.StatusCode != 200 {
		t.Errorf("open read = %d", resp.StatusCode)
	}
	e.web.Open = false
	e.wantError("GET", "/api/deliveries", "", false, 401, "unauthorized")
	if resp := e.do("GET", "/api/deliveries", "", true, nil); resp.StatusCode != 200 {
		t.Errorf("closed read with token = %d", resp.StatusCode)
	}
	if resp := e.do("GET", "/healthz", "", false, nil); resp.StatusCode != 200 {
		t.Errorf("healthz on a closed server = %d", resp.StatusCode)
	}
	// Repeated wrong tokens are slowed down.
	var last int
	for range 12 {
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/deliveries", nil)
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		last = resp.StatusCode
	}
	if last != 429 {
		t.Errorf("after 12 wrong tokens = %d, want 429", last)
	}
}

// The dashboard signs in with the token once; its forms carry a CSRF
// token; a cross-site form post is refused.
func TestSessionAndCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	d := e.create("Dashboard task")
	jar := &cookieJar{}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values, origin string) *http.Response {
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("/login", url.Values{"token": {"nope"}}, e.srv.URL); resp.StatusCode != 401 {
		t.Errorf("login with a wrong token = %d", resp.StatusCode)
	}
	resp := post("/login", url.Values{"token": {token}, "name": {"alice"}, "next": {"/"}}, e.srv.URL)
	if resp.StatusCode != 303 || jar.cookie == nil || !jar.cookie.HttpOnly || jar.cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login = %d, cookie %+v", resp.StatusCode, jar.cookie)
	}
	page := get(t, c, e.srv.URL+"/deliveries/"+d.ID)
	csrf := between(page, `name="csrf" value="`, `"`)
	if csrf == "" || strings.Contains(page, token) {
		t.Fatalf("page has no CSRF token, or shows the API token")
	}
	// No CSRF token, a cross-site origin, then the real thing.
	if resp := post("/deliveries/"+d.ID+"/close", url.Values{}, e.srv.URL); resp.StatusCode != 403 {
		t.Errorf("form without CSRF = %d, want 403", resp.StatusCode)
	}
	if resp := post("/deliveries/"+d.ID+"/close", url.Values{"csrf": {csrf}}, "https://evil.example"); resp.StatusCode != 403 {
		t.Errorf("cross-site form = %d, want 403", resp.StatusCode)
	}
	if resp := post("/deliveries/"+d.ID+"/close", url.Values{"csrf": {csrf}}, e.srv.URL); resp.StatusCode != 303 {
		t.Errorf("form with CSRF = %d, want 303", resp.StatusCode)
	}
	cur, _ := e.svc.Current(t.Context(), d.ID)
	if cur.Phase != "close" {
		t.Errorf("delivery is %s after the form", cur.String())
	}
	log, _ := e.svc.PhaseLog(t.Context(), d.ID)
	if a := log[len(log)-1].Actor; a != "alice" {
		t.Errorf("phase log actor = %q, want the session's name", a)
	}
}

type cookieJar struct{ cookie *http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	for _, c := range cs {
		if c.Name == "baton_session" {
			j.cookie = c
		}
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	if j.cookie == nil {
		return nil
	}
	return []*http.Cookie{j.cookie}
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d: %s", u, resp.StatusCode, b)
	}
	return string(b)
}

func between(s, a, b string) string {
	_, rest, ok := strings.Cut(s, a)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, b)
	return v
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct{ id, event, data string }

// readEvents reads events from a stream until n arrive.
func readEvents(t *testing.T, u, lastID string, n int) []sseEvent {
	t.Helper()
	return readEventsOpened(t, u, lastID, n, nil)
}

// readEventsOpened is readEvents that closes opened once the stream's
// headers came, that is once the server streams.
func readEventsOpened(t *testing.T, u, lastID string, n int, opened chan struct{}) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if opened != nil {
		close(opened)
	}
	var out []sseEvent
	var cur sseEvent
	sawBeat := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case line == "":
			if cur.id != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ": heartbeat"):
			sawBeat = true
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	_ = sawBeat
	return out
}

// The event stream replays the stored log, resumes after Last-Event-ID,
// and does so across a server restart: the log is in the database.
func TestEventStreamResumesAcrossRestart(t *testing.T) {
	t.Parallel()
	dsn := sqlstoretest.DSN(t, sqlstore.SQLite)
	e := newEnvDSN(t, dsn)
	d := e.create("Stream me")
	e.do("POST", "/api/deliveries/"+d.ID+"/close", "", true, nil)
	all := readEvents(t, e.srv.URL+"/api/deliveries/"+d.ID+"/events", "", 3)
	if len(all) != 3 || all[0].id != "1" || all[2].id != "3" || all[0].event != "phase" {
		t.Fatalf("replay = %+v", all)
	}
	var ev struct {
		Seq  int64  `json:"seq"`
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(all[2].data), &ev); err != nil || ev.Seq != 3 || ev.Text == "" {
		t.Errorf("event data %q: %v", all[2].data, err)
	}
	// A new server on the same database: resuming after 2 gives 3 only.
	e.srv.Close()
	e2 := newEnvDSN(t, dsn)
	got := readEvents(t, e2.srv.URL+"/api/deliveries/"+d.ID+"/events", "2", 1)
	if len(got) != 1 || got[0].id != "3" {
		t.Errorf("resumed = %+v, want event 3", got)
	}
	// Live: a change made after the stream started arrives.
	d2 := e2.create("Live one")
	done, opened := make(chan []sseEvent), make(chan struct{})
	go func() { done <- readEventsOpened(t, e2.srv.URL+"/api/deliveries/"+d2.ID+"/events", "2", 1, opened) }()
	<-opened
	e2.do("POST", "/api/deliveries/"+d2.ID+"/close", "", true, nil)
	if live := <-done; len(live) != 1 || live[0].id != "3" || !strings.Contains(live[0].data, "close") {
		t.Errorf("live = %+v", live)
	}
}

func TestWebhookSignatures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	send := func(event, sig, body string) int {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/webhooks/github", strings.NewReader(body))
		req.Header.Set("X-GitHub-Event", event)
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ping := `{"zen":"hi","repository":{"full_name":"octo/app"}}`
	if got := send("ping", intake.Sign("whsec", []byte(ping)), ping); got != 202 {
		t.Errorf("valid ping = %d", got)
	}
	if got := send("ping", intake.Sign("other", []byte(ping)), ping); got != 401 {
		t.Errorf("wrong secret = %d", got)
	}
	if got := send("ping", "", ping); got != 401 && got != 400 {
		t.Errorf("missing signature = %d", got)
	}
	replayed := strings.Replace(ping, "hi", "hello", 1) // same signature, changed body
	if got := send("ping", intake.Sign("whsec", []byte(ping)), replayed); got != 401 {
		t.Errorf("replayed body with the old signature = %d", got)
	}
	issue := `{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"octo/none"},"issue":{"number":1,"state":"open","labels":[{"name":"baton"}],"html_url":"https://github.com/octo/none/issues/1"}}`
	if got := send("issues", intake.Sign("whsec", []byte(issue)), issue); got != 202 {
		t.Errorf("event for a repository without a source = %d", got)
	}
	if list, _ := e.svc.List(t.Context(), baton.DeliveryFilter{}); len(list) != 0 {
		t.Errorf("an event without a source made %d deliveries", len(list))
	}
}

func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	e.create("Count me")
	e.web.ObserveJob("plan", "succeeded", 2*time.Second)
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		`baton_deliveries{phase="plan",status="pending"} 1`,
		`baton_job_duration_seconds_count{phase="plan",result="succeeded"} 1`,
		`baton_http_request_duration_seconds_count{route="POST /api/deliveries",code="201"} 1`,
		"# TYPE baton_agent_cost_usd_total counter",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	checkExposition(t, text)
	if r := e.do("GET", "/readyz", "", false, nil); r.StatusCode != 200 {
		t.Errorf("readyz = %d", r.StatusCode)
	}
}

var _ = agentrun.EventsLog

// checkExposition checks every sample line of the text format: a metric
// name starting with baton_, optional labels, a number.
func checkExposition(t *testing.T, text string) {
	t.Helper()
	// The official parser is the reference for the format; it is linked
	// into this test only, never into baton.
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v\n%s", err, text)
	}
	for name, f := range families {
		if !strings.HasPrefix(name, "baton_") {
			t.Errorf("metric %s does not start with baton_", name)
		}
		if f.GetHelp() == "" {
			t.Errorf("metric %s has no HELP", name)
		}
	}
}

// Free text in requests is capped by the core with a 400 that says which
// field and what the limit is; a value of exactly the limit is taken;
// lists clip long text, so a page of long summaries stays small.
func TestAPICapsRequestText(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	body := func(v map[string]any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		method, path, body, mention string
	}{
		{"POST", "/api/deliveries", body(map[string]any{"repo": e.repo, "summary": long(baton.MaxSummary + 1)}), "the summary is 65537 bytes, over the limit of 64 KiB"},
		{"POST", "/api/deliveries", body(map[string]any{"issue_url": "https://github.com/octo/app/issues/1?" + long(baton.MaxURL)}), "the issue URL"},
		{"POST", "/api/deliveries", body(map[string]any{"repo": e.repo + "/" + long(baton.MaxPath), "summary": "x"}), "is not a repository this server was given"},
		{"POST", "/api/sources", body(map[string]any{"repo": "octo/app", "webhook_secret": long(baton.MaxSecret + 1)}), "the webhook secret"},
		{"POST", "/api/sources", body(map[string]any{"repo": "octo/app", "api_url": "https://ghe.example/" + long(baton.MaxURL)}), "api_url cannot be set through the API"},
		{"POST", "/api/sources", body(map[string]any{"repo": "octo/" + long(baton.MaxName)}), "the repository"},
		{"POST", "/api/sources", body(map[string]any{"repo": "octo/app", "label": long(baton.MaxName + 1)}), "the label"},
	} {
		var ae apiError
		resp := e.do(tc.method, tc.path, tc.body, true, &ae)
		if resp.StatusCode != 400 || ae.Code != "invalid" || !strings.Contains(ae.Message, tc.mention) || len(ae.Message) > 1000 {
			t.Errorf("%s %s with a long field = %d %s %.300q, want 400 invalid naming %q", tc.method, tc.path, resp.StatusCode, ae.Code, ae.Message, tc.mention)
		}
	}
	// Decisions: the reason of a reject or a close.
	d := e.create("Decide me")
	for _, action := range []string{"reject", "close"} {
		var ae apiError
		resp := e.do("POST", "/api/deliveries/"+d.ID+"/"+action, body(map[string]any{"reason": long(baton.MaxReason + 1)}), true, &ae)
		if resp.StatusCode != 400 || !strings.Contains(ae.Message, "the reason is 4097 bytes, over the limit of 4 KiB") {
			t.Errorf("%s with a 4 KiB + 1 reason = %d %q, want 400 naming the reason", action, resp.StatusCode, ae.Message)
		}
	}
	if cur, _ := e.svc.Current(t.Context(), d.ID); cur.String() != "plan/pending" {
		t.Errorf("refused decisions changed the delivery: %s", cur.String())
	}

	// Exactly the limit is taken; a page of such deliveries stays small.
	const n = 20
	for i := range n {
		summary := fmt.Sprintf("%d ", i) + long(baton.MaxSummary-len(fmt.Sprintf("%d ", i)))
		if resp := e.do("POST", "/api/deliveries", body(map[string]any{"repo": e.repo, "summary": summary}), true, nil); resp.StatusCode != 201 {
			t.Fatalf("a summary of exactly 64 KiB = %d, want 201", resp.StatusCode)
		}
	}
	size := func(path string) int {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		return len(b)
	}
	// n summaries hold n × 64 KiB; a list carries at most ~1 KiB of each.
	for _, path := range []string{"/api/deliveries?limit=200", "/", "/board"} {
		got, most := size(path), n*(2<<10)+20<<10
		if got > most {
			t.Errorf("GET %s is %d bytes for %d deliveries with 64 KiB summaries, want at most %d", path, got, n, most)
		}
		t.Logf("GET %s: %d bytes for %d deliveries with 64 KiB summaries", path, got, n)
	}
	var page struct {
		Deliveries []struct{ Title, Summary string } `json:"deliveries"`
	}
	e.do("GET", "/api/deliveries?limit=1", "", false, &page)
	if len(page.Deliveries) != 1 || !strings.HasSuffix(page.Deliveries[0].Summary, "…") || len(page.Deliveries[0].Title) > 203 {
		t.Errorf("a listed delivery is not clipped: %d-byte title, %d-byte summary", len(page.Deliveries[0].Title), len(page.Deliveries[0].Summary))
	}
	var one struct {
		Delivery struct{ Summary string } `json:"delivery"`
	}
	e.do("GET", "/api/deliveries/21", "", false, &one)
	if len(one.Delivery.Summary) != baton.MaxSummary {
		t.Errorf("GET /api/deliveries/21 has a %d-byte summary, want it whole (%d)", len(one.Delivery.Summary), baton.MaxSummary)
	}
}

// Competing decisions on one waiting phase: 50 approves and 50 rejects
// at once. Exactly one wins; the other 99 get 409 and change nothing
// (one decision in the phase log, the winner's review note alone: a
// reject's note is kept in its decision's transaction). Ten rounds,
// since how far the losers get depends on timing.
func TestConcurrentDecisionsOneWins(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			e := newEnv(t, dialect)
			for round := range 10 {
				raceDecisions(t, e, fmt.Sprintf("Decide once, round %d", round))
			}
		})
	}
}

func raceDecisions(t *testing.T, e *env, summary string) {
	t.Helper()
	agent := "command:echo 1. Do it."
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: summary, Actor: "test",
		Settings: delivery.Settings{Agent: &agent}})
	if err != nil {
		t.Fatal(err)
	}
	runner := &delivery.Runner{Service: e.svc, Owner: "worker:test", KillGrace: time.Second}
	if _, err := runner.Run(t.Context(), d.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	if cur, _ := e.svc.Current(t.Context(), d.ID); cur.String() != "plan/succeeded" {
		t.Fatalf("the plan is %s, want plan/succeeded waiting for a person", cur.String())
	}
	before, _ := e.svc.PhaseLog(t.Context(), d.ID)
	const n = 100
	count := decideAtOnce(t, e.srv.URL, token, d.ID, n, "")
	if count[200] != 1 || count[409] != n-1 {
		t.Errorf("%s: %d decisions at once answered %v, want one 200 and %d × 409", summary, n, count, n-1)
	}
	// The winner's entries are all under its one action.
	after, _ := e.svc.PhaseLog(t.Context(), d.ID)
	actions := map[string]bool{}
	for _, entry := range after[len(before):] {
		actions[entry.Action] = true
	}
	if len(actions) != 1 {
		t.Errorf("%s: the phase log has entries of %v after the race, want one decision's", summary, actions)
	}
	checkWinnersNote(t, e, d.ID, summary, actions["reject"])
}

// checkWinnersNote checks that delivery id keeps the review note of the
// decision that won a race, and no other: one row and one file when a
// reject won (rejected), none when an approve did.
func checkWinnersNote(t *testing.T, e *env, id, summary string, rejected bool) {
	t.Helper()
	notes, err := e.svc.Store().ReviewNotes(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(e.svc.DataDir, "notes", id, "review-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if rejected {
		want = 1
	}
	if len(notes) != want || len(files) != want {
		t.Errorf("%s: %d review notes and files %q kept (a reject won: %v), want %d: the winner's alone", summary, len(notes), files, rejected, want)
	}
}

// The green banner shows only the server's own messages: ?flash= names
// one by key, and any other text, however it is spelled, shows nothing.
func TestFlashShowsOnlyTheServersMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	c := &http.Client{}
	lure := "Your session expired: sign in again at https://evil.example/login"
	for _, flash := range []string{lure, "<b>" + lure + "</b>", "settings-saved " + lure, "Settings saved."} {
		page := get(t, c, e.srv.URL+"/settings?flash="+url.QueryEscape(flash))
		if strings.Contains(page, "evil.example") || strings.Contains(page, `class="banner ok"`) {
			t.Errorf("?flash=%q put a banner on the page:\n%s", flash, between(page, "<main", "<h1>"))
		}
	}
	page := get(t, c, e.srv.URL+"/settings?flash=settings-saved")
	if !strings.Contains(page, `<div class="banner ok" role="status">Settings saved.</div>`) {
		t.Errorf("?flash=settings-saved shows no banner:\n%s", between(page, "<main", "<h1>"))
	}

	// A form's redirect names its message by key, and the page shows it.
	d := e.create("Flash me")
	jar := &cookieJar{}
	c = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values) *http.Response {
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.srv.URL)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("/login", url.Values{"token": {token}, "next": {"/"}}); resp.StatusCode != 303 {
		t.Fatalf("sign in = %d", resp.StatusCode)
	}
	csrf := between(get(t, c, e.srv.URL+"/deliveries/"+d.ID), `name="csrf" value="`, `"`)
	resp := post("/deliveries/"+d.ID+"/close", url.Values{"csrf": {csrf}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || loc != "/deliveries/"+d.ID+"?flash=close" {
		t.Fatalf("close form = %d to %q, want 303 to the delivery with ?flash=close", resp.StatusCode, loc)
	}
	if page := get(t, c, e.srv.URL+loc); !strings.Contains(page, `<div class="banner ok" role="status">Closed.</div>`) {
		t.Errorf("the page after close shows no banner:\n%s", between(page, "<main", "<h1>"))
	}
}

// The pages' Content-Security-Policy allows styles and scripts from the
// server's own files only: no template may carry a style attribute, a
// style element, an inline script or an event handler attribute, which
// the browser would refuse (internal/web/browser checks the pages
// themselves in chromium).
func TestTemplatesKeepToTheCSP(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob("templates/*.html")
	if err != nil || len(names) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	inline := regexp.MustCompile(`(?i)[\s}]style\s*=|<style|<script(\s[^>]*)?>\s*[^<\s]|[\s}]on[a-z]+\s*=|javascript:`)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := inline.FindString(line); m != "" {
				t.Errorf("%s:%d has %q, which the pages' CSP refuses: use a class in static/style.css, or a script file", n, i+1, m)
			}
		}
	}
}
