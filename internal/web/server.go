// Package web is baton's HTTP edge: the JSON API under /api, the live
// event streams, the dashboard, GitHub webhooks, health and metrics.
//
// Handlers parse a request, call one method of the delivery service (or
// of the intake service for sources), and render the result; the state
// machine, intake and every rule live below this package. Errors are
// rendered by one function (writeError) through one table from baton
// codes to HTTP statuses.
//
// The server is closed by default: reads on a loopback bind need no
// token; every mutation needs the API token (Authorization: Bearer) or a
// dashboard session with its CSRF token; on any other bind every request
// does. It answers only Host names it knows (no DNS rebinding), there
// are no CORS headers, and bodies are limited to 1 MiB and to
// BodyTimeout.
package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/intake"
)

// MaxBody is the largest request body the server reads.
const MaxBody = 1 << 20

// AgentStatus says whether the agent the server runs deliveries with is
// installed, for the dashboard's banner and the settings.
type AgentStatus struct {
	Name      string `json:"name"`
	Installed bool   `json:"installed"`
	// Path is where it was found; Fix says how to install it or pick
	// another when it was not.
	Path string `json:"path,omitempty"`
	Fix  string `json:"fix,omitempty"`
	// Elsewhere is set when this server runs no workers: agents run on
	// workers elsewhere, whose machines have their own CLIs.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// Missing reports an agent that would fail the first phase of a
// delivery made here: not installed, and run by this server's workers.
func (a AgentStatus) Missing() bool { return a.Name != "" && !a.Installed && !a.Elsewhere }

// Server is the HTTP edge. Fill the fields, then serve Handler().
type Server struct {
	Deliveries *delivery.Service
	Feed       *delivery.Feed
	// Intake manages GitHub sources and webhooks; nil serves no sources.
	Intake *intake.Service
	// Token is the API token; "" refuses every mutation.
	Token string
	// Open is true when the server listens on loopback only: reads then
	// need no token.
	Open bool
	// Repos are the local repositories deliveries may be created in from
	// the API or the dashboard ({repo, summary}); a request cannot name
	// any other directory.
	Repos []string
	// Agent is the server's default agent and whether it is installed.
	Agent AgentStatus
	// Agents are the agents a source may name instead (the harness
	// table's, internal/harness).
	Agents []string
	// Project, when set, is the project serve runs in: its goal-tree run,
	// packets and loops are shown read-only.
	Project *Project
	Metrics *Metrics
	Log     *slog.Logger
	Now     func() time.Time
	// Version is shown in the settings.
	Version string
	// Heartbeat is how often an idle event stream gets a comment (default
	// 15s).
	Heartbeat time.Duration
	// Hosts are the names requests may give as Host besides localhost and
	// IP literals: the --addr name and the --public-url host. Any other
	// name gets 421 (DNS rebinding).
	Hosts []string
	// BodyTimeout is how long Serve waits for a request's body
	// (DefaultBodyTimeout when 0).
	BodyTimeout time.Duration
	// MaxOpenBodies is how many bodies of unauthenticated requests
	// (webhooks, sign-ins) are read at once; more get 503
	// (DefaultMaxOpenBodies when 0).
	MaxOpenBodies int

	// apiRoutes are the patterns of the API's routes, as registered: the
	// OpenAPI test checks the document against them.
	apiRoutes []string

	wrong    WrongTokens
	requests Histogram
	jobs     Histogram

	sessions sessions
	pulses   pulseCache
	plans    planCache
	// openBodies holds a slot per unauthenticated body being read.
	openBodies chan struct{}
}

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyLogger
	keyAuth
)

// auth is how a request authenticated.
type auth struct {
	bearer  bool
	session *session
}

func (a auth) ok() bool { return a.bearer || a.session != nil }

func authOf(r *http.Request) auth {
	a, _ := r.Context().Value(keyAuth).(auth)
	return a
}

