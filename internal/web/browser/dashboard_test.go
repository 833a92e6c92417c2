// Package browser_test drives the dashboard in a real browser: Debian's
// chromium through the DevTools protocol (chromedp), against the real
// server, database, queue, worker and a scripted agent.
//
// Screenshots go to $BATON_TEST_ARTIFACTS when it is set, else to the
// test's temporary directory. When no chromium binary exists the tests
// skip and say so; scripts/test.sh installs it, so CI never skips.
package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx/gittest"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
	"github.com/baton-agent/baton/internal/web"
)

// TestMain gives git a fixed identity and no user configuration for the
// whole test binary (gittest.Main), so the tests may run in parallel.
func TestMain(m *testing.M) { os.Exit(gittest.Main(m)) }

const token = "baton_browser_test_token"

// agentScript answers as planner, implementer or reviewer. The
// implementer waits before it speaks, so its output reaches a page that
// is already open; a request that says "Break once" fails its first
// plan, "Chatty" makes a long plan run with tool calls and stderr, and
// "Slow plan" one that runs until it is canceled; an implementer told of
// a "Big change" writes 40 files of 120 lines.
const agentScript = `#!/bin/sh
prompt=$(cat)
case "$prompt" in
*"Break once"*)
	if [ ! -f "$STATE/broke" ]; then
		touch "$STATE/broke"
		echo "boom: the planner's toolchain crashed" >&2
		exit 3
	fi ;;
esac
case "$prompt" in
*"You are the reviewer"*) echo '{"verdict":"pass","summary":"Looks right","feedback":""}' ;;
*"You are the planner"*)
	case "$prompt" in
	*"Chatty"*)
		i=0
		while [ $i -lt 60 ]; do echo "→ Read: file$i.go"; echo "→ Grep: func$i"; echo "looking at file $i"; i=$((i+1)); done
		echo "warning: a diagnostic on stderr" >&2
		sleep 4 ;;
	*"Slow plan"*) echo "thinking it over"; sleep 60 ;;
	esac
	echo "planning: read the request"; echo "1. Write greet.txt."; echo "2. Keep <em>markup</em> as text." ;;
*)
	sleep 2
	echo "implementing: writing greet.txt"
	f=$(git rev-parse --abbrev-ref HEAD | tr / -)
	echo "hello, <em>markup</em> as text" > "$f.txt"
	case "$prompt" in
	*"Big change"*)
		i=0
		while [ $i -lt 40 ]; do seq 1 120 | sed "s/^/file $i, line /" > "big$i.txt"; i=$((i+1)); done ;;
	esac
	echo "implemented" ;;
esac
`

type env struct {
	t         *testing.T
	url       string
	repo      string
	web       *web.Server
	live      *liveStreams
	svc       *delivery.Service
	intake    *intake.Service
	artifacts string
	browser   context.Context
}

