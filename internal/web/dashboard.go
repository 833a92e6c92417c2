package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/intake"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Project is the project `baton serve` runs in, shown read-only.
type Project struct {
	Root string
	// Load reads the project's goal-tree run, packets and loops.
	Load func(ctx context.Context) (ProjectView, error)
}

// ProjectView is what the project page shows.
type ProjectView struct {
	Root    string
	Run     *RunView
	Packets []ArtifactView
	Loops   []ArtifactView
}

// RunView is a goal-tree run: its tree rendered as text, and iterations.
type RunView struct {
	Summary    string
	Tree       string
	Iterations []IterationView
}

// IterationView is one iteration of a goal-tree run.
type IterationView struct {
	Name, Node, Outcome, GuardLog string
}

// ArtifactView is a packet or loop in a list.
type ArtifactView struct {
	ID, Status, Purpose string
	Iteration           int
}

var (
	tmplOnce sync.Once
	tmpls    map[string]*template.Template
	tmplErr  error
)

// pages parses the templates once, on the first page served.
func pages() (map[string]*template.Template, error) {
	tmplOnce.Do(func() {
		funcs := template.FuncMap{
			"clip": func(s string, n int) string { return baton.Truncate(s, n, "…") },
			"ago":  ago,
			"stamp": func(t time.Time) string {
				return t.UTC().Format("2006-01-02 15:04:05")
			},
			"dur": func(secs float64) string {
				d := time.Duration(secs * float64(time.Second))
				switch {
				case d < time.Second:
					return d.Round(time.Millisecond).String()
				case d < time.Minute:
					return d.Round(100 * time.Millisecond).String()
				}
				return d.Round(time.Second).String()
			},
			"join":       join,
			"stateClass": stateClass,
			"actionLabel": func(a string) string {
				switch a {
				case "run":
					return "Start"
				}
				return strings.ToUpper(a[:1]) + a[1:]
			},
			"safeURL": func(u string) template.URL {
				if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http" || p.Scheme == "file") {
					return template.URL(u)
				}
				return "#"
			},
		}
		tmpls = map[string]*template.Template{}
		names, err := fs.Glob(templateFS, "templates/*.html")
		if err != nil {
			tmplErr = err
			return
		}
		for _, n := range names {
			base := path.Base(n)
			if base == "base.html" {
				continue
			}
			t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/base.html", n)
			if err != nil {
				tmplErr = err
				return
			}
			tmpls[strings.TrimSuffix(base, ".html")] = t
		}
	})
	return tmpls, tmplErr
}

func join(v any, sep string) string {
	var parts []string
	switch x := v.(type) {
	case []string:
		parts = x
	case []baton.Phase:
		for _, p := range x {
			parts = append(parts, string(p))
		}
	}
	return strings.Join(parts, sep)
}

func stateClass(d delivery.View) string {
	switch {
	case d.Waiting && (d.RunStatus == "pending" || d.RunStatus == "succeeded"):
		return "s-waiting"
	}
	return "s-" + d.RunStatus
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return t.UTC().Format("2006-01-02")
}

// pageData is what every page template gets.
type pageData struct {
	Title, Nav, Path string
	SignedIn         bool
	Name, CSRF       string
	Agent            AgentStatus
	HasProject       bool
	Flash, Error     string
}

func (s *Server) page(r *http.Request, title, nav string) pageData {
	a := authOf(r)
	p := pageData{Title: title, Nav: nav, Path: r.URL.Path, Agent: s.Agent, HasProject: s.Project != nil, SignedIn: a.ok()}
	if a.session != nil {
		p.Name, p.CSRF = a.session.Name, s.csrfToken(*a.session)
	}
	p.Flash = flashes[r.URL.Query().Get("flash")]
	return p
}

