package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// The tests of issue 37: a reviewer approves exactly what lands.

// layouts are the widths and themes every page-state is looked at in.
var layouts = []struct {
	name   string
	w, h   int64
	scheme string
}{{"desktop", 1440, 900, "light"}, {"desktop-dark", 1440, 900, "dark"}, {"phone", 390, 844, "light"}, {"phone-dark", 390, 844, "dark"}}

// shots keeps a screenshot of the page open now in every layout, then
// goes back to the desktop in light.
func (e *env) shots(name string) {
	e.t.Helper()
	for _, l := range layouts {
		e.run("layout "+l.name, chromedp.EmulateViewport(l.w, l.h), emulateScheme(l.scheme))
		e.screenshot(name + "-" + l.name)
	}
	e.run("layout desktop", chromedp.EmulateViewport(1440, 900), emulateScheme("light"))
}

// inLayouts runs check on the page open now in every layout.
func (e *env) inLayouts(check func(layout string)) {
	e.t.Helper()
	for _, l := range layouts {
		e.run("layout "+l.name, chromedp.EmulateViewport(l.w, l.h), emulateScheme(l.scheme))
		check(l.name)
	}
	e.run("layout desktop", chromedp.EmulateViewport(1440, 900), emulateScheme("light"))
}

// Item 1: the change shown at the deploy checkpoint is the change that
// lands. The plan, which the local merge leaves out, is labelled "not
// merged" and counted nowhere; after the merge, the merge commit has
// the files and line counts the checkpoint showed.
func TestDashboardDiffIsWhatLands(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	id := e.mk("Land what is shown")
	e.waitState(id, planWaits)
	e.open("/deliveries/" + id)
	if got := eval[string](e, `(document.querySelector("#plan-not-merged") || {}).textContent || ""`); got != "not merged" {
		t.Errorf("the plan at its checkpoint is labelled %q, want \"not merged\"", got)
	}
	e.shots("plan-not-merged")
	e.submit(`#state button[data-action="approve"]`)
	e.waitState(id, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	e.open("/deliveries/" + id)
	files := eval[[]string](e, `Array.from(document.querySelectorAll("#changes details.file > summary code")).map(c => c.textContent)`)
	count := eval[string](e, `(document.querySelector("#changes-count") || {}).textContent || ""`)
	apart := eval[string](e, `(document.querySelector("#not-merged") || {}).textContent || ""`)
	if strings.Join(files, " ") != "baton-"+id+".txt" || !strings.HasPrefix(count, "1 file changed, +1 −0") {
		t.Errorf("the deploy checkpoint shows %q (%q), want the one file that lands", files, count)
	}
	if st := eval[string](e, `(document.querySelector("#changes details.file > summary .muted") || {}).textContent || ""`); st != "added" {
		t.Errorf("the changed file's status reads %q, want a word (added), not git's letter", st)
	}
	if !strings.Contains(apart, "docs/plan.md") || !strings.Contains(apart, "Not merged") {
		t.Errorf("the plan is not said apart as not merged: %q", apart)
	}
	e.inLayouts(func(layout string) {
		if w := eval[int](e, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			t.Errorf("%s: the deploy checkpoint scrolls %d px sideways", layout, w)
		}
	})
	e.shots("deploy-checkpoint-lands")

	e.submit(`#state button[data-action="run"]`)
	e.waitState(id, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusSucceeded || d.Phase == baton.PhaseObserve || d.Phase == baton.PhaseClose
	})
	merged := gittest.Git(t, e.repo, "diff", "--numstat", "main~1", "main")
	var lines []string
	for _, f := range files {
		lines = append(lines, fmt.Sprintf("1\t0\t%s", f))
	}
	if merged != strings.Join(lines, "\n") {
		t.Errorf("the merge commit changed\n%s\nwant what the checkpoint showed:\n%s", merged, strings.Join(lines, "\n"))
	}
}

