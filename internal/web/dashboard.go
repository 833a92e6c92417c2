package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/forge"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/loop"
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
	// Loops are shown as every edge shows them (loop.View).
	Loops []loop.View
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

// ArtifactView is a packet in a list.
type ArtifactView struct {
	ID, Status, Purpose string
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
			"clip":  func(s string, n int) string { return baton.Truncate(s, n, "…") },
			"ago":   ago,
			"stamp": stamp,
			"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
			"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
			"dur":   dur,
			"asset": assetURL,
			"cost": func(usd float64) string {
				if usd == 0 {
					return "—" // the agent reported none: unknown, not free
				}
				return fmt.Sprintf("$%.4f", usd)
			},
			"tokens": func(in, out int64) string {
				if in == 0 && out == 0 {
					return "—"
				}
				return fmt.Sprintf("%d / %d", in, out)
			},
			"join":        join,
			"stateClass":  stateClass,
			"stateText":   stateText,
			"actionLabel": actionLabel,
			"fileStatus":  fileStatus,
			"diffChunks":  diffChunks,
			"planLines":   func(plan string) []string { return strings.Split(plan, "\n") },
			"fileID":      fileID,
			"hiddenFiles": hiddenFiles,
			"add":         func(a, b int) int { return a + b },
			"add64":       func(a, b int64) int64 { return a + b },
			"int64":       func(n int) int64 { return int64(n) },
			"safeURL": func(u string) template.URL {
				if p, err := url.Parse(u); err == nil && (p.Scheme == "https" || p.Scheme == "http") {
					return template.URL(u)
				}
				return "#"
			},
			"webURL": func(u string) bool {
				p, err := url.Parse(u)
				return err == nil && (p.Scheme == "https" || p.Scheme == "http")
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
	case d.Canceled:
		return "s-canceled"
	case d.Phase == string(baton.PhaseClose) && d.RunStatus == string(baton.StatusFailed):
		return "s-closed"
	case d.Waiting && (d.RunStatus == "pending" || d.RunStatus == "succeeded"):
		return "s-waiting"
	}
	return "s-" + d.RunStatus
}

// stateText is a delivery's state as its badge says it: phase/status,
// with one word per outcome: a person's cancel is "canceled" and a
// person's close before the end "closed", never "failed".
func stateText(d delivery.View) string {
	switch {
	case d.Canceled:
		return d.Phase + "/canceled"
	case d.Phase == string(baton.PhaseClose) && d.RunStatus == string(baton.StatusFailed):
		return "closed"
	}
	return d.Phase + "/" + d.RunStatus
}

// decisionLabel is what the button of action a on d says: what happens
// when it is pressed ("Merge into main" starts a local deploy), not the
// state machine's word for it.
func decisionLabel(d delivery.View, work *delivery.Work, a string) string {
	switch {
	case a == "run" && d.Phase == string(baton.PhaseDeploy) && d.Config.DeployCommand != "":
		return "Deploy: run " + baton.Truncate(d.Config.DeployCommand, 40, "…")
	case a == "run" && d.Phase == string(baton.PhaseDeploy) && d.Forge == string(baton.ForgeGitHub):
		return "Merge the pull request"
	case a == "run" && d.Phase == string(baton.PhaseDeploy):
		base := d.Config.BaseBranch
		if base == "" && work != nil && work.Diff != nil {
			base = work.Diff.Base
		}
		if base == "" {
			return "Merge into the base branch"
		}
		return "Merge into " + base
	case a == "run":
		return "Start " + d.Phase
	case a == "approve" && d.RunStatus == string(baton.StatusBlocked):
		return "Approve over the block"
	case a == "approve" && d.Phase == string(baton.PhasePlan):
		return "Approve the plan"
	case a == "approve":
		return "Approve " + d.Phase
	}
	return actionLabel(a)
}

// fileStatus says git's letter for a changed file as a word.
func fileStatus(letter string) string {
	switch letter {
	case "A":
		return "added"
	case "M":
		return "modified"
	case "D":
		return "deleted"
	case "R":
		return "renamed"
	case "C":
		return "copied"
	case "T":
		return "type changed"
	}
	return letter
}

