package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

// A delivery's set-up is a row of its own in the timeline, on a phone
// and on a desktop: before the phase it made ready, with its outcome,
// its exit, its time and its output (open when it failed, a click away
// when it ran well), and a skipped one in one line.
func TestDashboardSetupRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mk := func(summary string, setup ...string) string {
		d, _, err := e.svc.Create(e.t.Context(), delivery.Request{Repo: e.repo, Summary: summary, Actor: "alice",
			Settings: delivery.Settings{Setup: &setup}})
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	good := mk("Set up well", "echo installing left-pad", "echo installed")
	bad := mk("Set up badly", "echo fetching", "echo registry.example unreachable >&2; exit 7", "echo never")
	// The plan waits at its checkpoint; implement's set-up is skipped.
	e.waitState(good, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusSucceeded })
	if _, err := e.svc.Decide(t.Context(), good, delivery.ActApprove, "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.waitState(good, func(d *baton.Delivery) bool { return d.Phase.Index() > baton.PhaseImplement.Index() })
	e.waitState(bad, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusFailed })
	type row struct {
		Phase, Outcome, Worked, Note string
		Open                         bool
		Output                       string
	}
	rows := func() []row {
		return eval[[]row](e, `Array.from(document.querySelectorAll("table.timeline tr.setup")).map(tr => {
			const cell = l => tr.querySelector('td[data-label="' + l + '"]').innerText.trim();
			const d = tr.querySelector("details.setup-output");
			return {Phase: cell("Phase"), Outcome: cell("Outcome"), Worked: cell("Worked"), Note: cell("Note"),
				Open: !!(d && d.open), Output: d ? d.querySelector("pre").textContent : ""};
		})`)
	}
	for _, w := range []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"desktop", 1440, 900}} {
		e.run("viewport "+w.name, chromedp.EmulateViewport(w.w, w.h))

		e.open("/deliveries/" + bad)
		got := rows()
		if len(got) != 1 {
			t.Fatalf("%s: %d set-up rows for a failed set-up; page:\n%s", w.name, len(got), e.text())
		}
		r := got[0]
		if !strings.Contains(r.Phase, "set-up") || !strings.Contains(r.Phase, "for plan") || !strings.Contains(r.Outcome, "failed") ||
			!strings.Contains(r.Outcome, "exit 7") || !strings.HasSuffix(r.Worked, "s") || !r.Open ||
			!strings.Contains(r.Output, "registry.example unreachable") || strings.Contains(r.Output, "never") {
			t.Errorf("%s: failed set-up row = %+v", w.name, r)
		}
		if first := eval[string](e, `document.querySelector("table.timeline tbody tr").className`); first != "setup" {
			t.Errorf("%s: the set-up row is not the first, before the plan it stopped (first row %q)", w.name, first)
		}
		if w.name == "phone" {
			if over := eval[int](e, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("the page with a set-up's output scrolls sideways by %dpx at 390px", over)
			}
		}
		e.screenshot("setup-failed-" + w.name)

		e.open("/deliveries/" + good)
		got = rows()
		if len(got) < 2 {
			t.Fatalf("%s: set-up rows %+v; want the plan's and implement's (skipped); page:\n%s", w.name, got, e.text())
		}
		if r := got[0]; !strings.Contains(r.Outcome, "succeeded") || !strings.Contains(r.Outcome, "exit 0") || r.Open ||
			!strings.Contains(r.Note, "set-up ran in") || !strings.Contains(r.Output, "installing left-pad") {
			t.Errorf("%s: set-up row = %+v", w.name, r)
		}
		e.click("table.timeline tr.setup details.setup-output summary")
		if !eval[bool](e, `document.querySelector("table.timeline tr.setup details.setup-output").open`) {
			t.Errorf("%s: a click does not open the set-up's output", w.name)
		}
		if r := got[1]; !strings.Contains(r.Phase, "for implement") || !strings.Contains(r.Outcome, "skipped") || strings.Contains(r.Outcome, "exit") ||
			!strings.Contains(r.Note, "unchanged since it last ran") || strings.Count(r.Note, "\n") > 0 {
			t.Errorf("%s: skipped set-up row = %+v", w.name, r)
		}
	}
}
