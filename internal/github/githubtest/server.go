// Package githubtest is an in-memory GitHub for tests: an httptest server
// that answers the REST and GraphQL calls baton makes with the JSON shapes
// GitHub really returns (field names, nesting, html_url, user.login, Link
// pagination headers, the diff media type, GraphQL data/errors), backed by
// a model that tests fill and inspect.
//
// A test builds state, points a github.Client at URL(), runs the code under
// test, then checks what was posted and which requests were made:
//
//	srv := githubtest.NewServer(t)
//	srv.AddPullRequest("octo/app", githubtest.PullRequest{Number: 12, Title: "Fix", Files: githubtest.GenerateFiles(3)})
//	c, _ := github.New(github.Options{BaseURL: srv.URL(), Token: "test-token"})
//	...
//	srv.Reviews("octo/app", 12)     // what was posted
//	srv.RequestLog()                // ["GET /repos/octo/app/pulls/12", ...]
//
// Failures are injected per route (Fail), a route can hang until its client
// gives up (Stall), state can change between calls
// (UpdatePullRequest, UpdateCheckRun), and every request is recorded with
// the Authorization header redacted.
//
// The GraphQL endpoint is not a GraphQL engine: it recognises the root
// fields baton's client queries (closingIssuesReferences,
// closedByPullRequestsReferences, markPullRequestReadyForReview) with the
// variables $owner, $name, $number, $first, $after and $id, and answers
// anything else with a GraphQL error.
package githubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake GitHub API. Its methods are safe for concurrent use
// with the requests it serves. Methods that look something up fail the
// test when it does not exist.
type Server struct {
	t      testing.TB
	ts     *httptest.Server
	prefix string // "/api/v3" in Enterprise mode
	gql    string // GraphQL path
	mux    *http.ServeMux

	diffLimits bool

	mu       sync.Mutex
	token    string // required token; "" accepts any token or none
	viewer   string
	repos    map[string]*repo // by lower-case "owner/name"
	users    map[string]int64 // login → id
	requests []Request
	failures []*failureRule
	stalls   []*Stalled
	nextID   int64
	served   int
	resetAt  time.Time

	// GitHub Apps (app.go).
	apps      map[int64]App
	installs  []*installation
	tokens    map[string]*installToken
	tokenLife time.Duration
	minted    []MintedToken
}

// Option configures a Server.
type Option func(*Server)

// Enterprise serves the API the way GitHub Enterprise Server does: REST
// under /api/v3/ and GraphQL at /api/graphql, so a client's URL
// derivation is exercised.
func Enterprise() Option {
	return func(s *Server) { s.prefix, s.gql = "/api/v3", "/api/graphql" }
}

// WithoutDiffLimits serves diffs of any size. By default the server, like
// GitHub, answers 406 too_large for a pull request with more than 300
// files or 20,000 changed lines (counted from its Files).
func WithoutDiffLimits() Option {
	return func(s *Server) { s.diffLimits = false }
}

// Defaults of the model.
const (
	// DefaultViewer is the login GET /user returns and the author of
	// everything posted through the API.
	DefaultViewer = "hubot"
	// DefaultAuthor is the author of fixtures that name none.
	DefaultAuthor = "octocat"
	// DefaultBranch is every repository's default branch.
	DefaultBranch = "main"
	// WebURL is the host of html_url links, as on github.com.
	WebURL = "https://github.com"
)

// NewServer starts a fake GitHub and stops it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		t:          t,
		gql:        "/graphql",
		diffLimits: true,
		viewer:     DefaultViewer,
		repos:      map[string]*repo{},
		users:      map[string]int64{},
		nextID:     1000,
		resetAt:    time.Now().Add(time.Hour).Truncate(time.Second),
	}
	for _, o := range opts {
		o(s)
	}
	s.mux = http.NewServeMux()
	s.routes()
	s.ts = httptest.NewServer(s)
	t.Cleanup(s.ts.Close)
	return s
}

// URL returns the REST API base URL, with a trailing slash: what
// github.Options.BaseURL and GITHUB_API_URL take.
func (s *Server) URL() string { return s.ts.URL + s.prefix + "/" }

// AllowHTTPLoopback is the environment variable, and the value, that lets
// baton send a token over plain http to a loopback server such as this
// one; baton refuses plain http otherwise.
const AllowHTTPLoopback = "BATON_GITHUB_ALLOW_HTTP_LOOPBACK=1"

// Env returns the environment that points baton at this server for
// github.com, as GITHUB_API_URL does for a user: KEY=value pairs,
// GITHUB_API_URL and AllowHTTPLoopback.
func (s *Server) Env() []string {
	return []string{"GITHUB_API_URL=" + s.URL(), AllowHTTPLoopback}
}

