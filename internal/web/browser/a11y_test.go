package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/harnesstest"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/testenv"
)

// The versions of the auditors, installed from npm into the test cache
// (internal/harnesstest.NPMBin). Lighthouse 12 is the last to run on
// Debian 12's Node 20.
const (
	axeVersion        = "4.11.0"
	lighthouseVersion = "12.8.2"
)

// pageState is one page in one state, as a person would meet it.
type pageState struct {
	name, path string
	signedIn   bool
}

// states makes deliveries in the states a person meets (waiting at the
// plan checkpoint, failed, closed), a source, and returns every main
// page in each of them, signed in and out.
func (e *env) states() []pageState {
	e.t.Helper()
	ctx := e.t.Context()
	mk := func(summary string) string {
		d, _, err := e.svc.Create(ctx, delivery.Request{Repo: e.repo, Summary: summary, Actor: "alice"})
		if err != nil {
			e.t.Fatal(err)
		}
		return d.ID
	}
	waiting := mk("Add a greeting file")
	failed := mk("Break once, then work")
	closed := mk("Something nobody wants")
	changed := mk("Show the change")
	big := mk("Chatty, then a Big change")
	e.waitState(waiting, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
	})
	e.waitState(failed, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })
	e.waitState(closed, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
	})
	if _, err := e.svc.Decide(ctx, closed, delivery.ActClose, "alice", "not needed after all"); err != nil {
		e.t.Fatal(err)
	}
	// At the deploy checkpoint: the diff to approve, and a review note.
	e.waitState(changed, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
	})
	if _, err := e.svc.Decide(ctx, changed, delivery.ActApprove, "alice", ""); err != nil {
		e.t.Fatal(err)
	}
	e.waitState(changed, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	det, err := e.svc.Get(ctx, changed)
	if err != nil {
		e.t.Fatal(err)
	}
	// A long log and a big diff: 180 lines of a planner's tool calls, 40
	// files of 120 lines at the deploy checkpoint.
	e.waitState(big, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
	})
	if _, err := e.svc.Decide(ctx, big, delivery.ActApprove, "alice", ""); err != nil {
		e.t.Fatal(err)
	}
	e.waitState(big, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	note := ""
	for _, r := range det.View(time.Now()).Delivery.Refs {
		if r.NoteID > 0 {
			note = fmt.Sprintf("/deliveries/%s/notes/%d", changed, r.NoteID)
		}
	}
	if note == "" {
		e.t.Fatal("the reviewed delivery has no review note")
	}
	if _, err := e.intake.Add(ctx, intake.SourceInput{Repo: "octo/app"}); err != nil {
		e.t.Fatal(err)
	}
	var out []pageState
	for _, in := range []bool{false, true} {
		who := "out"
		if in {
			who = "in"
		}
		for _, p := range []struct{ name, path string }{
			{"list", "/"}, {"list-all", "/?state=all"}, {"board", "/board"},
			{"delivery-waiting", "/deliveries/" + waiting}, {"delivery-failed", "/deliveries/" + failed},
			{"delivery-closed", "/deliveries/" + closed}, {"delivery-changes", "/deliveries/" + changed}, {"delivery-big", "/deliveries/" + big}, {"review-note", note},
			{"sources", "/sources"}, {"settings", "/settings"}, {"project", "/project"}, {"insights", "/insights"},
			{"not-found", "/no-such-page"},
		} {
			out = append(out, pageState{name: p.name + "-" + who, path: p.path, signedIn: in})
		}
	}
	return append(out, pageState{name: "login", path: "/login?next=/"})
}