// actionLabel is the word of an action's button: the same word the
// phase log uses for it (PhaseWords: "alice started plan").
func actionLabel(a string) string {
	switch a {
	case "run":
		return "Start"
	case "":
		return ""
	}
	return strings.ToUpper(a[:1]) + a[1:]
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func dur(secs float64) string {
	d := time.Duration(secs * float64(time.Second))
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
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

// diffLine is one line of a file's patch, with the class that colours
// it, in pieces: text, and the hidden characters marked.
type diffLine struct {
	Class string
	Segs  []diffSeg
	// Line is the line's number in the file as the change leaves it (an
	// added or unchanged line), 0 for others: what a line note names.
	Line int
}

// diffSeg is a run of a line's text, or one hidden character
// (baton.HiddenRune): Code ("U+202E") and Name are set, and the page
// shows the code in a mark instead of the character, so it neither hides
// nor reorders the text around it.
type diffSeg struct {
	Text, Code, Name string
}

// diffChunks is diffLines in groups whose sizes are powers of two, at
// most 64 lines: the page lays out only the groups near the screen, and
// knows each one's height before it does (style.css), so a file of
// thousands of lines costs a phone little more on load than a short one.
func diffChunks(patch string) [][]diffLine {
	lines := diffLines(patch)
	var out [][]diffLine
	for size := 64; len(lines) > 0; {
		for size > len(lines) {
			size /= 2
		}
		out = append(out, lines[:size:size])
		lines = lines[size:]
	}
	return out
}

// diffLines splits a patch into lines to colour; the text is escaped
// when rendered, like everything from a repository.
// Each added or unchanged line carries its number in the new file,
// counted from its hunk's header.
func diffLines(patch string) []diffLine {
	lines := strings.SplitAfter(patch, "\n")
	out := make([]diffLine, 0, len(lines))
	next := 0 // the new file's next line; 0 outside a hunk
	for _, l := range lines {
		if l == "" {
			continue
		}
		c, n := "l-ctx", 0
		switch {
		case strings.HasPrefix(l, "@@"):
			c, next = "l-hunk", hunkStart(l)
		case strings.HasPrefix(l, "+"):
			c, n = "l-add", next
		case strings.HasPrefix(l, "-"):
			c = "l-del"
		case strings.HasPrefix(l, "\\"), strings.HasPrefix(l, "Binary files"):
			c = "l-meta"
		default:
			n = next
		}
		if n > 0 {
			next++
		}
		out = append(out, diffLine{Class: c, Segs: markHidden(l), Line: n})
	}
	return out
}

// hunkStart is the new file's first line in a hunk header
// ("@@ -3,4 +5,6 @@"), 0 when the header says none.
func hunkStart(header string) int {
	_, after, ok := strings.Cut(header, " +")
	if !ok {
		return 0
	}
	end := strings.IndexFunc(after, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(after)
	}
	n, err := strconv.Atoi(after[:end])
	if err != nil || n < 0 {
		return 0
	}
	if n == 0 { // "+0,0": the file is deleted; no new lines
		return 0
	}
	return n
}

// markHidden splits s into text and the hidden characters in it.
func markHidden(s string) []diffSeg {
	var segs []diffSeg
	start := 0
	for i, r := range s {
		name, ok := baton.HiddenRune(r)
		if !ok {
			continue
		}
		if i > start {
			segs = append(segs, diffSeg{Text: s[start:i]})
		}
		segs = append(segs, diffSeg{Code: fmt.Sprintf("U+%04X", r), Name: name})
		start = i + utf8.RuneLen(r)
	}
	if start < len(s) || len(segs) == 0 {
		segs = append(segs, diffSeg{Text: s[start:]})
	}
	return segs
}

// fileID is the element id of a changed file's fold: the same for the
// same path on every render, so a live refresh keeps it as the person
// left it (open or closed).
func fileID(path string) string {
	sum := sha256.Sum256([]byte(path))
	return "file-" + hex.EncodeToString(sum[:6])
}

// hiddenFiles lists the files of a diff whose shown patch holds hidden
// characters.
func hiddenFiles(files []forge.FileDiff) []forge.FileDiff {
	var out []forge.FileDiff
	for _, f := range files {
		if f.Hidden > 0 {
			out = append(out, f)
		}
	}
	return out
}

// pageData is what every page template gets.
type pageData struct {
	Title, Nav, Path string
	SignedIn         bool
	Name, CSRF       string
	Agent            AgentStatus
	HasProject       bool
	Flash, Error     string
	// FlashBad marks a flash that reports a failure (shown in red).
	FlashBad bool
	// Waiting counts deliveries waiting for a person (-1: unknown).
	Waiting int64
	// Live is set when the reader may read the shared stream: on a
	// loopback server, or signed in (elsewhere it would be sent to sign
	// in, again and again).
	Live bool
}

func (s *Server) page(r *http.Request, title, nav string) pageData {
	a := authOf(r)
	p := pageData{Title: title, Nav: nav, Path: r.URL.Path, Agent: s.Agent, HasProject: s.Project != nil, SignedIn: a.ok(), Waiting: -1,
		Live: s.Open || a.ok()}
	if a.session != nil {
		p.Name, p.CSRF = a.session.Name, s.csrfToken(*a.session)
	}
	if f, ok := flashes[r.URL.Query().Get("flash")]; ok {
		p.Flash, p.FlashBad = f.text, f.bad
	}
	// The count in the nav is a signal, not the page: a database that
	// does not answer it leaves the page to say what went wrong.
	if pulse, err := s.Deliveries.Pulse(r.Context()); err == nil {
		p.Waiting = pulse.Waiting
	}
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
	if f := r.URL.Query().Get("fragment"); (f == "live" || f == "earlier") && name == "delivery" {
		root = f
	}
	if err := t.ExecuteTemplate(&buf, root, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	body := compressPage(w, r, buf.Bytes())
	w.WriteHeader(status)
	_, _ = w.Write(body)
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

type listPage struct {
	pageData
	List             listJSON
	Filter           struct{ State, Q, Phase, Status string }
	Phases, Statuses []string
	Filtered         bool
	Self             string
	// Total counts what the filter keeps; From and To number the rows
	// shown (1-based, newest first).
	Total    int64
	From, To int64
	// Oldest says the list is the waiting ones, the longest waiting
	// first (its links go by page number).
	Oldest   bool
	NewerURL string
	FirstURL string
	OlderURL string
	Repos    []string
	// Form is what the create form holds; FormError why it failed.
	Form      CreateRequest
	FormError string
}

// perPage is how many deliveries a page of the list shows.
const perPage = 50

func (s *Server) listPage(r *http.Request) (listPage, error) {
	q := r.URL.Query()
	if q.Get("state") == "" {
		q.Set("state", "active")
	}
	q.Del("flash")
	q.Del("fragment")
	p := listPage{pageData: s.page(r, "Deliveries", "list"), Repos: s.Repos}
	p.Filter.State, p.Filter.Q, p.Filter.Phase, p.Filter.Status = q.Get("state"), q.Get("q"), q.Get("phase"), q.Get("status")
	p.Filtered = p.Filter.Q != "" || p.Filter.Phase != "" || p.Filter.Status != ""
	for _, ph := range delivery.FilterPhases {
		p.Phases = append(p.Phases, string(ph))
	}
	for _, st := range delivery.FilterStatuses {
		p.Statuses = append(p.Statuses, string(st))
	}
	f, err := queryFilter(q)
	if err != nil {
		return p, err
	}
	f.Limit = perPage
	page := func(key, val string) string {
		c := url.Values{}
		for k, v := range q {
			if k != "cursor" && k != "after" && k != "page" {
				c[k] = v
			}
		}
		if key != "" {
			c.Set(key, val)
		}
		return "/?" + c.Encode()
	}
	if f.Waiting {
		return s.waitingPage(r, q, f, p, page)
	}
	if c := q.Get("cursor"); c != "" {
		if f.BeforeSeq, err = strconv.ParseInt(c, 10, 64); err != nil || f.BeforeSeq < 1 {
			return p, baton.Errorf(baton.Invalid, "bad cursor %q: follow the list's Older and Newer links", baton.Truncate(c, 20, "…"))
		}
	} else if a := q.Get("after"); a != "" {
		if f.AfterSeq, err = strconv.ParseInt(a, 10, 64); err != nil || f.AfterSeq < 0 {
			return p, baton.Errorf(baton.Invalid, "bad page %q: follow the list's Older and Newer links", baton.Truncate(a, 20, "…"))
		}
	}
	if p.List, err = s.list(r, f); err != nil {
		return p, err
	}
	all := f
	all.BeforeSeq, all.AfterSeq = 0, 0
	if p.Total, err = s.Deliveries.Count(r.Context(), all); err != nil {
		return p, err
	}
	if ds := p.List.Deliveries; len(ds) > 0 {
		above := all
		above.AfterSeq = ds[0].Seq
		newer, err := s.Deliveries.Count(r.Context(), above)
		if err != nil {
			return p, err
		}
		p.From, p.To = newer+1, newer+int64(len(ds))
		if newer > 0 {
			p.NewerURL = page("after", strconv.FormatInt(ds[0].Seq, 10))
			p.FirstURL = page("", "")
		}
	}
	if p.List.NextCursor != "" {
		p.OlderURL = page("cursor", p.List.NextCursor)
	}
	p.Self = page("", "")
	if f.BeforeSeq > 0 {
		p.Self = page("cursor", strconv.FormatInt(f.BeforeSeq, 10))
	} else if f.AfterSeq > 0 {
		p.Self = page("after", strconv.FormatInt(f.AfterSeq, 10))
	}
	return p, nil
}

// waitingPage is the list of the deliveries that wait for a person,
// the longest waiting first, a page of them at a time by number (?page=).
func (s *Server) waitingPage(r *http.Request, q url.Values, f baton.DeliveryFilter, p listPage, page func(key, val string) string) (listPage, error) {
	n := 1
	if v := q.Get("page"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1<<20 {
			return p, baton.Errorf(baton.Invalid, "bad page %q: follow the list's links", baton.Truncate(v, 20, "…"))
		}
	}
	f.Offset = (n - 1) * perPage
	var err error
	if p.List, err = s.list(r, f); err != nil {
		return p, err
	}
	if p.Total, err = s.Deliveries.Count(r.Context(), f); err != nil {
		return p, err
	}
	p.Oldest = true
	p.From, p.To = int64(f.Offset+1), int64(f.Offset+len(p.List.Deliveries))
	if n > 1 {
		p.NewerURL = page("page", strconv.Itoa(n-1))
		p.FirstURL = page("", "")
	}
	if p.List.NextCursor != "" {
		p.OlderURL = page("page", strconv.Itoa(n+1))
	}
	p.Self = page("page", strconv.Itoa(n))
	return p, nil
}

func (s *Server) pageList(w http.ResponseWriter, r *http.Request) error {
	p, err := s.listPage(r)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "list", p)
}

type boardPage struct {
	pageData
	Columns []delivery.BoardColumn
	Any     bool
	PerCol  int
}

// boardColumn is how many deliveries a board column shows; the count
// says how many it has.
const boardColumn = 20

func (s *Server) pageBoard(w http.ResponseWriter, r *http.Request) error {
	cols, err := s.Deliveries.Board(r.Context(), boardColumn)
	if err != nil {
		return err
	}
	p := boardPage{pageData: s.page(r, "Board", "board"), Columns: cols, PerCol: boardColumn}
	for _, c := range cols {
		p.Any = p.Any || c.Count > 0
	}
	return s.render(w, r, http.StatusOK, "board", p)
}

type deliveryPage struct {
	pageData
	D      *delivery.DetailView
	Log    []logItem
	Events int
	After  int64
	// Older says there are lines before First, the first one shown.
	Older  bool
	First  int64
	Closed bool
	// LastRun numbers the newest agent run shown: output of a newer one
	// refreshes the page's state.
	LastRun int
	// RunningSince is when the running phase started (zero unless one
	// runs).
	RunningSince time.Time
	Work         *delivery.Work
	// PlanHTML is the work's plan rendered as markdown; PlanAsText says
	// why it is not, and the page shows its numbered source instead.
	PlanHTML   template.HTML
	PlanAsText string
	PRs        []delivery.RefView
	// Agents are what Retry may switch to.
	Agents []string
	// ActionError says why the last action failed, beside the buttons;
	// Reason and Notes are what was typed for it.
	ActionError, Reason, Notes string
	// Labels say what each offered action does, as its button reads
	// (decisionLabel).
	Labels map[string]string
	// State names what the page shows, for its decisions
	// (delivery.Decision.On): with the work commit when the delivery
	// waits for a person and its work is shown.
	State string
	// SayError says why the last message to the agent failed; SayText is
	// what was typed.
	SayError, SayText string
}

// logItem is a line of the live log, or a group of consecutive tool
// calls (shown folded).
type logItem struct {
	baton.DeliveryEvent
	Tools []baton.DeliveryEvent
}

// groupLog folds runs of tool calls of the live log into groups.
func groupLog(evs []baton.DeliveryEvent) []logItem {
	var out []logItem
	for _, e := range evs {
		if e.Kind == baton.EventTool {
			if n := len(out); n > 0 && out[n-1].Tools != nil {
				out[n-1].Tools = append(out[n-1].Tools, e)
				continue
			}
			out = append(out, logItem{DeliveryEvent: e, Tools: []baton.DeliveryEvent{e}})
			continue
		}
		out = append(out, logItem{DeliveryEvent: e})
	}
	return out
}

// pageEvents is how many log lines a delivery's page shows at first,
// and how many more each "Show earlier lines" adds; maxPageEvents is
// the most one page shows.
const pageEvents, maxPageEvents = 300, 20 * 300

// logWindow is the events (from, to] a delivery's page shows, last
// being its newest: the newest pageEvents, or with ?before=SEQ (the
// first line the page showed) pageEvents more before SEQ as well, at
// most maxPageEvents in all; with ?fragment=earlier, those earlier ones
// alone.
func logWindow(q url.Values, last int64) (from, to int64, err error) {
	to = last
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return 0, 0, baton.Errorf(baton.Invalid, "before=%s: want the number of a log line, from 1", baton.Truncate(b, 20, "…"))
		}
		to = min(n-1, last)
	}
	from = max(to-pageEvents, 0)
	if q.Get("fragment") == "earlier" {
		return from, to, nil
	}
	return max(from, last-maxPageEvents), last, nil
}

func (s *Server) deliveryPage(r *http.Request) (*deliveryPage, error) {
	v, err := s.detail(r, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	from, to, err := logWindow(r.URL.Query(), v.LastEvent)
	if err != nil {
		return nil, err
	}
	evs, err := s.Deliveries.Events(r.Context(), v.Delivery.ID, from, int(to-from))
	if err != nil {
		return nil, err
	}
	// Events after LastEvent come to the page by its stream, which
	// starts there: shown now too, they would show twice.
	evs = slices.DeleteFunc(evs, func(e baton.DeliveryEvent) bool { return e.Seq > v.LastEvent })
	work, err := s.Deliveries.Work(r.Context(), v.Delivery.ID, forge.DefaultDiffLimits)
	if err != nil {
		return nil, err
	}
	p := &deliveryPage{pageData: s.page(r, fmt.Sprintf("#%d %s", v.Delivery.Seq, baton.Truncate(v.Delivery.Title, 80, "…")), "list"), D: v,
		Log: groupLog(evs), Events: int(v.LastEvent), After: v.LastEvent, Older: from > 0, First: from + 1, Closed: v.Delivery.Phase == string(baton.PhaseClose),
		Work: work, Agents: s.Agents}
	if work.Plan != "" {
		p.PlanHTML, p.PlanAsText = s.plans.render(work.Plan, planWait)
	}
	p.Labels = map[string]string{}
	for _, a := range v.Delivery.Actions {
		p.Labels[a] = decisionLabel(v.Delivery, work, a)
	}
	p.State = v.Delivery.State
	if v.Delivery.Waiting && work.Commit != "" {
		p.State += "@" + work.Commit
	}
	for _, run := range v.AgentRuns {
		p.LastRun = max(p.LastRun, run.N)
	}
	if n := len(v.PhaseLog); n > 0 && v.Delivery.RunStatus == string(baton.StatusRunning) {
		p.RunningSince = v.PhaseLog[n-1].StartedAt
	}
	for _, ref := range v.Delivery.Refs {
		if ref.Role == baton.RoleWork && strings.HasPrefix(ref.URL, "https://") {
			p.PRs = append(p.PRs, ref)
		}
	}
	return p, nil
}

func (s *Server) pageDelivery(w http.ResponseWriter, r *http.Request) error {
	p, err := s.deliveryPage(r)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "delivery", p)
}

// pageNote shows one review note of a delivery: a reviewer's verdict or
// a person's reject reason, which the delivery's refs point at.
func (s *Server) pageNote(w http.ResponseWriter, r *http.Request) error {
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	if err != nil || n < 1 {
		return baton.Errorf(baton.NotFound, "no review note %q", baton.Truncate(r.PathValue("n"), 20, "…"))
	}
	note, err := s.Deliveries.ReviewNote(r.Context(), r.PathValue("id"), n)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "note", notePage{pageData: s.page(r, fmt.Sprintf("Review note %d", note.ID), "list"),
		Note: note, Body: delivery.NoteBody(note)})
}