// Item 2: a decision names the state the page showed. A page left open
// at the plan checkpoint while someone else approves (its live updates
// cut off, as on a flaky network) rejects: the reject is refused, the
// page says what the delivery was and what it is now, shows its
// current state, and nothing is posted or changed.
func TestDashboardDecisionOnAMovedState(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	id := e.mk("Decide on what you saw")
	e.waitState(id, planWaits)
	e.open("/deliveries/" + id)
	state := eval[string](e, `(document.querySelector('#actions input[name="state"]') || {}).value || ""`)
	if !strings.HasPrefix(state, "plan/succeeded/1@") {
		t.Errorf("the page's decisions name the state %q, want plan/succeeded/1 with the plan's commit", state)
	}
	e.live.setDown(true)
	if _, err := e.svc.Decide(e.t.Context(), id, delivery.ActApprove, "bob", ""); err != nil {
		t.Fatal(err)
	}
	e.click("#confirm-reject > summary")
	e.run("give a reason", chromedp.SendKeys(chromedp.CSS(`#reason-reject`), "The plan misses the migration"))
	e.submit(`#confirm-reject button[data-action="reject"]`)
	msg := eval[string](e, `(document.querySelector("#action-error") || {}).textContent || ""`)
	if !strings.Contains(msg, "moved since this decision was made: it was plan/succeeded (attempt 1), it is now ") || strings.Contains(msg, "it is now plan/") {
		t.Errorf("the refused reject says %q, want what the delivery was and what it is now", msg)
	}
	if b := e.badge(); strings.HasPrefix(b, "plan") {
		t.Errorf("after the refusal the page shows the state %q, want the current one", b)
	}
	if got := eval[string](e, `document.querySelector("#reason-reject") ? document.querySelector("#reason-reject").value : "no form"`); got != "The plan misses the migration" && got != "no form" {
		t.Errorf("the reason typed was lost: %q", got)
	}
	e.shots("decision-on-a-moved-state")
	e.live.setDown(false)
	notes, err := e.svc.Store().ReviewNotes(e.t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		if n.Author == "alice" {
			t.Errorf("the refused reject posted a review note: %+v", n)
		}
	}
	log, _ := e.svc.PhaseLog(e.t.Context(), id)
	for _, entry := range log {
		if entry.Decision == delivery.DecisionRejected {
			t.Errorf("the phase log records a reject: %+v", entry)
		}
	}
}

// Item 3: one word and one colour per outcome, on every page. A
// person's cancel reads "canceled" (muted, not red) on the list and the
// board as on its own page, a person's close "closed"; in the live log
// a failed phase is red and a succeeded one green.
func TestDashboardOneWordPerOutcome(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	canceled := e.mk("Slow plan")
	closed := e.mk("Add a greeting file")
	failed := e.mk("Break once, then work")
	e.waitState(canceled, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
	if _, err := e.svc.Decide(e.t.Context(), canceled, delivery.ActCancel, "alice", "wrong approach"); err != nil {
		t.Fatal(err)
	}
	e.waitState(closed, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), closed, delivery.ActClose, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	e.waitState(failed, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })

	badge := func(id string) (text, class, color string) {
		v := eval[[]string](e, `(() => { const a = Array.from(document.querySelectorAll('a[href="/deliveries/`+id+`"]'))
			.map(a => a.closest("tr, .card")).find(Boolean); const b = a && a.querySelector(".badge");
			return b ? [b.textContent, b.className, getComputedStyle(b).color] : ["", "", ""] })()`)
		return v[0], v[1], v[2]
	}
	for _, page := range []string{"/?state=all", "/board"} {
		e.open(page)
		red := eval[string](e, `(() => { const b = document.createElement("span"); b.className = "badge s-failed"; document.body.append(b); const c = getComputedStyle(b).color; b.remove(); return c })()`)
		for _, c := range []struct{ id, word, class string }{{canceled, "plan/canceled", "s-canceled"}, {closed, "closed", "s-closed"}, {failed, "plan/failed", "s-failed"}} {
			text, class, color := badge(c.id)
			if page == "/board" && c.id == closed {
				continue // the board shows deliveries in flight
			}
			if text != c.word || !strings.Contains(class, c.class) {
				t.Errorf("%s: delivery %s reads %q (%s), want %q (%s)", page, c.id, text, class, c.word, c.class)
			}
			if (color == red) != (c.class == "s-failed") {
				t.Errorf("%s: %q is %s; red is %s, for failures only", page, text, color, red)
			}
		}
		e.shots("outcomes" + strings.NewReplacer("/", "-", "?", "-", "=", "-").Replace(page))
	}

	e.open("/deliveries/" + failed)
	colors := eval[map[string]string](e, `(() => { const out = {}; for (const ev of document.querySelectorAll("#live-log .ev.phase")) {
		const t = ev.querySelector(".t").textContent; if (t.startsWith("Plan failed") || t.startsWith("Plan started")) out[t.split(/[:.]/)[0]] = getComputedStyle(ev.querySelector(".t")).color } return out })()`)
	if colors["Plan failed"] == "" || colors["Plan started"] == "" || colors["Plan failed"] == colors["Plan started"] {
		t.Errorf("in the live log, Plan failed and Plan started are coloured %q: want a failure apart", colors)
	}
	e.shots("outcome-failed-log")
}

