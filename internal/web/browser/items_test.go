package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/testenv"
)

// The tests of issue 24, one per thing a reviewer must be able to trust
// the dashboard for.

// mk creates a delivery through the service (as the API would) and
// returns its id.
func (e *env) mk(summary string) string {
	e.t.Helper()
	d, _, err := e.svc.Create(e.t.Context(), delivery.Request{Repo: e.repo, Summary: summary, Actor: "alice"})
	if err != nil {
		e.t.Fatal(err)
	}
	return d.ID
}

func (e *env) open(path string) {
	e.t.Helper()
	e.run("open "+path, chromedp.Navigate(e.url+path), chromedp.WaitReady(chromedp.CSS("body")))
	e.waitJS("the page to load", `document.readyState === "complete"`, 10*time.Second)
}

// tab opens another tab of the same browser, with its own helpers.
func (e *env) tab() *env {
	e.t.Helper()
	ctx, cancel := chromedp.NewContext(e.browser)
	e.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		e.t.Fatalf("open a tab: %v", err)
	}
	t := *e
	t.browser = ctx
	return &t
}

func planWaits(d *baton.Delivery) bool {
	return d.Phase == baton.PhasePlan && d.RunStatus == baton.StatusSucceeded
}

// Item 1: at the plan checkpoint the page shows the plan itself, as
// text; at the deploy checkpoint the files the work branch changes with
// their diff, per file and collapsible; the review note is served over
// HTTP, not a file:// link.
func TestDashboardShowsWhatIsApproved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	id := e.mk("Add a greeting file")
	e.waitState(id, planWaits)
	e.open("/deliveries/" + id)
	plan := eval[string](e, `(document.querySelector("#plan .doc") || {}).textContent || ""`)
	for _, want := range []string{"1. Write greet.txt.", "2. Keep <em>markup</em> as text."} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan shown at the checkpoint lacks %q:\n%s", want, plan)
		}
	}
	if eval[int](e, `document.querySelectorAll("#plan .doc em").length`) != 0 {
		t.Error("the plan's text was rendered as markup")
	}
	if !eval[bool](e, `document.querySelector("#plan details").open`) {
		t.Error("at the plan checkpoint the plan is folded away")
	}
	e.screenshot("plan-checkpoint")

	e.submit(`#state button[data-action="approve"]`)
	e.waitState(id, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	e.open("/deliveries/" + id)
	files := eval[[]string](e, `Array.from(document.querySelectorAll("#changes details.file > summary")).map(s => s.textContent.replace(/\s+/g, " ").trim())`)
	work := "baton-" + id + ".txt"
	found := false
	for _, f := range files {
		if strings.Contains(f, work) && strings.Contains(f, "+1") {
			found = true
		}
	}
	if !found {
		t.Errorf("the deploy checkpoint lists changed files %q, want %s with +1", files, work)
	}
	if diff := eval[string](e, `(document.querySelector("#changes pre.diff .l-add") || {}).textContent || ""`); !strings.Contains(diff, "+") {
		t.Errorf("no added line in the diff: %q", diff)
	}
	// The diff is the repository's text: shown, never run as markup. (The
	// plan's markup is not in it: the plan is not merged.)
	if n := eval[int](e, `document.querySelectorAll("#changes em").length`); n != 0 || !strings.Contains(eval[string](e, `document.querySelector("#changes").textContent`), "+hello, <em>markup</em> as text") {
		t.Errorf("the diff's markup: %d elements made of it, or its text missing:\n%s", n, eval[string](e, `document.querySelector("#changes").textContent`))
	}
	if h := eval[string](e, `(document.querySelector("#changes h2 + p") || {}).textContent || ""`); !strings.Contains(h, "against main") {
		t.Errorf("the changes do not say what they are compared with: %q", h)
	}
	e.screenshot("deploy-checkpoint")

	note := eval[string](e, `(Array.from(document.querySelectorAll("#detail a")).find(a => a.textContent.startsWith("review:")) || {}).href || ""`)
	if !strings.HasPrefix(note, e.url+"/deliveries/"+id+"/notes/") {
		t.Fatalf("the review ref links to %q, want the note's page on this server", note)
	}
	if n := eval[int](e, `Array.from(document.querySelectorAll("a")).filter(a => a.href.startsWith("file:")).length`); n != 0 {
		t.Errorf("%d file:// links left on the page", n)
	}
	e.open(strings.TrimPrefix(note, e.url))
	if txt := e.text(); !strings.Contains(txt, "baton review: pass") || !strings.Contains(txt, "Looks right") {
		t.Errorf("the review note's page says:\n%s", txt)
	}
	e.open("/deliveries/" + id + "/notes/999")
	if !strings.Contains(e.text(), "has no review note 999") {
		t.Errorf("another note number shows:\n%s", e.text())
	}
}

