package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton"
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