// Item 4: the nav's "waiting for you" count opens the list of exactly
// the deliveries that wait for a person, the longest waiting first.
func TestDashboardWaitingForYou(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	first := e.mk("Add a greeting file")
	e.waitState(first, planWaits)
	second := e.mk("Break once, then work")
	e.waitState(second, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })
	done := e.mk("Something nobody wants")
	e.waitState(done, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), done, delivery.ActClose, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	e.open("/board")
	e.waitJS("the nav's count", `document.querySelector("#waiting-n").textContent === "2"`, 10*time.Second)
	e.submit(`#nav-waiting`)
	if got := eval[string](e, `location.search`); got != "?state=waiting" {
		t.Errorf("the nav's count opened %q, want the waiting list", got)
	}
	ids := eval[[]string](e, `Array.from(document.querySelectorAll("#list tbody a")).map(a => a.getAttribute("href"))`)
	if strings.Join(ids, " ") != "/deliveries/"+first+" /deliveries/"+second {
		t.Errorf("the waiting list shows %q, want the plan to approve, then the failure", ids)
	}
	if c := eval[string](e, `document.querySelector("#list-count").textContent`); !strings.Contains(c, "the longest waiting first") {
		t.Errorf("the waiting list says %q", c)
	}
	e.shots("waiting-for-you")
}