// render writes a page; with ?fragment=NAME only that template.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) error {
	ts, err := pages()
	if err != nil {
		return err
	}
	t := ts[name]
	if t == nil {
		return baton.Errorf(baton.Internal, "no template %s", name)
	}
	var buf bytes.Buffer
	root := "base"
	if f := r.URL.Query().Get("fragment"); f == "state" && name == "delivery" {
		root = "state"
	}
	if err := t.ExecuteTemplate(&buf, root, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// pageHandler serves a dashboard route: access rules, then h; errors
// become an error page (or, for a form post, the page again with the
// message).
func (s *Server) pageHandler(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := s.guard(r)
		if err != nil {
			refuseBody(w, r)
		}
		if err != nil && baton.ErrorCode(err) == codeUnauthorized && r.Method == http.MethodGet {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if err == nil {
			err = h(w, r)
		}
		if err == nil {
			return
		}
		code, msg := classify(err)
		status := statusOf(code)
		if status >= 500 && code != baton.Unavailable {
			s.log(r).Error("page failed", "err", err)
		}
		p := s.page(r, http.StatusText(status), "")
		p.Error = msg
		if rerr := s.render(w, r, status, "error", p); rerr != nil {
			http.Error(w, msg, status)
		}
	})
}

func (s *Server) static() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	fsrv := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsrv.ServeHTTP(w, r)
	})
}

type listPage struct {
	pageData
	List             listJSON
	Filter           struct{ State, Q, Phase, Status string }
	Phases, Statuses []string
	Filtered         bool
	Self, NextURL    string
	Repos            []string
}

func (s *Server) pageList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("state") == "" {
		q.Set("state", "active")
		r.URL.RawQuery = q.Encode()
	}
	f, err := listFilter(r)
	if err != nil {
		return err
	}
	list, err := s.list(r, f)
	if err != nil {
		return err
	}
	p := listPage{pageData: s.page(r, "Deliveries", "list"), List: list, Repos: s.Repos}
	p.Filter.State, p.Filter.Q, p.Filter.Phase, p.Filter.Status = q.Get("state"), q.Get("q"), q.Get("phase"), q.Get("status")
	p.Filtered = p.Filter.Q != "" || p.Filter.Phase != "" || p.Filter.Status != ""
	for _, ph := range delivery.FilterPhases {
		p.Phases = append(p.Phases, string(ph))
	}
	for _, st := range delivery.FilterStatuses {
		p.Statuses = append(p.Statuses, string(st))
	}
	p.Self = "/?" + q.Encode()
	if list.NextCursor != "" {
		q.Set("cursor", list.NextCursor)
		p.NextURL = "/?" + q.Encode()
	}
	return s.render(w, r, http.StatusOK, "list", p)
}

type boardPage struct {
	pageData
	Columns []boardColumn
	Any     bool
}

type boardColumn struct {
	Phase      string
	Deliveries []delivery.View
}

func (s *Server) pageBoard(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.Deliveries.List(r.Context(), baton.DeliveryFilter{Open: true, Limit: 1000})
	if err != nil {
		return err
	}
	closed, err := s.Deliveries.List(r.Context(), baton.DeliveryFilter{Closed: true, Limit: 20})
	if err != nil {
		return err
	}
	p := boardPage{pageData: s.page(r, "Board", "board"), Any: len(ds)+len(closed) > 0}
	byPhase := map[baton.Phase][]delivery.View{}
	for _, d := range append(ds, closed...) {
		byPhase[d.Phase] = append(byPhase[d.Phase], delivery.NewListItem(d))
	}
	for _, ph := range baton.Phases {
		if ph == baton.PhaseIntake {
			continue
		}
		p.Columns = append(p.Columns, boardColumn{Phase: string(ph), Deliveries: byPhase[ph]})
	}
	return s.render(w, r, http.StatusOK, "board", p)
}

type deliveryPage struct {
	pageData
	D      *delivery.DetailView
	Events []baton.DeliveryEvent
	After  int64
	Older  bool
}

const pageEvents = 300