// waitState polls the delivery until ok holds.
func (e *env) waitState(id string, ok func(*baton.Delivery) bool) {
	e.t.Helper()
	var d *baton.Delivery
	var err error
	held := testenv.Until(90*time.Second, nil, func() bool {
		d, err = e.svc.Current(e.t.Context(), id)
		return err != nil || ok(d)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if !held {
		e.t.Fatalf("delivery %s is %s after 90s", id, d.String())
	}
}

// sessionCookie signs in over HTTP and returns the session cookie.
func (e *env) sessionCookie() *http.Cookie {
	e.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", e.url+"/login", strings.NewReader(url.Values{"token": {token}, "name": {"alice"}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.url)
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "baton_session" {
			return ck
		}
	}
	e.t.Fatalf("sign-in answered %d without a session cookie", resp.StatusCode)
	return nil
}

// axeViolation is one rule axe-core found broken on a page.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// axe runs axe-core on the page open now and returns its violations.
func (e *env) axe(src string) []axeViolation {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.browser, 60*time.Second)
	defer cancel()
	// Evaluated through the DevTools protocol, which the page's CSP does
	// not govern.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+";true")); err != nil {
		e.t.Fatalf("inject axe-core: %v", err)
	}
	const run = `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
		id: v.id, impact: v.impact || "", help: v.help,
		targets: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))`
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](run, chromedp.EvalAwaitPromise))
	if err != nil {
		e.t.Fatalf("run axe-core: %v", err)
	}
	return out
}

// TestDashboardAccessibility runs axe-core (the engine behind most
// accessibility checkers) on every main page in each state a person
// meets, at a desktop and a phone width, and in dark mode: none may have
// a violation of any impact. Every page is kept as a screenshot.
func TestDashboardAccessibility(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "installs axe-core and audits every page at four layouts")
	axePath := harnesstest.NPMBin(t, "axe-core", axeVersion, "axe-core/axe.min.js")
	src, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	states := e.states()
	e.signIn()
	signedIn := true
	var report []string
	bad, audited := 0, 0
	for _, w := range []struct {
		name   string
		w, h   int64
		scheme string
	}{{"desktop", 1440, 900, "light"}, {"phone", 390, 844, "light"}, {"desktop-dark", 1440, 900, "dark"}, {"phone-dark", 390, 844, "dark"}} {
		e.run("viewport "+w.name, chromedp.EmulateViewport(w.w, w.h), emulateScheme(w.scheme))
		for _, s := range states {
			if strings.HasPrefix(s.name, "delivery-big") {
				// The markup of delivery-changes, in bulk: axe-core checks
				// each of its 6,500 elements and took over a minute per
				// layout on a loaded machine. The load tests use it.
				continue
			}
			if s.signedIn != signedIn {
				if s.signedIn {
					e.signIn()
				} else {
					e.run("sign out", chromedp.Navigate(e.url+"/"), chromedp.WaitReady(chromedp.CSS("body")))
					e.submit(`form[action="/logout"] button`)
				}
				signedIn = s.signedIn
			}
			e.run("open "+s.path, chromedp.Navigate(e.url+s.path), chromedp.WaitReady(chromedp.CSS("body")))
			e.waitJS("the page to load", `document.readyState === "complete"`, 10*time.Second)
			vs := e.axe(string(src))
			audited++
			for _, v := range vs {
				line := fmt.Sprintf("%s %s (%s): %s %s: %v", w.name, s.name, s.path, v.Impact, v.ID, v.Targets)
				report = append(report, line)
				// Every impact counts: a moderate one (two landmarks
				// with one name) is still a screen reader user lost.
				bad++
				t.Errorf("axe-core: %s — %s", line, v.Help)
			}
			e.screenshot(w.name + "-" + s.name)
		}
	}
	sort.Strings(report)
	t.Logf("axe-core %s: %d page-states, %d violations:\n%s", axeVersion, audited, bad, strings.Join(report, "\n"))
}

// emulateScheme sets prefers-color-scheme.
func emulateScheme(scheme string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return chromedp.Void{}, err
	}
}

// lighthouseScores is the part of Lighthouse's JSON report the test reads.
type lighthouseScores struct {
	Categories map[string]struct {
		Score *float64 `json:"score"`
	} `json:"categories"`
	Audits map[string]struct {
		Score            *float64 `json:"score"`
		Title            string   `json:"title"`
		NumericValue     float64  `json:"numericValue"`
		ScoreDisplayMode string   `json:"scoreDisplayMode"`
	} `json:"audits"`
}

// failingAudits lists the audits of r that did not pass, by id.
func failingAudits(r lighthouseScores) []string {
	var failing []string
	for id, a := range r.Audits {
		if a.Score != nil && *a.Score < 1 && (a.ScoreDisplayMode == "binary" || a.ScoreDisplayMode == "numeric" || a.ScoreDisplayMode == "metricSavings") {
			failing = append(failing, id)
		}
	}
	sort.Strings(failing)
	return failing
}