// Item 2: the whole delivery page follows the delivery without a
// reload: agent runs, the timeline, the event count and a running
// duration that ticks.
func TestDashboardPageStaysLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	id := e.mk("Add a greeting file")
	e.waitState(id, planWaits)
	e.open("/deliveries/" + id)
	e.submit(`#state button[data-action="approve"]`)
	eval[bool](e, `window.__stay = 1; true`)
	before := eval[int](e, `Number(document.querySelector("#log-count").textContent)`)
	e.waitJS("the implement run's row, running", `Array.from(document.querySelectorAll("#detail td[data-label=Duration] time[data-since]")).length > 0`, 20*time.Second)
	first := eval[string](e, `document.querySelector("#state time[data-since]").textContent`)
	e.waitJS("the running duration to tick", fmt.Sprintf(`(document.querySelector("#state time[data-since]") || {}).textContent !== %q`, first), 5*time.Second)
	e.waitJS("the implement run to finish on the page", `Array.from(document.querySelectorAll("#detail tr")).some(r => r.textContent.includes("implement") && r.querySelector(".s-succeeded"))`, 30*time.Second)
	e.waitJS("review and verify in the timeline", `document.querySelector("#detail .timeline").textContent.includes("verify")`, 30*time.Second)
	if after := eval[int](e, `Number(document.querySelector("#log-count").textContent)`); after <= before {
		t.Errorf("the event count stayed %d", after)
	}
	if !strings.Contains(eval[string](e, `document.querySelector("#detail").textContent`), "branch") {
		t.Error("the work branch's ref did not appear")
	}
	if !eval[bool](e, `window.__stay === 1`) {
		t.Fatal("the page was reloaded")
	}
	e.screenshot("live-after-implement")
}