func (s *Server) pageDelivery(w http.ResponseWriter, r *http.Request) error {
	v, err := s.detail(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	from := max(v.LastEvent-pageEvents, 0)
	evs, err := s.Deliveries.Events(r.Context(), v.Delivery.ID, from, pageEvents)
	if err != nil {
		return err
	}
	p := deliveryPage{pageData: s.page(r, fmt.Sprintf("#%d %s", v.Delivery.Seq, v.Delivery.Title), "list"), D: v, Events: evs,
		After: v.LastEvent, Older: from > 0}
	return s.render(w, r, http.StatusOK, "delivery", p)
}

// flashes are the messages the banner of the page after a form shows,
// by key. A redirect names a key (?flash=approve) and the page shows the
// server's own message for it; any other key shows nothing, so a link
// cannot put its own words in the banner. Specifics (which delivery,
// what a sync found) are on the page itself.
var flashes = map[string]string{
	"created":        "Delivery created; its plan is queued.",
	"exists":         "A delivery already exists for this request: this one.",
	"run":            "Started: the phase is queued for a worker.",
	"approve":        "Approved.",
	"reject":         "Rejected: the reason is posted where the next run reads it.",
	"retry":          "Retried: the phase is queued again.",
	"cancel":         "Canceled: the agent is stopped and its result discarded.",
	"close":          "Closed.",
	"source-added":   "Source added; it syncs within the poll interval (or now, with Sync now).",
	"source-synced":  "Synced: the source's row shows what the sync found.",
	"source-failed":  "The sync failed: the source's row says why.",
	"source-saved":   "Source saved.",
	"source-removed": "Source removed; its deliveries stay.",
	"settings-saved": "Settings saved.",
	"signed-out":     "Signed out.",
}

// redirect answers a form post with the page to show next, and the key
// of the message its banner shows ("" for none).
func redirect(w http.ResponseWriter, r *http.Request, to, flash string) error {
	if flash != "" {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "flash=" + url.QueryEscape(flash)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

func (s *Server) formCreate(w http.ResponseWriter, r *http.Request) error {
	c := CreateRequest{IssueURL: strings.TrimSpace(r.PostFormValue("issue_url")), Summary: strings.TrimSpace(r.PostFormValue("summary"))}
	if c.IssueURL == "" {
		c.Repo = r.PostFormValue("repo")
	}
	req, err := s.request(c, actor(r))
	if err != nil {
		return err
	}
	d, created, err := s.Deliveries.Create(r.Context(), req)
	if err != nil {
		return err
	}
	flash := "created"
	if !created {
		flash = "exists"
	}
	return redirect(w, r, "/deliveries/"+d.ID, flash)
}

func (s *Server) formAct(w http.ResponseWriter, r *http.Request) error {
	a, err := parseAction(r.PathValue("action"))
	if err != nil {
		return err
	}
	d, err := s.decide(r, a, r.PostFormValue("reason"))
	if err != nil {
		return err
	}
	return redirect(w, r, "/deliveries/"+d.ID, string(a))
}

type sourcesPage struct {
	pageData
	Sources    []sourceJSON
	Agents     []string
	WebhookURL string
}

func (s *Server) pageSources(w http.ResponseWriter, r *http.Request) error {
	p := sourcesPage{pageData: s.page(r, "Sources", "sources"), Agents: s.Agents,
		WebhookURL: "http(s)://" + r.Host + "/api/webhooks/github"}
	if s.Intake != nil {
		srcs, err := s.Intake.List(r.Context())
		if err != nil {
			return err
		}
		for _, src := range srcs {
			p.Sources = append(p.Sources, toSource(src))
		}
	}
	return s.render(w, r, http.StatusOK, "sources", p)
}

func formString(r *http.Request, name string) *string {
	if _, ok := r.PostForm[name]; !ok {
		return nil
	}
	v := strings.TrimSpace(r.PostFormValue(name))
	return &v
}

func (s *Server) formAddSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	si := intake.SourceInput{Repo: r.PostFormValue("repo"), Label: formString(r, "label"), Agent: formString(r, "agent")}
	if sec := r.PostFormValue("webhook_secret"); sec != "" {
		si.WebhookSecret = &sec
	}
	if _, err := in.Add(r.Context(), si); err != nil {
		return err
	}
	return redirect(w, r, "/sources", "source-added")
}

func (s *Server) formSource(w http.ResponseWriter, r *http.Request) error {
	in, err := s.intake()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	switch r.PathValue("action") {
	case "sync":
		src, err := in.Sync(r.Context(), id)
		if src == nil {
			return err
		}
		if err != nil {
			return redirect(w, r, "/sources", "source-failed")
		}
		return redirect(w, r, "/sources", "source-synced")
	case "pause", "resume":
		paused := r.PathValue("action") == "pause"
		if _, err := in.Update(r.Context(), id, intake.SourceInput{Paused: &paused}); err != nil {
			return err
		}
		return redirect(w, r, "/sources", "")
	case "remove":
		if err := in.Remove(r.Context(), id); err != nil {
			return err
		}
		return redirect(w, r, "/sources", "source-removed")
	case "edit":
		si := intake.SourceInput{Label: formString(r, "label"), Endpoint: formString(r, "endpoint"), Agent: formString(r, "agent")}
		if c := formString(r, "checkpoints"); c != nil {
			var cps []string
			for _, p := range strings.Split(*c, ",") {
				if p = strings.TrimSpace(p); p != "" {
					cps = append(cps, p)
				}
			}
			si.Checkpoints = &cps
		}
		if sec := r.PostFormValue("webhook_secret"); sec != "" {
			si.WebhookSecret = &sec
		}
		if _, err := in.Update(r.Context(), id, si); err != nil {
			return err
		}
		return redirect(w, r, "/sources", "source-saved")
	}
	return baton.Errorf(baton.NotFound, "no source action %q", baton.Truncate(r.PathValue("action"), 20, "…"))
}

type settingsPage struct {
	pageData
	Settings settingsJSON
}

func (s *Server) pageSettings(w http.ResponseWriter, r *http.Request) error {
	st, err := s.settings(r)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "settings", settingsPage{pageData: s.page(r, "Settings", "settings"), Settings: st})
}

func (s *Server) formSettings(w http.ResponseWriter, r *http.Request) error {
	polling := r.PostFormValue("polling") == "on"
	req := SettingsRequest{Polling: &polling}
	if v := r.PostFormValue("poll_every_seconds"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return baton.Errorf(baton.Invalid, "poll interval %q is not a number of seconds", baton.Truncate(v, 20, "…"))
		}
		req.PollEverySeconds = &n
	}
	if err := s.applySettings(r, req); err != nil {
		return err
	}
	return redirect(w, r, "/settings", "settings-saved")
}