// GraphQLURL returns the GraphQL endpoint.
func (s *Server) GraphQLURL() string { return s.ts.URL + s.gql }

// RequireToken makes the server accept only this token, sent as
// "Authorization: Bearer <token>" or "token <token>". A wrong token gets
// 401 Bad credentials; no token gets 404 on repository routes (how GitHub
// hides private repositories) and 401 on /user, writes and GraphQL.
// Without RequireToken any token is accepted, and reads work without one.
func (s *Server) RequireToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// SetViewer sets the login of the authenticated account.
func (s *Server) SetViewer(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.viewer = login
}

// Request is one request the server received.
type Request struct {
	Method string
	// Path is the API path without an Enterprise prefix:
	// "/repos/o/r/pulls/1", "/graphql".
	Path  string
	Query url.Values
	// Header is a copy of the request headers with the Authorization
	// value replaced by its scheme and "[redacted]".
	Header http.Header
	// Body is the request body (GraphQL documents, posted JSON), up to
	// 1 MiB.
	Body []byte
	// GraphQLField is the root field a GraphQL request asked for, such as
	// "closingIssuesReferences"; empty for REST.
	GraphQLField string
	// JWTIssuedAt is, for a request authenticated with a GitHub App's JWT,
	// the time its iat claim names (the JWT itself is redacted).
	JWTIssuedAt time.Time
}

// String returns "METHOD /path?query", or "GRAPHQL field" for GraphQL.
func (r Request) String() string {
	if r.GraphQLField != "" {
		return "GRAPHQL " + r.GraphQLField
	}
	if len(r.Query) == 0 {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query.Encode()
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestLog returns Request.String of every request, for comparing
// against an expected list with cmp.Diff.
func (s *Server) RequestLog() []string {
	reqs := s.Requests()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.String()
	}
	return out
}

// Count returns how many requests matched route (see Fail for the syntax).
func (s *Server) Count(route string) int {
	m := s.mustRoute(route)
	n := 0
	for _, r := range s.Requests() {
		if m.match(r.Method, r.Path, r.GraphQLField) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the recorded requests, so a test can count only
// those of the step it checks.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// maxBody bounds the recorded request body.
const maxBody = 1 << 20

// ServeHTTP records the request, applies injected failures and
// authentication, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, maxBody))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	apiPath := r.URL.Path
	isGQL := r.URL.Path == s.gql
	if isGQL {
		apiPath = "/graphql"
	} else if s.prefix != "" {
		apiPath = strings.TrimPrefix(apiPath, s.prefix)
	}
	field := ""
	if isGQL {
		field = graphQLField(body)
	}
	hdr := r.Header.Clone()
	var iat time.Time
	if a := hdr.Get("Authorization"); a != "" {
		scheme, cred, _ := strings.Cut(a, " ")
		hdr.Set("Authorization", scheme+" [redacted]")
		if strings.EqualFold(scheme, "Bearer") {
			iat = jwtIssuedAt(cred)
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: apiPath, Query: r.URL.Query(), Header: hdr, Body: body, GraphQLField: field, JWTIssuedAt: iat,
	})
	s.served++
	f := s.takeFailure(r.Method, apiPath, field)
	id, authErr := s.checkAuth(r, apiPath, isGQL)
	stall := s.stallFor(r.Method, apiPath, field)
	s.mu.Unlock()
	if stall != nil {
		stall.hold(w, r)
		return
	}
	r = withIdentity(r, id)

	s.rateHeaders(w, isGQL)
	if f != nil {
		for k, vs := range f.Header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, f.Body)
		return
	}
	if authErr != nil {
		writeError(w, authErr.status, authErr.message, authErr.doc)
		return
	}
	if s.prefix != "" && !isGQL && !strings.HasPrefix(r.URL.Path, s.prefix+"/") {
		writeError(w, http.StatusNotFound, "Not Found", docREST)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// rateHeaders sets GitHub's rate-limit headers. Remaining never reaches 0
// on its own, because go-github refuses to send further requests after
// seeing 0; a test that wants an exhausted limit injects RateLimited.
func (s *Server) rateHeaders(w http.ResponseWriter, graphql bool) {
	s.mu.Lock()
	used := s.served
	reset := s.resetAt
	s.mu.Unlock()
	resource := "core"
	if graphql {
		resource = "graphql"
	}
	h := w.Header()
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(4999-(used-1)%4999))
	h.Set("X-Ratelimit-Used", strconv.Itoa((used-1)%4999+1))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", resource)
	h.Set("X-Github-Api-Version-Selected", "2022-11-28")
	h.Set("X-Github-Request-Id", fmt.Sprintf("BATON:%04X", used))
}

type authError struct {
	status  int
	message string
	doc     string
}

// checkAuth applies RequireToken and Apps' credentials, and says who the
// request acts as. Call with s.mu held.
func (s *Server) checkAuth(r *http.Request, apiPath string, isGQL bool) (identity, *authError) {
	person := identity{login: s.viewer}
	given := ""
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, _ := strings.Cut(a, " ")
		if !strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token") {
			return person, &authError{http.StatusUnauthorized, "Bad credentials", docREST}
		}
		given = strings.TrimSpace(tok)
	}
	doc := docREST
	if isGQL {
		doc = docGraphQL
	}
	if appRoute(apiPath) {
		// An App authenticates as itself with a JWT, and only here.
		if given == "" || !looksLikeJWT(given) {
			return person, &authError{http.StatusUnauthorized, errJWTDecode.Error(), docApps}
		}
		a, err := s.appAuth(given)
		if err != nil {
			return person, err
		}
		return identity{login: a.Bot(), app: a}, nil
	}
	if given != "" && looksLikeJWT(given) {
		return person, &authError{http.StatusUnauthorized, "Bad credentials", doc}
	}
	if it, ok := s.tokens[given]; ok && given != "" {
		if !time.Now().Before(it.expires) {
			return person, &authError{http.StatusUnauthorized, "Bad credentials", doc}
		}
		return identity{login: it.bot, install: it}, nil
	}
	switch {
	case given != "" && s.token != "" && given != s.token:
		return person, &authError{http.StatusUnauthorized, "Bad credentials", doc}
	case given != "":
		return person, nil
	case isGQL:
		return person, &authError{http.StatusUnauthorized, "This endpoint requires you to be authenticated.", docGraphQL}
	case apiPath == "/user" || r.Method != http.MethodGet:
		return person, &authError{http.StatusUnauthorized, "Requires authentication", docREST}
	case s.token != "":
		// A private world: without a token, repositories do not exist.
		return person, &authError{http.StatusNotFound, "Not Found", docREST}
	}
	return person, nil
}