// Item 3: the live log reads like a session: opened mid-run it shows
// the newest lines, every line has a time, tool calls fold into groups,
// stderr is shown, phase changes are plain words, it can fill the
// screen, and it is a log to assistive technology.
func TestDashboardLogReadsLikeASession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	id := e.mk("Chatty plan")
	e.waitState(id, func(d *baton.Delivery) bool {
		n, _ := e.svc.LastEvent(t.Context(), d.ID)
		return d.RunStatus == baton.StatusRunning && n > 150
	})
	e.open("/deliveries/" + id)
	if !eval[bool](e, `(l => l.scrollTop + l.clientHeight >= l.scrollHeight - 8 && l.scrollHeight > l.clientHeight)(document.querySelector("#live-log"))`) {
		t.Error("opened mid-run, the log does not show its end")
	}
	if bad := eval[[]string](e, `Array.from(document.querySelectorAll("#live-log .ev")).filter(ev => !/^\d\d:\d\d:\d\d$/.test((ev.querySelector("time") || {}).textContent || "")).map(ev => ev.textContent).slice(0, 3)`); len(bad) > 0 {
		t.Errorf("lines without a time: %q", bad)
	}
	groups := eval[[]string](e, `Array.from(document.querySelectorAll("#live-log details.tools > summary")).map(s => s.textContent)`)
	// The page opens on the newest lines, so its first group may have
	// lost calls to the cut; some group holds the agent's pair.
	if !slices.ContainsFunc(groups, func(g string) bool { return strings.Contains(g, "2 tool calls") }) {
		t.Errorf("tool calls are not folded in groups: %q", groups)
	}
	if n := eval[int](e, `document.querySelectorAll("#live-log > .ev.tool").length`); n != 0 {
		t.Errorf("%d tool calls outside a group", n)
	}
	if role := eval[string](e, `document.querySelector("#live-log").getAttribute("role")`); role != "log" {
		t.Errorf("the log's role is %q", role)
	}
	txt := eval[string](e, `document.querySelector("#live-log").textContent`)
	if !strings.Contains(txt, "Plan started.") || strings.Contains(txt, "forward by") || strings.Contains(txt, "worker:") {
		t.Errorf("phase events are not in plain words:\n%s", baton.Truncate(txt, 2000, "…"))
	}
	e.screenshot("log-mid-run")
	// The run goes on: its last lines arrive at the end, which the page
	// keeps in view.
	e.waitJS("the plan's last lines", `document.querySelector("#live-log").textContent.includes("2. Keep <em>markup</em> as text.")`, 20*time.Second)
	e.waitJS("the log to follow its end", `(l => l.scrollTop + l.clientHeight >= l.scrollHeight - 8)(document.querySelector("#live-log"))`, 5*time.Second)
	if !strings.Contains(eval[string](e, `document.querySelector("#live-log").textContent`), "warning: a diagnostic on stderr") {
		t.Error("the agent's stderr is not in the log")
	}
	e.waitJS("the run's stderr in its row", `(document.querySelector("#detail details.stderr pre") || {}).textContent.includes("warning: a diagnostic on stderr")`, 20*time.Second)
	e.click("#log-expand")
	if h := eval[int](e, `document.querySelector("#live-log").clientHeight`); h < 700 {
		t.Errorf("the expanded log is %dpx high in a 900px window", h)
	}
	if eval[string](e, `document.querySelector("#log-expand").getAttribute("aria-expanded")`) != "true" {
		t.Error("the expand button does not say it is expanded")
	}
	e.screenshot("log-expanded")
}

// Item 4: the pages of a browser share one stream. Six open delivery
// tabs (HTTP/1.1 allows six connections per server) must not hold up a
// seventh page, and a closed delivery's page watches nothing.
func TestDashboardSharesOneStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for i := range 6 {
		ids = append(ids, e.mk(fmt.Sprintf("Tab %d", i+1)))
	}
	closed := e.mk("Closed before it was opened")
	later := e.mk("Opened after the closed one")
	for _, id := range append(ids, closed, later) {
		e.waitState(id, planWaits)
	}
	if _, err := e.svc.Decide(t.Context(), closed, delivery.ActClose, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		tb := e.tab()
		tb.open("/deliveries/" + id)
		tb.waitJS("the tab's stream", `document.querySelector("#conn").hidden`, 10*time.Second)
	}
	// Six streams held open would take every connection: the seventh page
	// would then never load, and open fails at its deadline. How long it
	// takes is the machine's business, not asserted.
	seventh := e.tab()
	seventh.open("/?state=all")
	seventh.open("/deliveries/" + closed)
	seventh.waitJS("the page's scripts", `document.readyState === "complete"`, 5*time.Second)
	// Then an open delivery's page in the same tab: the stream's next
	// watch includes it, and any watch the closed page asked for would
	// have come before it.
	seventh.open("/deliveries/" + later)
	var open, most int
	var watches []string
	if !testenv.Until(10*time.Second, nil, func() bool {
		open, most, watches = e.live.stats()
		return len(watches) > 0 && strings.Contains(watches[len(watches)-1], later)
	}) {
		t.Fatalf("the shared stream never watched the later delivery: %q", watches)
	}
	if most > 2 || open > 1 {
		t.Errorf("the browser held %d streams at once (%d now), want one shared stream", most, open)
	}
	last := watches[len(watches)-1]
	for _, id := range ids {
		if !strings.Contains(last, id) {
			t.Errorf("the shared stream watches %q, not %s", last, id)
		}
	}
	for _, w := range watches {
		if strings.Contains(w, closed) {
			t.Errorf("a stream watched the closed delivery: %q", w)
		}
	}
	t.Logf("%d streams were opened, at most %d at once", len(watches), most)
}