// log returns the request's logger (with its request id).
func (s *Server) log(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(keyLogger).(*slog.Logger); ok {
		return l
	}
	return s.logger()
}

func (s *Server) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// handlerFunc is a handler that returns its error for writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler returns the server's routes wrapped in its middleware.
func (s *Server) Handler() http.Handler {
	if s.Metrics == nil {
		s.Metrics = NewMetrics()
	}
	s.registerMetrics()
	s.registerInsightsMetrics()
	s.openBodies = make(chan struct{}, cmp.Or(s.MaxOpenBodies, DefaultMaxOpenBodies))
	mux := http.NewServeMux()
	s.apiRoutes = s.apiRoutes[:0]
	api := func(pattern string, h handlerFunc) {
		s.apiRoutes = append(s.apiRoutes, pattern)
		mux.Handle(pattern, s.apiHandler(h))
	}
	page := func(pattern string, h handlerFunc) {
		mux.Handle(pattern, s.pageHandler(h))
	}
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.apiHandler(s.metrics))
	api("GET /api/openapi.json", s.openAPI)
	api("GET /api/deliveries", s.listDeliveries)
	api("POST /api/deliveries", s.createDelivery)
	api("GET /api/deliveries/{id}", s.getDelivery)
	api("POST /api/deliveries/{id}/messages", s.sayToDelivery)
	api("POST /api/deliveries/{id}/{action}", s.actOnDelivery)
	api("GET /api/deliveries/{id}/events", s.deliveryEvents)
	api("GET /api/deliveries/{id}/runs/{n}", s.getRun)
	api("GET /api/deliveries/{id}/runs/{n}/logs/{name}", s.getRunLog)
	api("GET /api/sources", s.listSources)
	api("POST /api/sources", s.addSource)
	api("GET /api/sources/{id}", s.getSource)
	api("PATCH /api/sources/{id}", s.updateSource)
	api("DELETE /api/sources/{id}", s.removeSource)
	api("POST /api/sources/{id}/sync", s.syncSource)
	api("GET /api/insights", s.getInsights)
	api("GET /api/settings", s.getSettings)
	api("PATCH /api/settings", s.updateSettings)
	api("POST /api/webhooks/github", s.unauthenticatedBody(s.githubWebhook))
	api("/api/", func(http.ResponseWriter, *http.Request) error {
		return baton.Errorf(baton.NotFound, "no such API route: /api/openapi.json lists them")
	})

	page("GET /{$}", s.pageList)
	page("GET /board", s.pageBoard)
	page("GET /deliveries/{id}", s.pageDelivery)
	page("GET /deliveries/{id}/notes/{n}", s.pageNote)
	page("GET /live", s.live)
	page("POST /deliveries", s.formCreate)
	page("POST /deliveries/{id}/say", s.formSay)
	page("POST /deliveries/{id}/{action}", s.formAct)
	page("GET /sources", s.pageSources)
	page("POST /sources", s.formAddSource)
	page("POST /sources/{id}/{action}", s.formSource)
	page("GET /insights", s.pageInsights)
	page("GET /settings", s.pageSettings)
	page("POST /settings", s.formSettings)
	page("GET /project", s.pageProject)
	page("GET /login", s.pageLogin)
	page("POST /login", s.unauthenticatedBody(s.formLogin))
	page("POST /logout", s.formLogout)
	mux.Handle("GET /static/", s.static())
	mux.HandleFunc("GET /favicon.ico", s.favicon)
	page("/", func(http.ResponseWriter, *http.Request) error {
		return baton.Errorf(baton.NotFound, "no such page")
	})
	return s.middleware(mux)
}