// TestPrefetch installs axe-core and Lighthouse, as the audits below do,
// when scripts/test.sh fetches prerequisites before the timed run
// (testenv.Prefetch).
func TestPrefetch(t *testing.T) {
	t.Parallel()
	testenv.Prefetch(t)
	harnesstest.NPMBin(t, "axe-core", axeVersion, "axe-core/axe.min.js")
	harnesstest.NPMBin(t, "lighthouse", lighthouseVersion, "lighthouse")
}

// TestDashboardLighthouse runs Lighthouse on every main page, signed in,
// on Debian's chromium: each must score 100 for accessibility
// and best practices on a desktop, and, on a quiet machine
// (BATON_TEST_TIMING set), at least 95 for performance on a phone. The mobile run calibrates its CPU slowdown from the machine's
// benchmarkIndex measured in the same run (lighthouseMobile), so a
// loaded machine simulates the same phone as a quiet one; the causes a
// score would hide in noise are asserted apart, without timing, by
// TestDashboardLoadBudget.
func TestDashboardLighthouse(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "installs Lighthouse and audits every page")
	lh := harnesstest.NPMBin(t, "lighthouse", lighthouseVersion, "lighthouse")
	e := newEnv(t)
	chrome := chromium(t)
	states := e.states()
	cookie := e.sessionCookie()
	headers, _ := json.Marshal(map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	var summary []string
	for _, s := range states {
		if !s.signedIn && s.name != "login" && !strings.HasPrefix(s.name, "delivery-waiting") || strings.HasPrefix(s.name, "not-found") {
			continue // signed out, the pages are the same but for the forms; Lighthouse audits no error page
		}
		var extra []string
		if s.signedIn {
			extra = append(extra, "--extra-headers="+string(headers))
		}
		out := filepath.Join(e.artifacts, "lighthouse-"+s.name+".json")
		args := append([]string{e.url + s.path, "--quiet", "--output=json", "--output-path=" + out,
			"--only-categories=accessibility,best-practices", "--form-factor=desktop", "--screenEmulation.disabled",
			"--chrome-flags=--headless=new --no-sandbox --disable-dev-shm-usage"}, extra...)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, lh, args...)
		cmd.Env = append(os.Environ(), "CHROME_PATH="+chrome)
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("lighthouse %s: %v\n%s", s.path, err, b)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var r lighthouseScores
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("lighthouse report of %s: %v", s.path, err)
		}
		line := s.name
		for _, cat := range []string{"accessibility", "best-practices"} {
			c, ok := r.Categories[cat]
			if !ok || c.Score == nil {
				t.Errorf("%s: no %s score", s.name, cat)
				continue
			}
			score := int(*c.Score*100 + 0.5)
			line += fmt.Sprintf(" %s %d", cat, score)
			if score < 100 {
				t.Errorf("Lighthouse %s of %s (%s) = %d, want 100", cat, s.name, s.path, score)
			}
		}
		if failing := failingAudits(r); len(failing) > 0 {
			line += fmt.Sprintf(" (failing: %s)", strings.Join(failing, ", "))
		}

		// The mobile score is a figure of time: held to 95, as the best of
		// five runs, only on a quiet machine (testenv.Timing); otherwise
		// one run is logged, and TestDashboardLoadBudget asserts the
		// causes of a slow page without a clock. Under CI's own load the
		// big delivery page's best of five was 89 with its page thread
		// running 62% of the time.
		runs := 1
		if testenv.Timing() {
			runs = 5
		}
		m := bestMobile(t, lh, chrome, e.url+s.path, filepath.Join(e.artifacts, "lighthouse-mobile-"+s.name), runs, extra...)
		line += "; mobile " + m.String()
		switch {
		case m.Score < 0:
			line += " (not asserted: every run was starved of CPU)"
		case m.Score < 95 && !testenv.Timing():
			line += " (UNDER 95; asserted only with " + testenv.TimingVar + " set)"
		case m.Score < 95:
			t.Errorf("Lighthouse mobile performance of %s (%s) = %s, want at least 95; failing audits: %s (report: %s)",
				s.name, s.path, m, strings.Join(m.Failing, ", "), m.Report)
		}
		summary = append(summary, line)
	}
	t.Logf("Lighthouse %s:\n%s", lighthouseVersion, strings.Join(summary, "\n"))
}