// Item 5: the log and the buttons say the same words; a cancel shows as
// canceled; Retry can switch the agent; Cancel and Close confirm and
// ask why.
func TestDashboardWordsAndButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	id := e.mk("Slow plan")
	e.waitState(id, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
	e.open("/deliveries/" + id)
	if eval[bool](e, `document.querySelector("#confirm-cancel").open`) {
		t.Fatal("the cancel form is open before anyone asked")
	}
	e.click("#confirm-cancel > summary")
	if !eval[bool](e, `document.querySelector("#reason-cancel").required`) {
		t.Error("cancel does not ask why")
	}
	e.run("say why", chromedp.SendKeys(chromedp.CSS("#reason-cancel"), "wrong approach"))
	e.screenshot("cancel-confirm")
	e.submit(`#state button[data-action="cancel"]`)
	if b := e.badge(); b != "plan/canceled" {
		t.Errorf("after a cancel the badge says %q", b)
	}
	if txt := eval[string](e, `document.querySelector("#live-log").textContent`); !strings.Contains(txt, "alice canceled plan: wrong approach.") {
		t.Errorf("the log does not say who canceled and why:\n%s", txt)
	}
	if row := eval[string](e, `document.querySelector("#detail .timeline tbody tr").textContent`); !strings.Contains(row, "canceled") {
		t.Errorf("the timeline's plan row says %q", row)
	}

	// Retry, with another agent.
	if opts := eval[[]string](e, `Array.from(document.querySelectorAll("#retry-agent option")).map(o => o.value)`); !slices.Equal(opts, append([]string{""}, harness.AgentNames()...)) {
		t.Errorf("retry offers agents %q, want the current one and every headless agent: %q", opts, harness.AgentNames())
	}
	e.run("pick codex", chromedp.SetValue(chromedp.CSS("#retry-agent"), "codex"))
	e.submit(`#state button[data-action="retry"]`)
	e.waitJS("the retried plan", `document.querySelector("#live-log").textContent.includes("agent now codex")`, 10*time.Second)
	if ag := eval[string](e, `document.querySelector("#detail dl.kv").textContent`); !strings.Contains(ag, "codex") {
		t.Errorf("after a retry with codex the details say %q", ag)
	}

	// Close asks why too, on the state the page shows: the retried plan
	// has failed (codex is not installed here).
	e.waitState(id, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed && d.Attempt > 1 })
	e.open("/deliveries/" + id)
	e.waitJS("a decision to make", `document.querySelector("#confirm-close")`, 30*time.Second)
	e.click("#confirm-close > summary")
	e.run("say why", chromedp.SendKeys(chromedp.CSS("#reason-close"), "not needed"))
	e.submit(`#state button[data-action="close"]`)
	// The retried plan may be running: the close then waits for its agent
	// to stop, and the page shows it when it has.
	e.waitJS("the badge to say closed", `(document.querySelector("#state .badge") || {}).textContent === "closed"`, 30*time.Second)
	txt := e.text()
	if !strings.Contains(txt, "Closed by alice: not needed.") {
		t.Errorf("the log does not say who closed it and why:\n%s", txt)
	}
	for _, bad := range []string{"Retryd", "Canceld", "Rejectd"} {
		if strings.Contains(txt, bad) {
			t.Errorf("the page says %q", bad)
		}
	}
}