// middleware refuses Host names the server does not know, gives each
// request an id and a logger, limits its body, authenticates it, and
// records its latency by route.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if !s.hostAllowed(r.Host) && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			s.logger().Warn("http: unknown Host refused", "host", baton.Truncate(r.Host, 100, "…"), "path", r.URL.Path, "remote", clientIP(r))
			w.Header().Set("Connection", "close")
			http.Error(w, "421 misdirected request: this server answers only to its own address, localhost and --public-url", http.StatusMisdirectedRequest)
			return
		}
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(c rune) bool { return c < '!' || c > '~' }) {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", id)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("X-Frame-Options", "DENY")
		log := s.logger().With("request_id", id)
		a := auth{bearer: s.bearerOK(r)}
		if ss, ok := s.sessionOf(r); ok {
			a.session = &ss
		}
		ctx := context.WithValue(r.Context(), keyRequestID, id)
		ctx = context.WithValue(ctx, keyLogger, log)
		ctx = context.WithValue(ctx, keyAuth, a)
		r = r.WithContext(ctx)
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		took := time.Since(start)
		s.requests.Observe(took.Seconds(), route, strconv.Itoa(rec.status))
		if route != "GET /healthz" && route != "GET /readyz" && route != "GET /metrics" {
			log.Info("http", "method", r.Method, "path", r.URL.Path, "route", route, "status", rec.status,
				"duration_ms", float64(took.Microseconds())/1000, "remote", clientIP(r))
		}
	})
}

// statusRecorder remembers the status a handler wrote; it passes Flush
// through for event streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// guard applies the access rules to a request: reads on an open
// (loopback) server pass; everything else needs the token or a session,
// and a session's mutation needs its CSRF token from the same origin.
// The GitHub webhook is authenticated by its signature instead.
func (s *Server) guard(r *http.Request) error {
	a := authOf(r)
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch r.Pattern {
	case "POST /api/webhooks/github", "POST /login":
		return nil // signed by GitHub; checks the token itself
	case "GET /login":
		return nil // the way in needs no way in, on any bind
	}
	if read && (s.Open || a.ok()) {
		return nil
	}
	if !a.ok() {
		if r.Header.Get("Authorization") != "" {
			ip := clientIP(r)
			if s.wrong.Blocked(ip, s.now()) {
				return httpError(codeRateLimited, "too many requests with a wrong token: wait a minute")
			}
			s.wrong.Add(ip, s.now())
			return httpError(codeUnauthorized, "wrong API token")
		}
		if s.Token == "" {
			return httpError(codeUnauthorized, "this server has no API token, so it accepts no changes: set BATON_API_TOKEN and restart it")
		}
		return httpError(codeUnauthorized, "sign in: send Authorization: Bearer <token> (the token `baton serve` printed, or BATON_API_TOKEN)")
	}
	if a.bearer || read {
		return nil
	}
	// A dashboard session: the form or header must carry its CSRF token,
	// from a page of this server.
	if !sameOrigin(r) {
		return httpError(codeForbidden, "cross-site request refused")
	}
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		if err := parseForm(r); err != nil {
			return err
		}
		tok = r.PostFormValue("csrf")
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrfToken(*a.session))) != 1 {
		return httpError(codeForbidden, "missing or stale form token: reload the page and try again")
	}
	return nil
}

// apiHandler serves an API route: access rules, then h, errors as JSON.
func (s *Server) apiHandler(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.guard(r)
		if err != nil {
			refuseBody(w, r)
		} else {
			err = h(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// actor names who acts in the phase log: the session's name, the
// X-Baton-Actor header of an API client, else the kind of client.
func actor(r *http.Request) string {
	a := authOf(r)
	if a.session != nil {
		if a.session.Name != "" {
			return baton.Truncate(a.session.Name, 64, "")
		}
		return "dashboard"
	}
	if n := strings.TrimSpace(r.Header.Get("X-Baton-Actor")); n != "" && len(n) <= 64 {
		return n
	}
	return "api"
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.Deliveries.Ping(ctx); err != nil {
		s.writeError(w, r, baton.WrapError(baton.Unavailable, err, "the database does not answer"))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}