// chromium is the browser the tests drive. Like every test that drives
// a large outside program, they run with BATON_TEST_ALL=1 (scripts/test.sh
// sets it), so plain `go test ./...` stays a quick loop.
func chromium(t *testing.T) string {
	t.Helper()
	testenv.Heavy(t, "drives chromium")
	for _, name := range []string{os.Getenv("BATON_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH (scripts/test.sh installs Debian's chromium package; or set BATON_CHROMIUM)")
	return ""
}

// envOption changes the environment newEnv makes.
type envOption int

// noWorker leaves the queue without a worker: deliveries stay where
// the test puts them.
const noWorker envOption = 1

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	bin := chromium(t)
	dir := t.TempDir()
	repo := filepath.Join(dir, "app")
	state := filepath.Join(dir, "state")
	for _, d := range []string{filepath.Join(repo, ".agent"), state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"verify":"true","observe":"true","observe_window":"1s","observe_every":"200ms"}`
	if err := os.WriteFile(filepath.Join(repo, ".agent", "delivery.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "initial commit")

	q, err := queue.Open(t.Context(), sqlstoretest.DSN(t, sqlstore.SQLite), queue.Config{Workers: 1, FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	svc := &delivery.Service{Queue: q, DataDir: filepath.Join(dir, "data"), DefaultAgent: "command:" + script,
		Sandbox: sandbox.Confinement{Policy: sandbox.Policy{Write: []string{state}}}} // where the agent remembers it broke once
	feed := delivery.NewFeed(svc, 50*time.Millisecond)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	ws := &web.Server{Deliveries: svc, Feed: feed, Token: token, Open: true, Repos: []string{repo}, Log: log,
		Intake: &intake.Service{Deliveries: svc}, Heartbeat: time.Second,
		Agent: web.AgentStatus{Name: svc.DefaultAgent, Installed: true}, Agents: harness.AgentNames(),
		Project: &web.Project{Root: repo, Load: func(context.Context) (web.ProjectView, error) {
			return web.ProjectView{Root: repo,
				Run: &web.RunView{Summary: "goal tree: 2 of 3 nodes done", Tree: "✓ root\n  ✓ parse the config\n  → write the docs",
					Iterations: []web.IterationView{{Name: "iteration-2", Node: "write the docs", Outcome: "continue", GuardLog: "go test ./... ok"}}},
				Packets: []web.ArtifactView{{ID: "20261126-handoff", Status: "open", Purpose: "pick up the docs"}},
				Loops: []loop.View{{ID: "loop-1", Status: "active", Foreground: true, Iteration: 2, MaxIterations: 20, CompletionPromises: []string{"DONE"},
					MaxTokens: 50000, SpentTokens: 1200, ActiveSeconds: 90, Verify: []string{"go test ./..."}}},
			}, nil
		}}}
	// A slow state refresh: phase changes come in bursts, and the page
	// must end up showing the last state even when a burst arrives while
	// it is still fetching the previous one.
	h := ws.Handler()
	lv := &liveStreams{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/live" {
			lv.serve(h, w, r)
			return
		}
		if f := r.URL.Query().Get("fragment"); f != "live" {
			h.ServeHTTP(w, r)
			return
		}
		// Rendered now, delivered late: the state may move meanwhile. The
		// sleep is the lateness under test, not a wait for anything.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		time.Sleep(300 * time.Millisecond)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))

	ctx, stop := context.WithCancel(context.Background())
	svc.AgentEnv = []string{"STATE=" + state}
	worker := &delivery.Worker{
		Runner: &delivery.Runner{Service: svc, Owner: "worker:browser",
			PollEvery: 50 * time.Millisecond, KillGrace: time.Second},
		Log: log, Observe: ws.ObserveJob,
	}
	done := make(chan error, 1)
	if slices.Contains(opts, noWorker) {
		done <- nil
	} else {
		go func() { done <- worker.Run(ctx) }()
	}

	aopts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1440, 900), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, closeAlloc := chromedp.NewExecAllocator(ctx, aopts...)
	browser, closeBrowser := chromedp.NewContext(alloc)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium (%s): %v", bin, err)
	}
	t.Cleanup(func() {
		closeBrowser()
		closeAlloc()
		srv.CloseClientConnections()
		srv.Close()
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
		feed.Close()
		q.Close()
	})
	out := os.Getenv("BATON_TEST_ARTIFACTS")
	if out == "" {
		out = t.TempDir()
	} else {
		out = filepath.Join(out, t.Name())
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, url: srv.URL, repo: repo, web: ws, live: lv, svc: svc, intake: ws.Intake, artifacts: out, browser: browser}
}

// liveStreams watches the dashboard's shared streams (/live): how many
// are open at once, what they watch, and it can play a server that is
// gone (down: streams end and new ones are refused).
type liveStreams struct {
	mu      sync.Mutex
	open    int
	most    int
	watches []string
	down    bool
	cancels map[int]context.CancelFunc
	n       int
}

func (l *liveStreams) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	if l.cancels == nil {
		l.cancels = map[int]context.CancelFunc{}
	}
	l.n++
	k := l.n
	l.cancels[k] = cancel
	l.open++
	l.most = max(l.most, l.open)
	l.watches = append(l.watches, r.URL.Query().Get("watch"))
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.open--
		delete(l.cancels, k)
		l.mu.Unlock()
		cancel()
	}()
	h.ServeHTTP(w, r.WithContext(ctx))
}

// setDown plays a server that is gone (true) or back (false).
func (l *liveStreams) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
	if down {
		for _, c := range l.cancels {
			c()
		}
	}
}

func (l *liveStreams) stats() (open, most int, watches []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.most, append([]string(nil), l.watches...)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// run runs browser actions with a bound, failing the test with the
// page's text on an error.
func (e *env) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.browser, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		e.t.Fatalf("%s: %v\npage:\n%s", what, err, e.text())
	}
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](e *env, expr string) T {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.browser, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		e.t.Fatalf("evaluate %s: %v\npage:\n%s", expr, err, e.text())
	}
	return v
}

func (e *env) text() string {
	ctx, cancel := context.WithTimeout(e.browser, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// click clicks the element sel finds, once there is one. It finds and
// clicks in one evaluation: a live page replaces its parts as events
// arrive, and a node found by one call may be gone by the next (the
// retry button once was, on a loaded machine: "Could not find node with
// given id").
func (e *env) click(sel string) {
	e.t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		e.t.Fatal(err)
	}
	e.waitJS("an element to click", `document.querySelector(`+string(q)+`)`, 30*time.Second)
	if !eval[bool](e, `(el => el ? (el.click(), true) : false)(document.querySelector(`+string(q)+`))`) {
		e.t.Fatalf("click %s: no such element; page:\n%s", sel, e.text())
	}
}

// submit clicks a form's button and waits for the page it leads to.
func (e *env) submit(sel string) {
	e.t.Helper()
	eval[bool](e, `window.__before = 1; true`)
	e.click(sel)
	e.waitJS("the next page", `window.__before === undefined && document.readyState === "complete"`, 20*time.Second)
}

// waitJS waits for a JavaScript condition on the page: the page sends
// the test no event, so it is asked.
func (e *env) waitJS(what, expr string, limit time.Duration) {
	e.t.Helper()
	if !testenv.Until(limit, nil, func() bool {
		ctx, cancel := context.WithTimeout(e.browser, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		return err == nil && ok
	}) {
		e.t.Fatalf("waited %s for %s (%s); page:\n%s", limit, what, expr, e.text())
	}
}

func (e *env) signIn() {
	e.t.Helper()
	e.run("open the sign-in page", chromedp.Navigate(e.url+"/login?next=/"), chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
	e.run("fill the sign-in form",
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), token),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "alice"))
	e.submit(`form[action="/login"] button[type=submit]`)
	if txt := e.text(); !strings.Contains(txt, "signed in as alice") || strings.Contains(txt, token) {
		e.t.Fatalf("after sign-in the page says:\n%s", txt)
	}
}

// create makes a delivery from the list page's form and returns its page
// path.
func (e *env) create(summary string) string {
	e.t.Helper()
	e.run("open the list", chromedp.Navigate(e.url+"/"), chromedp.WaitVisible(chromedp.CSS(`input[name=summary]`)))
	e.run("fill the create form", chromedp.SendKeys(chromedp.CSS(`input[name=summary]`), summary))
	e.submit(`form[action="/deliveries"] button[type=submit]`)
	path := eval[string](e, `location.pathname`)
	if !strings.HasPrefix(path, "/deliveries/") || !strings.Contains(e.text(), summary) {
		e.t.Fatalf("after create: %s\n%s", path, e.text())
	}
	return path
}

// badge is the delivery's state as its page shows it.
func (e *env) badge() string {
	return eval[string](e, `(document.querySelector("#state .badge") || {}).textContent || ""`)
}

// actions are the action buttons the page offers.
func (e *env) actions() []string {
	return eval[[]string](e, `Array.from(document.querySelectorAll("#state button[data-action]")).map(b => b.dataset.action)`)
}

func (e *env) screenshot(name string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.browser, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		e.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil || img.Bounds().Dx() < 300 {
		e.t.Fatalf("screenshot %s is not a usable PNG: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(e.artifacts, name+".png"), buf, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// A person signs in, creates a delivery, watches the agent's output
// arrive live, approves it through its checkpoints and sees it close.
// A failed plan shows its error, and a retry from the page works.
func TestDashboardDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	found := e.watchConsole()
	defer func() {
		for _, p := range found.take() {
			t.Errorf("the pages reported: %s", p)
		}
	}()
	e.signIn()
	page := e.create("Add a greeting file")

	// Drive the delivery from its page: approve or run whatever waits for
	// a person, until it closes. Between actions the page must follow by
	// itself (the event stream), never by a reload.
	var clicked []string
	sawLive := false
	end := time.Now().Add(2 * time.Minute)
	for {
		// The page follows by itself: wait for it to close, or to offer
		// what waits for a person.
		closed, act := false, ""
		testenv.Until(time.Until(end), nil, func() bool {
			if closed = strings.HasPrefix(e.badge(), "close/"); closed {
				return true
			}
			for _, a := range e.actions() {
				if a == "approve" || a == "run" {
					act = a
					return true
				}
			}
			return false
		})
		if closed {
			break
		}
		if act == "" {
			t.Fatalf("the delivery did not close; the page says %q after %v\n%s\nlive log:\n%s", e.badge(), clicked, e.text(),
				eval[string](e, `document.querySelector("#live-log").innerText`))
		}
		clicked = append(clicked, strings.SplitN(e.badge(), " ", 2)[0]+":"+act)
		if act == "run" {
			// The button says what it does: a local deploy merges.
			label := eval[string](e, `document.querySelector('#state button[data-action="run"]').textContent`)
			if log := eval[string](e, `document.querySelector("#live-log").textContent`); label != "Merge into main" || !strings.Contains(log, "is waiting for a person to start it.") {
				t.Errorf("the button says %q; the log says:\n%s", label, log)
			}
		}
		e.submit(`#state button[data-action="` + act + `"]`)
		if !sawLive && strings.HasPrefix(e.badge(), "implement/") {
			// The page is open before the implementer speaks: its line
			// must arrive over the event stream, without navigation.
			eval[bool](e, `window.__stay = 1; true`)
			e.waitJS("the implementer's live output", `document.querySelector("#live-log").textContent.includes("implementing: writing greet.txt")`, 30*time.Second)
			if !eval[bool](e, `window.__stay === 1`) {
				t.Fatal("the live log arrived by reloading the page, not by the event stream")
			}
			sawLive = true
		}
	}
	if !sawLive {
		t.Errorf("never watched the implementer live; actions were %v", clicked)
	}
	if e.badge() != "close/succeeded" {
		t.Errorf("closed as %q", e.badge())
	}
	if len(clicked) < 2 {
		t.Errorf("approved %v: want the plan and deploy checkpoints", clicked)
	}
	t.Logf("actions taken: %v", clicked)
	txt := e.text()
	for _, want := range []string{"planning: read the request", "implemented", "Timeline", "alice"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the closed delivery's page lacks %q", want)
		}
	}
	e.screenshot("detail")
	// One timeline row per phase attempt, not one per state; the deploy
	// shows the wait for a person apart from its work; the live log is
	// above the fold; an agent that reports no cost shows a dash.
	rows := eval[[]string](e, `Array.from(document.querySelectorAll("#detail .timeline tbody tr")).map(r => r.cells[0].textContent.trim())`)
	if want := []string{"plan", "implement", "review", "verify", "deploy", "observe", "close"}; !slices.Equal(rows, want) {
		t.Errorf("timeline rows %q, want %q", rows, want)
	}
	if det, err := e.svc.Get(t.Context(), strings.TrimPrefix(page, "/deliveries/")); err != nil || len(det.PhaseLog) <= len(rows) {
		t.Errorf("the phase log has %d entries for %d rows (%v)", len(det.PhaseLog), len(rows), err)
	}
	if w := eval[string](e, `Array.from(document.querySelectorAll("#detail .timeline tbody tr")).find(r => r.cells[0].textContent.trim() === "deploy").cells[4].textContent`); !strings.Contains(w, "for a person") {
		t.Errorf("the deploy row's wait says %q", w)
	}
	if top := eval[int](e, `Math.round(window.scrollY + document.querySelector("#live-log").getBoundingClientRect().top)`); top > 500 {
		t.Errorf("the live log starts %dpx down a 900px window", top)
	}
	if costs := eval[[]string](e, `Array.from(document.querySelectorAll("#detail td[data-label=Cost], #detail td[data-label=Tokens]")).map(td => td.textContent.trim())`); len(costs) == 0 || slices.ContainsFunc(costs, func(c string) bool { return c != "—" }) {
		t.Errorf("an agent that reports no cost shows %q", costs)
	}

	// A plan that fails shows why; Retry runs it again.
	e.create("Break once, then work")
	e.waitJS("the plan to fail", `(document.querySelector("#state .badge")||{}).textContent.startsWith("plan/failed")`, 60*time.Second)
	msg := eval[string](e, `(document.querySelector("#delivery-error")||{}).textContent || ""`)
	if !strings.Contains(msg, "boom: the planner's toolchain crashed") {
		t.Errorf("the failed plan's error shown is %q", msg)
	}
	if !slices.Contains(e.actions(), "retry") {
		t.Fatalf("a failed plan offers %v, want retry", e.actions())
	}
	e.submit(`#state button[data-action="retry"]`)
	// Every page before this one opened an event stream: they must have
	// let go, or the browser's few connections per server stall this one.
	e.waitJS("the retried plan to succeed", `(document.querySelector("#state .badge")||{}).textContent.startsWith("plan/succeeded")`, 15*time.Second)

	// Screenshots of the list and the board, and the pages at a phone's
	// width, where nothing may scroll sideways.
	e.run("open the list", chromedp.Navigate(e.url+"/?state=all"), chromedp.WaitVisible(chromedp.CSS(`#list`)))
	if txt := e.text(); !strings.Contains(txt, "Break once") || !strings.Contains(txt, "Add a greeting file") {
		t.Errorf("the list does not show both deliveries:\n%s", e.text())
	}
	e.screenshot("list")
	e.run("open the board", chromedp.Navigate(e.url+"/board"), chromedp.WaitReady(chromedp.CSS(`body`)))
	e.screenshot("board")
	e.run("phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	for _, p := range []string{"/?state=all", page, "/board", "/sources", "/settings", "/project"} {
		e.run("open "+p+" on a phone", chromedp.Navigate(e.url+p), chromedp.WaitReady(chromedp.CSS(`body`)))
		if overflow := eval[int](e, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			wide := eval[[]string](e, `Array.from(document.querySelectorAll("body *")).filter(el => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest(".scroll")).slice(-3).map(el => el.tagName + "." + el.className + ": " + (el.textContent || "").slice(0, 60))`)
			t.Errorf("%s at 390px scrolls sideways by %dpx; too wide: %q", p, overflow, wide)
		}
	}
	e.run("open the detail page on a phone", chromedp.Navigate(e.url+page), chromedp.WaitReady(chromedp.CSS(`#state`)))
	e.screenshot("detail-phone")
	t.Logf("screenshots in %s", e.artifacts)
}