type notePage struct {
	pageData
	Note *baton.ReviewNote
	Body string
}

// flash is a message the banner of the page after a form shows.
type flash struct {
	text string
	bad  bool // a failure: shown as an error
}

// flashes are the messages the banner of the page after a form shows,
// by key. A redirect names a key (?flash=approve) and the page shows the
// server's own message for it; any other key shows nothing, so a link
// cannot put its own words in the banner. Specifics (which delivery,
// what a sync found) are on the page itself.
var flashes = map[string]flash{
	"created":        {text: "Delivery created; its plan is queued."},
	"exists":         {text: "A delivery already exists for this request: this one."},
	"run":            {text: "Started: the phase is queued for a worker."},
	"approve":        {text: "Approved."},
	"reject":         {text: "Rejected: the reason is posted where the next run reads it."},
	"retry":          {text: "Retried: the phase is queued again."},
	"cancel":         {text: "Canceled: the agent is stopped and its result discarded."},
	"close":          {text: "Closed."},
	"said":           {text: "Message sent: the agent's run stops and its session resumes with it."},
	"source-added":   {text: "Source added; it syncs within the poll interval (or now, with Sync now)."},
	"source-synced":  {text: "Synced: the source's row shows what the sync found."},
	"source-failed":  {text: "The sync failed: the source's row says why.", bad: true},
	"source-saved":   {text: "Source saved."},
	"source-removed": {text: "Source removed; its deliveries stay."},
	"settings-saved": {text: "Settings saved."},
	"signed-out":     {text: "Signed out."},
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

// formFailed is the status a form's page is shown again with, beside
// what was typed and why it failed: the error's own.
func formFailed(err error) int {
	code, _ := classify(err)
	return statusOf(code)
}

func (s *Server) formCreate(w http.ResponseWriter, r *http.Request) error {
	c := CreateRequest{IssueURL: strings.TrimSpace(r.PostFormValue("issue_url")), Summary: strings.TrimSpace(r.PostFormValue("summary"))}
	if c.IssueURL == "" {
		c.Repo = r.PostFormValue("repo")
	}
	req, err := s.request(c, actor(r))
	var d *baton.Delivery
	created := false
	if err == nil {
		d, created, err = s.Deliveries.Create(r.Context(), req)
	}
	if err != nil {
		// The form again, as typed, with the reason beside it.
		p, perr := s.listPage(r)
		if perr != nil {
			return err
		}
		p.Form = c
		_, p.FormError = classify(err) // an internal error's cause stays in the log
		return s.render(w, r, formFailed(err), "list", p)
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
	req := ActionRequest{Reason: strings.TrimSpace(r.PostFormValue("reason")), Agent: strings.TrimSpace(r.PostFormValue("agent"))}
	notes := r.PostFormValue("notes")
	req.Notes, err = baton.ParseLineNotes(notes)
	var d *baton.Delivery
	if err == nil {
		d, err = s.decide(r, a, req, r.PostFormValue("state"))
	}
	if err != nil {
		p, perr := s.deliveryPage(r)
		if perr != nil || baton.ErrorCode(err) == baton.NotFound {
			return err
		}
		_, p.ActionError = classify(err)
		p.Reason, p.Notes = req.Reason, notes
		return s.render(w, r, formFailed(err), "delivery", p)
	}
	return redirect(w, r, "/deliveries/"+d.ID, string(a))
}

// formSay is the box under the live log: a person's message to the
// running agent (delivery.Service.Say).
func (s *Server) formSay(w http.ResponseWriter, r *http.Request) error {
	text := r.PostFormValue("text")
	_, err := s.Deliveries.Say(r.Context(), r.PathValue("id"), actor(r), text)
	if err != nil {
		p, perr := s.deliveryPage(r)
		if perr != nil || baton.ErrorCode(err) == baton.NotFound {
			return err
		}
		_, p.SayError = classify(err)
		p.SayText = text
		return s.render(w, r, formFailed(err), "delivery", p)
	}
	return redirect(w, r, "/deliveries/"+r.PathValue("id"), "said")
}

type sourcesPage struct {
	pageData
	Sources    []sourceJSON
	Agents     []string
	WebhookURL string
	// Form is what the add form holds; FormError why it failed.
	Form      struct{ Repo, Label, Agent string }
	FormError string
}

func (s *Server) pageSources(w http.ResponseWriter, r *http.Request) error {
	p, err := s.sourcesPage(r)
	if err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "sources", p)
}

func (s *Server) sourcesPage(r *http.Request) (sourcesPage, error) {
	p := sourcesPage{pageData: s.page(r, "Sources", "sources"), Agents: s.Agents,
		WebhookURL: "http(s)://" + r.Host + "/api/webhooks/github"}
	if s.Intake != nil {
		srcs, err := s.Intake.List(r.Context())
		if err != nil {
			return p, err
		}
		for _, src := range srcs {
			p.Sources = append(p.Sources, toSource(src))
		}
	}
	return p, nil
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
		p, perr := s.sourcesPage(r)
		if perr != nil {
			return err
		}
		_, p.FormError = classify(err)
		p.Form.Repo, p.Form.Label, p.Form.Agent = r.PostFormValue("repo"), r.PostFormValue("label"), r.PostFormValue("agent")
		return s.render(w, r, formFailed(err), "sources", p)
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
	// FormError says why the form failed; Every is what was typed.
	FormError, Every string
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
			return s.settingsFailed(w, r, baton.Errorf(baton.Invalid, "poll interval %q is not a number of seconds", baton.Truncate(v, 20, "…")))
		}
		req.PollEverySeconds = &n
	}
	if err := s.applySettings(r, req); err != nil {
		return s.settingsFailed(w, r, err)
	}
	return redirect(w, r, "/settings", "settings-saved")
}

// settingsFailed shows the settings again with the form as typed and
// why it failed.
func (s *Server) settingsFailed(w http.ResponseWriter, r *http.Request, err error) error {
	st, serr := s.settings(r)
	if serr != nil {
		return err
	}
	p := settingsPage{pageData: s.page(r, "Settings", "settings"), Settings: st, Every: r.PostFormValue("poll_every_seconds")}
	_, p.FormError = classify(err)
	return s.render(w, r, formFailed(err), "settings", p)
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

// tokenHint is where the sign-in page says the token is kept: in words,
// not the data directory's path, which the page would show to anyone who
// reaches the port.
const tokenHint = "<data dir>/" + TokenFile

func (s *Server) pageLogin(w http.ResponseWriter, r *http.Request) error {
	return s.render(w, r, http.StatusOK, "login", loginPage{pageData: s.page(r, "Sign in", ""), Next: safeNext(r.URL.Query().Get("next")),
		TokenHint: tokenHint})
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
		p := loginPage{pageData: s.page(r, "Sign in", ""), Next: safeNext(r.PostFormValue("next")), TokenHint: tokenHint}
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