// Documentation URLs GitHub puts in error bodies.
const (
	docREST    = "https://docs.github.com/rest"
	docGraphQL = "https://docs.github.com/graphql"
)

// writeJSON writes v as GitHub does: JSON with charset.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Github-Media-Type", "github.v3; format=json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// errorBody is GitHub's REST error shape.
type errorBody struct {
	Message          string `json:"message"`
	Errors           []any  `json:"errors,omitempty"`
	DocumentationURL string `json:"documentation_url"`
	Status           string `json:"status"`
}

func writeError(w http.ResponseWriter, status int, message, doc string) {
	writeJSON(w, status, errorBody{Message: message, DocumentationURL: doc, Status: strconv.Itoa(status)})
}

// fieldError is one entry of a 422's "errors".
type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// writeValidation writes GitHub's 422 Validation Failed.
func writeValidation(w http.ResponseWriter, doc string, errs ...fieldError) {
	list := make([]any, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{
		Message: "Validation Failed", Errors: list, DocumentationURL: doc, Status: "422",
	})
}

// writeUnprocessable writes the other 422 shape GitHub uses, where errors
// is a list of strings (reviews).
func writeUnprocessable(w http.ResponseWriter, doc string, msgs ...string) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = m
	}
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{
		Message: "Unprocessable Entity", Errors: list, DocumentationURL: doc, Status: "422",
	})
}

// route is a parsed Fail/Count pattern.
type route struct {
	method  string // "*" for any
	pattern string // path.Match pattern, or a GraphQL field
	graphql bool
}

func parseRoute(r string) (route, error) {
	method, pat, ok := strings.Cut(strings.TrimSpace(r), " ")
	pat = strings.TrimSpace(pat)
	if !ok || pat == "" {
		return route{}, fmt.Errorf("route %q: want \"METHOD /path/pattern\" or \"GRAPHQL field\"", r)
	}
	method = strings.ToUpper(method)
	if method == "GRAPHQL" {
		return route{method: http.MethodPost, pattern: pat, graphql: true}, nil
	}
	if _, err := path.Match(pat, ""); err != nil {
		return route{}, fmt.Errorf("route %q: %w", r, err)
	}
	return route{method: method, pattern: pat}, nil
}

func (m route) match(method, apiPath, field string) bool {
	if m.method != "*" && m.method != method {
		return false
	}
	if m.graphql {
		return field != "" && (m.pattern == "*" || m.pattern == field)
	}
	ok, _ := path.Match(m.pattern, apiPath)
	return ok
}

func (s *Server) mustRoute(r string) route {
	s.t.Helper()
	m, err := parseRoute(r)
	if err != nil {
		s.t.Fatalf("githubtest: %v", err)
	}
	return m
}