// Item 5: the decision area reads top-down: what is decided (the plan,
// the change), then the buttons, whose labels say what happens; the
// live log after them. The keyboard meets them in the same order.
func TestDashboardDecisionAreaReadsTopDown(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	id := e.mk("Add a greeting file")
	e.waitState(id, planWaits)
	e.open("/deliveries/" + id)
	order := func(what string, sels ...string) {
		t.Helper()
		for i := 1; i < len(sels); i++ {
			if !eval[bool](e, `(() => { const a = document.querySelector('`+sels[i-1]+`'), b = document.querySelector('`+sels[i]+`');
				return !!(a && b && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING)) })()`) {
				t.Errorf("%s: %s does not come before %s", what, sels[i-1], sels[i])
			}
		}
		// Sequential focus follows the document: no positive tabindex.
		if n := eval[int](e, `document.querySelectorAll('[tabindex]:not([tabindex="0"]):not([tabindex="-1"])').length`); n != 0 {
			t.Errorf("%s: %d elements reorder the keyboard's path", what, n)
		}
	}
	order("the plan checkpoint", "#plan summary", `#state button[data-action="approve"]`, "#live-log")
	if label := eval[string](e, `document.querySelector('#state button[data-action="approve"]').textContent`); label != "Approve the plan" {
		t.Errorf("the plan's approve button says %q", label)
	}
	e.inLayouts(func(layout string) {
		if top := eval[float64](e, `document.querySelector("#plan").getBoundingClientRect().top`); top > 300 {
			t.Errorf("%s: the plan starts %.0f px down", layout, top)
		}
	})
	e.shots("decision-area-plan")

	e.submit(`#state button[data-action="approve"]`)
	e.waitState(id, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	e.open("/deliveries/" + id)
	order("the deploy checkpoint", "#changes summary", `#state button[data-action="run"]`, "#live-log")
	if label := eval[string](e, `document.querySelector('#state button[data-action="run"]').textContent`); label != "Merge into main" {
		t.Errorf("the local deploy's button says %q, want \"Merge into main\"", label)
	}
	e.shots("decision-area-deploy")
	e.run("sign out", chromedp.Navigate(e.url+"/"), chromedp.WaitReady(chromedp.CSS("body")))
	e.submit(`form[action="/logout"] button`)
	e.open("/deliveries/" + id)
	if txt := e.text(); !strings.Contains(txt, "Possible now: Merge into main, ") || strings.Contains(txt, "Possible now: run") {
		t.Errorf("signed out, the page offers:\n%s", txt)
	}
}

// Item 9's small things: the retry's agent select has a name of its
// own, a successful run's stderr is not red (a failed one's is), and no
// sentence ends twice.
func TestDashboardSmallThings(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	failed := e.mk("Break once, then work")
	chatty := e.mk("Chatty plan")
	e.waitState(failed, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })
	e.waitState(chatty, planWaits)
	e.open("/deliveries/" + failed)
	if name := eval[string](e, `document.querySelector("#retry-agent").getAttribute("aria-label") || ""`); name != "Agent for the retry" {
		t.Errorf("the retry's agent select is named %q", name)
	}
	red := eval[string](e, `getComputedStyle(document.querySelector(".bad")).color`)
	if c := eval[string](e, `getComputedStyle(document.querySelector("details.stderr > summary")).color`); c != red {
		t.Errorf("a failed run's stderr is %s, want red (%s)", c, red)
	}
	e.open("/deliveries/" + chatty)
	if c := eval[string](e, `getComputedStyle(document.querySelector("details.stderr > summary")).color`); c == red {
		t.Errorf("a successful run's stderr is red (%s)", c)
	}
	for _, id := range []string{failed, chatty} {
		e.open("/deliveries/" + id)
		if txt := e.text(); strings.Contains(txt, "..\n") || strings.Contains(txt, "…\n") && strings.Contains(txt, "….") {
			t.Errorf("a sentence ends twice on %s:\n%s", id, txt)
		}
	}
	e.shots("small-things")
}

