package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/github/githubtest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
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
}

// Every documented route, called on the real handlers, answers with a
// status it documents and a body of the documented shape.
func TestOpenAPIResponsesMatchTheDocument(t *testing.T) {
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) { checkResponses(t, dialect) })
	}
}

func checkResponses(t *testing.T, dialect sqlstore.Dialect) {
	e := newEnv(t, dialect)
	doc, ops := loadOpenAPI(t)
	gh := githubtest.NewServer(t)
	gh.AddIssue("octo/app", githubtest.Issue{Title: "Crash", Labels: []string{"baton"}})
	e.web.Intake.GitHub = func(ctx context.Context, repo github.Repo, apiURL string) (*github.Client, error) {
		return github.New(github.Options{BaseURL: gh.URL(), Token: "t"})
	}

	// A delivery whose plan ran: a phase log, an agent run and its logs.
	d := e.create("Shape check")
	runner := &delivery.Runner{Service: e.svc, Owner: "worker:test", KillGrace: time.Second}
	if _, err := runner.Run(t.Context(), d.ID, "plan", ""); err != nil {
		t.Fatal(err)
	}
	other := e.create("Close me")
	ping := `{"zen":"hi","repository":{"full_name":"octo/app"}}`

	calls := []call{
		{method: "GET", path: "/api/openapi.json", status: 200},
		{method: "GET", path: "/api/deliveries", status: 200},
		{method: "GET", path: "/api/deliveries?limit=1", status: 200},
		{method: "GET", path: "/api/deliveries?state=sideways", status: 400},
		{method: "POST", path: "/api/deliveries", body: fmt.Sprintf(`{"repo":%q,"summary":"New one","checkpoints":[]}`, e.repo), auth: true, status: 201},
		{method: "POST", path: "/api/deliveries", body: fmt.Sprintf(`{"repo":%q,"summary":"New one"}`, e.repo), auth: true, status: 200},
		{method: "POST", path: "/api/deliveries", body: `{"agent":"claude"}`, auth: true, status: 400},
		{method: "POST", path: "/api/deliveries", body: `{}`, status: 401},
		{method: "POST", path: "/api/deliveries", body: `{"summary":"` + strings.Repeat("x", 1<<20) + `"}`, auth: true, status: 413},
		{method: "GET", path: "/api/deliveries/" + d.ID, status: 200},
		{method: "GET", path: "/api/deliveries/nothing-here", status: 404},
		{method: "POST", path: "/api/deliveries/" + other.ID + "/close", body: `{"reason":"done"}`, auth: true, status: 200},
		{method: "POST", path: "/api/deliveries/" + other.ID + "/retry", auth: true, status: 409},
		{method: "POST", path: "/api/deliveries/" + d.ID + "/fly", auth: true, status: 404},
		{method: "POST", path: "/api/deliveries/" + d.ID + "/reject", body: `{"reason":1}`, auth: true, status: 400},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/events", status: 200},
		{method: "GET", path: "/api/deliveries/" + d.ID + "/events", header: map[string]string{"Last-Event-ID": "x"}, status: 400},
		{method: "GET", path: "/api/deliveries/nothing-here/events", status: 404},
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
		{method: "POST", path: "/api/webhooks/github", body: ping, header: map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": intake.Sign("whsec", []byte(ping))}, status: 202},
		{method: "POST", path: "/api/webhooks/github", body: ping, header: map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=00"}, status: 401},
	}
	// Source routes by id, once the source exists.
	srcID := ""
	check := newSchemaChecker(doc)
	covered := map[string]bool{}
	run := func(c call) {
		t.Helper()
		route, op := matchRoute(ops, c.method, c.path)
		if route == "" {
			t.Errorf("%s %s matches no documented route", c.method, c.path)
			return
		}
		status, ctype, body := e.raw(c)
		if status != c.status {
			t.Errorf("%s %s = %d, want %d: %.300s", c.method, c.path, status, c.status, body)
		}
		resp, ok := op.Responses[strconv.Itoa(status)]
		if !ok {
			t.Errorf("%s %s answered %d, which %s does not document", c.method, c.path, status, route)
			return
		}
		if status < 300 {
			covered[route] = true
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
			for _, p := range check.validate(content.Schema, v, "$") {
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
					for _, p := range check.validate(content.Schema, v, "$") {
						t.Errorf("event %s: %s", data, p)
					}
				}
			}
		}
	}
	for _, c := range calls {
		run(c)
	}
	var list struct {
		Sources []struct{ ID string } `json:"sources"`
	}
	e.do("GET", "/api/sources", "", false, &list)
	if len(list.Sources) == 1 {
		srcID = list.Sources[0].ID
	}
	for _, c := range []call{
		{method: "GET", path: "/api/sources/" + srcID, status: 200},
		{method: "PATCH", path: "/api/sources/" + srcID, body: `{"label":"agent","paused":false}`, auth: true, status: 200},
		{method: "PATCH", path: "/api/sources/" + srcID, body: `{"endpoint":"nowhere"}`, auth: true, status: 400},
		{method: "PATCH", path: "/api/sources/nope", body: `{}`, auth: true, status: 404},
		{method: "POST", path: "/api/sources/" + srcID + "/sync", auth: true, status: 200},
		{method: "DELETE", path: "/api/sources/" + srcID, auth: true, status: 204},
		{method: "DELETE", path: "/api/sources/" + srcID, auth: true, status: 404},
	} {
		run(c)
	}
	for route := range ops {
		if !covered[route] {
			t.Errorf("%s was never called with success", route)
		}
	}
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
	req, err := http.NewRequestWithContext(ctx, c.method, e.srv.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		e.t.Fatal(err)
	}
	if c.auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
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
// 2020-12 the document uses: $ref, allOf, type, enum, format date-time,
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
}