// Item 7: signals outside the page: the count of deliveries waiting for
// a person in the nav and the tab's title, live; a favicon; opt-in
// notifications for a tab in the background; a notice while the server
// is gone.
func TestDashboardSignals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A notification API that records, and a page that can be put in the
	// background.
	_, err := chromedp.Run(e.browser, func(ctx context.Context, tg *chromedp.Target) (page.AddScriptToEvaluateOnNewDocumentResult, error) {
		return cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__notes = [];
			window.Notification = function (title) { window.__notes.push(title); this.addEventListener = function () {}; };
			Notification.permission = "granted";
			Notification.requestPermission = function () { return Promise.resolve("granted"); };
			Object.defineProperty(document, "hidden", { get: function () { return window.__hidden === true; } });`})
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(e.url + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("/favicon.ico = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	e.waitState(e.mk("First"), planWaits)
	e.open("/")
	icon := eval[string](e, `document.querySelector("link[rel=icon]").href`)
	if r, err := http.Get(icon); err != nil || r.StatusCode != 200 {
		t.Errorf("the page's icon %s: %v", icon, err)
	}
	if n := eval[string](e, `document.querySelector("#waiting-n").textContent`); n != "1" {
		t.Errorf("the nav says %q waiting, want 1", n)
	}
	if title := eval[string](e, `document.title`); !strings.HasPrefix(title, "(1) ") {
		t.Errorf("the title is %q", title)
	}
	eval[bool](e, `window.__stay = 1; window.__hidden = true; true`)
	e.waitState(e.mk("Second"), planWaits)
	e.waitJS("the count to follow", `document.querySelector("#waiting-n").textContent === "2" && document.title.startsWith("(2) ")`, 10*time.Second)
	e.waitJS("a notification", `window.__notes.length === 1`, 5*time.Second)
	if note := eval[string](e, `window.__notes[0]`); note != "2 deliveries wait for you" {
		t.Errorf("the notification says %q", note)
	}
	// The list refreshes on the same pulse, by a fetch of its own that
	// may still be on its way when the count and notification are in.
	e.waitJS("the list to follow", `document.querySelector("#list").textContent.includes("Second")`, 10*time.Second)
	if !eval[bool](e, `window.__stay === 1`) {
		t.Error("the page reloaded to show the new delivery")
	}

	e.live.setDown(true)
	e.waitJS("the reconnecting notice", `!document.querySelector("#conn").hidden`, 10*time.Second)
	e.screenshot("reconnecting")
	e.live.setDown(false)
	e.waitJS("the notice to go", `document.querySelector("#conn").hidden`, 15*time.Second)
}

// Item 8: scale. The board shows counts and the newest deliveries of
// each phase; the list pages with a total; times say when in UTC.
func TestDashboardScale(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorker)
	for i := range 130 {
		id := e.mk(fmt.Sprintf("Delivery %03d", i))
		if _, err := e.svc.Decide(t.Context(), id, delivery.ActClose, "alice", "made in bulk"); err != nil {
			t.Fatal(err)
		}
	}
	e.mk("Still open")
	e.open("/board")
	if h := eval[int](e, `document.documentElement.scrollHeight`); h > 3000 {
		t.Errorf("the board is %dpx high", h)
	}
	col := eval[string](e, `document.querySelector("#col-close").textContent`)
	if !strings.Contains(col, "130") {
		t.Errorf("the close column's heading says %q, want its count", col)
	}
	if n := eval[int](e, `document.querySelector("#col-close").closest("section").querySelectorAll(".card").length`); n != 20 {
		t.Errorf("the close column shows %d cards, want the newest 20", n)
	}
	e.screenshot("board-130")

	e.open("/?state=all")
	count := func() string { return eval[string](e, `document.querySelector("#list-count").textContent`) }
	if c := count(); !strings.HasPrefix(c, "1–50 of 131") {
		t.Errorf("the first page says %q", c)
	}
	e.click(`.pager a[href*="cursor="]`)
	e.waitJS("the older page", `document.querySelector("#list-count").textContent.startsWith("51–100 of 131")`, 10*time.Second)
	e.click(`.pager a[href*="after="]`)
	e.waitJS("the newer page", `document.querySelector("#list-count").textContent.startsWith("1–50 of 131")`, 10*time.Second)
	times := eval[[]string](e, `Array.from(document.querySelectorAll("#list time")).map(t => t.getAttribute("datetime") + "|" + t.title)`)
	if len(times) != 50 {
		t.Fatalf("%d times in the list, want one per row", len(times))
	}
	for _, tm := range times {
		at, title, _ := strings.Cut(tm, "|")
		if _, err := time.Parse(time.RFC3339, at); err != nil || !strings.HasSuffix(title, " UTC") {
			t.Errorf("a relative time carries %q, want its instant and a tooltip in UTC", tm)
			break
		}
	}
}

// Item 9 and 13: a form that fails keeps what was typed and says why
// beside it, in red; a server without its agent says so instead of
// creating a delivery that fails; a failed sync is an error, not a
// success banner.
func TestDashboardFormsKeepInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	e.open("/")
	e.run("fill a bad create", chromedp.SendKeys(chromedp.CSS(`input[name=issue_url]`), "https://example.com/octo/app/issues/3"),
		chromedp.SendKeys(chromedp.CSS(`input[name=summary]`), "Keep me"))
	e.submit(`form[action="/deliveries"] button[type=submit]`)
	if msg := eval[string](e, `(document.querySelector("#create-error") || {}).textContent || ""`); msg == "" {
		t.Fatalf("no error beside the form:\n%s", e.text())
	}
	if got := eval[[]string](e, `[document.querySelector("input[name=issue_url]").value, document.querySelector("input[name=summary]").value]`); got[0] != "https://example.com/octo/app/issues/3" || got[1] != "Keep me" {
		t.Errorf("the form lost what was typed: %q", got)
	}
	if c := eval[string](e, `getComputedStyle(document.querySelector("#create-error")).color`); c != "rgb(180, 35, 24)" {
		t.Errorf("the error is %s, not red", c)
	}
	e.screenshot("create-error")

	e.web.Agent.Installed, e.web.Agent.Fix = false, "Install it, or restart with another --agent."
	e.open("/")
	e.run("fill a create", chromedp.SendKeys(chromedp.CSS(`input[name=summary]`), "Needs an agent"))
	start := time.Now()
	e.submit(`form[action="/deliveries"] button[type=submit]`)
	if msg := eval[string](e, `(document.querySelector("#create-error") || {}).textContent || ""`); !strings.Contains(msg, "is not installed") || !strings.Contains(msg, "restart with another --agent") {
		t.Errorf("with no agent installed, create says %q", msg)
	}
	if ds, _ := e.svc.List(t.Context(), baton.DeliveryFilter{Search: "Needs an agent"}); len(ds) != 0 {
		t.Error("a delivery was created with no agent to run it")
	}
	t.Logf("create without an agent answered in %s", time.Since(start))
	e.web.Agent.Installed = true

	e.open("/sources")
	e.run("fill a bad source", chromedp.SendKeys(chromedp.CSS(`form[action="/sources"] input[name=repo]`), "not a repository"))
	e.submit(`form[action="/sources"] button[type=submit]`)
	if msg := eval[string](e, `(document.querySelector("#add-error") || {}).textContent || ""`); msg == "" {
		t.Errorf("no error beside the source form:\n%s", e.text())
	}
	if v := eval[string](e, `document.querySelector("form[action='/sources'] input[name=repo]").value`); v != "not a repository" {
		t.Errorf("the source form holds %q", v)
	}
	e.open("/sources?flash=source-failed")
	if !eval[bool](e, `!!document.querySelector(".banner.err[role=alert]")`) {
		t.Error("a failed sync is not shown as an error")
	}
}