// Item 11: a reviewer comments on a line. At the deploy checkpoint the
// diff and the plan are numbered by line; selecting a line starts a note
// on it in the reject form, where more are typed by hand as
// path:line: text (all there is without JavaScript). The reject keeps
// them: its review note lists them, and each is a review ref the next
// implement's prompt reads.
func TestDashboardLineNotes(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	id := e.mk("Note a line")
	e.waitState(id, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), id, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.waitState(id, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	e.open("/deliveries/" + id)
	file := "baton-" + id + ".txt"
	if n := eval[int](e, `document.querySelectorAll('#changes details.file[data-path] pre.diff span[data-line]').length`); n != 1 {
		t.Errorf("the diff numbers %d lines, want its one added line", n)
	}
	e.click("#plan-box > summary")
	if n := eval[int](e, `document.querySelectorAll('#plan .doc span[data-line]').length`); n < 2 {
		t.Errorf("the plan numbers %d lines, want every line", n)
	}
	e.click(`#changes pre.diff span[data-line="1"]`)
	if got := eval[string](e, `document.querySelector("#notes-reject").value`); got != file+":1: " {
		t.Errorf("selecting the diff's line 1 starts the note %q, want %q", got, file+":1: ")
	}
	if open := eval[bool](e, `document.querySelector("#confirm-reject").open && document.activeElement.id === "notes-reject"`); !open {
		t.Error("selecting a line does not open the reject form at the notes")
	}
	e.run("type the notes", chromedp.SendKeys(chromedp.CSS(`#notes-reject`), "say hello first\n  and end with a full stop\ndocs/plan.md:2: name the file"),
		chromedp.SendKeys(chromedp.CSS(`#reason-reject`), "Greet as the style guide says"))
	e.inLayouts(func(layout string) {
		if w := eval[int](e, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			t.Errorf("%s: the page with the notes typed scrolls %d px sideways", layout, w)
		}
	})
	e.shots("line-notes-typed")
	e.submit(`#confirm-reject button[data-action="reject"]`)
	e.waitState(id, func(d *baton.Delivery) bool { return d.Phase == baton.PhaseImplement })
	d, err := e.svc.Current(e.t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	note := ""
	for _, r := range d.Refs {
		if r.Type == baton.RefReviewLine {
			lines = append(lines, r.Label)
		}
		if r.Type == "review_note" && strings.HasPrefix(r.Label, "rejected by") {
			note = r.URL
		}
	}
	if strings.Join(lines, " ") != file+":1 docs/plan.md:2" || note == "" {
		t.Fatalf("the reject's refs are %+v, want a note and one ref per line note", d.Refs)
	}
	if got := delivery.BuildPrompt(d); !strings.Contains(got, note+" (a note on "+file+":1)") {
		t.Errorf("the next implement's prompt:\n%s\nlacks the line note", got)
	}
	e.open("/deliveries/" + id)
	e.open(eval[string](e, `Array.from(document.querySelectorAll('#detail a[href*="/notes/"]')).pop().getAttribute("href")`))
	body := e.text()
	for _, want := range []string{"On lines", "- `" + file + ":1`: say hello first\n  and end with a full stop", "- `docs/plan.md:2`: name the file"} {
		if !strings.Contains(body, want) {
			t.Errorf("the review note page reads\n%s\nwant %q in it", body, want)
		}
	}
	e.shots("line-notes-kept")
}

// Item 11: how the team is doing. With one delivery merged and one
// closed, the insights page shows the figures, charts drawn on the
// server with a table behind each, in every layout without a sideways
// scroll; the nav leads there.
func TestDashboardInsights(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	merged, closed := e.mk("Merge me"), e.mk("Close me")
	e.waitState(closed, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), closed, delivery.ActClose, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	e.waitState(merged, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), merged, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.waitState(merged, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	if _, err := e.svc.Decide(e.t.Context(), merged, delivery.ActRun, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.waitState(merged, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusSucceeded || d.Phase == baton.PhaseObserve || d.Phase == baton.PhaseClose
	})
	e.open("/")
	e.click(`header nav a[href="/insights"]`)
	// The address changes when the navigation commits, before the new
	// page is parsed: wait for the page itself.
	e.waitJS("the insights page", `location.pathname === "/insights" && document.readyState === "complete"`, 10*time.Second)
	figures := eval[string](e, `document.querySelector("#figures").innerText`)
	for _, want := range []string{"Created\n2", "Merged\n1"} {
		if !strings.Contains(figures, want) {
			t.Errorf("the figures read %q, want %q in them", figures, want)
		}
	}
	if n := eval[int](e, `document.querySelectorAll("svg.bars rect.merged").length`); n != 31 {
		// The last 30 days: from this time 30 days ago to now, 31 dates.
		t.Errorf("the per-day chart has %d merged bars, want one a date of 31", n)
	}
	if got := eval[string](e, `Array.from(document.querySelectorAll("#outcomes-table tbody tr")).map(r => r.innerText.replace(/\s+/g, " ").trim()).join("; ")`); !strings.Contains(got, "merged 1 50%") || !strings.Contains(got, "closed 1 50%") {
		t.Errorf("the outcomes table reads %q", got)
	}
	e.inLayouts(func(layout string) {
		if w := eval[int](e, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			t.Errorf("%s: the insights page scrolls %d px sideways", layout, w)
		}
	})
	e.shots("insights")
	e.open("/insights?days=0")
	if msg := eval[string](e, `(document.querySelector(".banner.err") || {}).textContent || ""`); !strings.Contains(msg, "days=0") {
		t.Errorf("a window that is not one says %q, want why", msg)
	}
}

// Item 9: earlier log lines page in. "Show earlier lines" fetches 300
// more into the log, above the lines shown, without leaving the page
// and without moving what the person reads; without JavaScript it opens
// the page with them.
func TestDashboardEarlierLogLines(t *testing.T) {
	e := newEnv(t, noWorker)
	e.signIn()
	id := e.mk("Talk a lot")
	evs := make([]baton.DeliveryEvent, 700)
	for i := range evs {
		evs[i] = baton.DeliveryEvent{Kind: baton.EventText, Phase: baton.PhasePlan, Text: fmt.Sprintf("line %d of the plan", i+1), At: time.Now()}
	}
	if err := e.svc.Store().AppendEvents(e.t.Context(), id, evs); err != nil {
		t.Fatal(err)
	}
	count := `document.querySelectorAll("#live-log .ev.text").length`
	e.open("/deliveries/" + id)
	if n := eval[int](e, count); n != 300 {
		t.Fatalf("the log shows %d lines, want the newest 300", n)
	}
	eval[bool](e, `(document.querySelector("#live-log").scrollTop = 0, true)`)
	top := eval[string](e, `document.querySelector("#live-log .ev.text").textContent`)
	e.click("#log-earlier a")
	e.waitJS("the earlier lines", count+` === 600`, 10*time.Second)
	if p := eval[string](e, `location.pathname + location.search`); p != "/deliveries/"+id {
		t.Errorf("showing earlier lines opened %s, want them fetched into the page", p)
	}
	// The line that was at the top is still in view, below the new ones.
	if y := eval[float64](e, `(() => { const log = document.querySelector("#live-log"); const el = Array.from(log.querySelectorAll(".ev.text")).find(d => d.textContent === `+"`"+top+"`"+`); return el.getBoundingClientRect().top - log.getBoundingClientRect().top; })()`); y < 0 || y > 60 {
		t.Errorf("the line read before (%q) moved to %v px from the log's top, want it where it was", top, y)
	}
	if f := eval[string](e, `document.activeElement ? document.activeElement.textContent : ""`); f != "Show earlier lines" {
		t.Errorf("the focus is on %q, want the next Show earlier lines", f)
	}
	e.shots("earlier-lines-in-place")

	e.run("turn JavaScript off", scripts(false))
	e.open("/deliveries/" + id)
	e.click("#log-earlier a")
	e.waitJS("the page with earlier lines", `location.search.includes("before=") && document.readyState === "complete"`, 10*time.Second)
	if n := eval[int](e, count); n != 600 {
		t.Errorf("without JavaScript the link opens a page of %d lines, want 600", n)
	}
	e.run("turn JavaScript on", scripts(true))
}

// scripts turns the page's JavaScript on or off (the DevTools protocol's
// own evaluation still runs).
func scripts(on bool) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return chromedp.Void{}, err
	}
}

// Item 9's layout: a failed delivery's page, with its error, stderr and
// retry, does not scroll sideways on a phone; the diff's per-file folds
// stay as the person left them when a live update redraws the page.
func TestDashboardPhoneAndFolds(t *testing.T) {
	e := newEnv(t)
	e.signIn()
	failed, changed := e.mk("Break once, then work"), e.mk("Fold me")
	e.waitState(failed, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })
	e.open("/deliveries/" + failed)
	eval[bool](e, `(document.querySelectorAll("details.stderr").forEach(d => d.open = true), true)`)
	e.inLayouts(func(layout string) {
		if w := eval[int](e, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			t.Errorf("%s: the failed delivery's page scrolls %d px sideways: %s", layout, w, eval[string](e, `Array.from(document.querySelectorAll("body *")).filter(el => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 8).map(el => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().width)).join("; ")`))
		}
	})
	e.shots("failed-delivery")

	e.waitState(changed, planWaits)
	if _, err := e.svc.Decide(e.t.Context(), changed, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.waitState(changed, func(d *baton.Delivery) bool {
		return d.Phase == baton.PhaseDeploy && d.RunStatus == baton.StatusPending
	})
	e.open("/deliveries/" + changed)
	if open := eval[bool](e, `document.querySelector("#changes details.file").open`); !open {
		t.Fatal("the small file's fold is closed at first, want it open")
	}
	eval[bool](e, `(document.querySelector("#changes details.file").open = false, document.querySelector("#state").dataset.old = "1", true)`)
	if _, err := e.svc.Decide(e.t.Context(), changed, delivery.ActRun, "bob", ""); err != nil {
		t.Fatal(err)
	}
	e.waitJS("a live update", `!document.querySelector("#state").dataset.old`, 20*time.Second)
	if open := eval[bool](e, `(document.querySelector("#changes details.file") || {open: false}).open`); open {
		t.Error("a live update opened the fold the person closed")
	}
}