type projectPage struct {
	pageData
	Project ProjectView
}

func (s *Server) pageProject(w http.ResponseWriter, r *http.Request) error {
	if s.Project == nil {
		return baton.Errorf(baton.NotFound, "`baton serve` was not started inside a project")
	}
	v, err := s.Project.Load(r.Context())
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "project", projectPage{pageData: s.page(r, "Project", "project"), Project: v})
}

type loginPage struct {
	pageData
	Next, TokenHint string
}

// safeNext returns where to go after signing in: a path on this
// server, else "/". Browsers drop tabs and newlines from a URL and read
// a backslash as a slash, so "/\t/evil.example" would leave the site:
// control characters and backslashes are refused outright.
func safeNext(n string) string {
	if !strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") ||
		strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/"
	}
	if u, err := url.Parse(n); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return n
}

func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) error {
	return s.render(w, r, http.StatusOK, "login", loginPage{pageData: s.page(r, "Sign in", ""), Next: safeNext(r.URL.Query().Get("next")),
		TokenHint: path.Join(s.Deliveries.DataDir, TokenFile)})
}

func (s *Server) formLogin(w http.ResponseWriter, r *http.Request) error {
	if !sameOrigin(r) {
		return httpError(codeForbidden, "cross-site sign-in refused")
	}
	if err := parseForm(r); err != nil {
		return err
	}
	// The right token always signs in: only wrong ones count and wait.
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if !s.bearerOKValue(tok) {
		ip := clientIP(r)
		if s.wrong.Blocked(ip, s.now()) {
			return httpError(codeRateLimited, "too many wrong tokens: wait a minute")
		}
		s.wrong.Add(ip, s.now())
		p := loginPage{pageData: s.page(r, "Sign in", ""), Next: safeNext(r.PostFormValue("next")), TokenHint: path.Join(s.Deliveries.DataDir, TokenFile)}
		p.Error = "That is not this server's API token."
		return s.render(w, r, http.StatusUnauthorized, "login", p)
	}
	s.newSession(w, r, strings.TrimSpace(r.PostFormValue("name")))
	return redirect(w, r, safeNext(r.PostFormValue("next")), "")
}

func (s *Server) formLogout(w http.ResponseWriter, r *http.Request) error {
	s.endSession(w, r)
	return redirect(w, r, "/", "signed-out")
}