// problems collects what pages report as wrong: console errors and
// failed assertions, uncaught exceptions, error entries of the browser
// log, and every violation of the page's Content-Security-Policy (from
// the console, and from a securitypolicyviolation listener each page
// gets before its own scripts run).
type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.list
	p.list = nil
	return out
}

// cspRecorder runs in every page before its scripts: it keeps each CSP
// violation where the test reads it.
const cspRecorder = `window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
	window.__csp.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber + ": " + (e.sample || ""));
});`

func (e *env) watchConsole() *problems {
	e.t.Helper()
	p := &problems{}
	err := chromedp.Listen(e.browser, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				p.add("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			p.add("exception at %s:%d: %s %s", d.URL, d.LineNumber, d.Text, desc)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Source == log.EntrySourceSecurity {
				p.add("browser log (%s, %s): %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			}
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = chromedp.Run(e.browser, func(ctx context.Context, t *chromedp.Target) (page.AddScriptToEvaluateOnNewDocumentResult, error) {
		return cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspRecorder})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// Every main page loads, and refreshes its live parts, without a console
// error and without breaking its own Content-Security-Policy (style-src
// 'self': no style attributes, no style elements). The
// pages show what has styles of its own: a failed delivery's error, a
// source, the signed-in forms.
func TestDashboardPagesKeepTheirCSP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	found := e.watchConsole()
	e.signIn()
	page := e.create("Break once, then work")
	e.waitJS("the plan to fail", `(document.querySelector("#state .badge")||{}).textContent.startsWith("plan/failed")`, 60*time.Second)
	if _, err := e.intake.Add(t.Context(), intake.SourceInput{Repo: "octo/app"}); err != nil {
		t.Fatal(err)
	}
	// The list and the board refresh themselves when a delivery changes
	// (a pulse of the live stream); one refresh is asked for at once here,
	// as a pulse would, and waited for: the part is a new element.
	refresh := map[string]string{"/": "list", "/?state=all": "list", "/board": "board"}
	for _, p := range []string{"/", "/?state=all", "/board", page, "/sources", "/settings", "/login?next=/", "/?flash=settings-saved"} {
		e.run("open "+p, chromedp.Navigate(e.url+p), chromedp.WaitReady(chromedp.CSS("body")))
		e.waitJS("the page's scripts", `document.readyState === "complete"`, 10*time.Second)
		if id, ok := refresh[p]; ok {
			eval[bool](e, fmt.Sprintf(`document.getElementById(%q).__old = true; document.body.dispatchEvent(new CustomEvent("baton:pulse")); true`, id))
			e.waitJS("the "+id+" to refresh", fmt.Sprintf(`!document.getElementById(%q).__old`, id), 20*time.Second)
		}
		for _, v := range eval[[]string](e, `window.__csp || []`) {
			found.add("CSP violation on %s: %s", p, v)
		}
		for _, pr := range found.take() {
			t.Errorf("%s: %s", p, pr)
		}
	}
}
