package browser_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/testenv"
)

// A person watching a running plan tells the agent something from the
// box under the live log, with the keyboard alone, on a phone and on a
// desktop: the message shows in the log, and the agent's run is stopped
// and started again with it.
func TestDashboardSayBox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.signIn()
	for _, w := range []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"desktop", 1440, 900}} {
		id := e.mk("Slow plan, " + w.name)
		e.waitState(id, func(d *baton.Delivery) bool { return d.RunStatus == baton.StatusRunning })
		e.run("viewport "+w.name, chromedp.EmulateViewport(w.w, w.h))
		e.open("/deliveries/" + id)
		focused := func() string {
			return eval[string](e, `document.activeElement ? (document.activeElement.id || document.activeElement.tagName) : ""`)
		}
		for i := 0; i < 100 && focused() != "say-text"; i++ {
			e.run("tab", chromedp.KeyEvent(kb.Tab))
		}
		if f := focused(); f != "say-text" {
			t.Fatalf("%s: Tab never reaches the message box (focus on %q); page:\n%s", w.name, f, e.text())
		}
		msg := "Use tabs, not spaces (" + w.name + ")"
		e.run("type the message", chromedp.KeyEvent(msg))
		e.run("tab to Send", chromedp.KeyEvent(kb.Tab))
		if !eval[bool](e, `document.activeElement === document.querySelector("form.say button[type=submit]")`) {
			t.Fatalf("%s: Tab from the box goes to %q, not Send", w.name, focused())
		}
		if w.name == "phone" {
			if over := eval[int](e, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("the page with the message box scrolls sideways by %dpx at 390px", over)
			}
		}
		e.screenshot("say-" + w.name)
		eval[bool](e, `window.__before = 1; true`)
		e.run("press Enter on Send", chromedp.KeyEvent(kb.Enter))
		e.waitJS("the page after sending", `window.__before === undefined && document.readyState === "complete"`, 20*time.Second)
		if txt := e.text(); !strings.Contains(txt, "Message sent") {
			t.Errorf("%s: after sending, the page does not say so:\n%s", w.name, txt)
		}
		e.waitJS("the message in the live log", `document.querySelector("#live-log").textContent.includes("✉ alice says: `+msg+`")`, 20*time.Second)
		var given string
		if !testenv.Until(30*time.Second, nil, func() bool {
			ms, err := e.svc.Store().Messages(e.t.Context(), id, false)
			if err == nil && len(ms) == 1 {
				given = ms[0].Outcome
			}
			return strings.HasPrefix(given, "given mid-run")
		}) {
			t.Fatalf("%s: the message was not given to the running agent (outcome %q)", w.name, given)
		}
		// The worker is free for the next one.
		if _, err := e.svc.Decide(e.t.Context(), id, delivery.ActCancel, "alice", "done"); err != nil {
			t.Fatal(err)
		}
		e.waitState(id, func(d *baton.Delivery) bool { return d.RunStatus != baton.StatusRunning })
	}
}
