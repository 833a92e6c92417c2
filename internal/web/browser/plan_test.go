package browser_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/harnesstest"
)

// richPlan is a plan as an agent writes one, and as a hostile one could:
// a table, nested lists, a fence holding a script and a long line, raw
// HTML that would run or fetch, a javascript: link and an image.
var richPlan = strings.Join([]string{
	"# Plan: greet in two languages",
	"",
	"The change adds **two** files",
	"and keeps the *style guide*;",
	"the greeting stays `hello`, nothing more.",
	"",
	"## Files",
	"",
	"| File | Change | Lines |",
	"|:-----|:------:|------:|",
	"| `a.go` | new: the greeting | +12 |",
	"| `docs/greet.md` | the words, in English and French | +4 |",
	"",
	"1. Write `a.go`.",
	"2. Test it:",
	"   - in `a_test.go`",
	"   - with [the Go docs](https://go.dev/doc/)",
	"",
	`<script>window.__planRan = 1</script>`,
	`<img src="https://evil.example/pixel.png">`,
	"",
	"```sh",
	`echo "<script>alert(1)</script> and a long line: ` + strings.Repeat("word-", 60) + `"`,
	"```",
	"",
	"[click me](javascript:window.__planRan=2) ![pixel](https://evil.example/p.png) https://example.com/" + strings.Repeat("a", 150),
	"",
	"> Quoted: keep the 429 body as JSON.",
}, "\n")

// planLine is the 1-based line of richPlan that starts with prefix.
func planLine(t *testing.T, prefix string) int {
	t.Helper()
	for i, l := range strings.Split(richPlan, "\n") {
		if strings.HasPrefix(l, prefix) {
			return i + 1
		}
	}
	t.Fatalf("the plan has no line starting %q", prefix)
	return 0
}

// Item 8's "plan rendered as safe markdown": at the plan checkpoint the
// plan reads as a document (a table as a table, code in its own box that
// scrolls, not the page), nothing the plan wrote as HTML runs, loads or
// links anywhere unsafe, and selecting a rendered row or list item
// starts a note on the plan line it came from; without JavaScript the
// numbered source is there to type notes from. axe-core finds nothing
// serious or critical, in every layout.
func TestDashboardPlanRendered(t *testing.T) {
	e := newEnv(t)
	axePath := harnesstest.NPMBin(t, "axe-core", axeVersion, "axe-core/axe.min.js")
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatal(err)
	}
	e.signIn()
	// The agent prints the plan: printf reads its \n, and the plan has no ' or %.
	agent := "command:printf '" + strings.ReplaceAll(richPlan, "\n", `\n`) + "'"
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Greet in two languages", Actor: "alice", Settings: delivery.Settings{Agent: &agent}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(d.ID, planWaits)
	e.open("/deliveries/" + d.ID)

	if got := eval[string](e, `Array.from(document.querySelectorAll("#plan-doc table th")).map(th => th.textContent + ":" + getComputedStyle(th).display).join(" ")`); got != "File:table-cell Change:table-cell Lines:table-cell" {
		t.Errorf("the plan's table heads read %q, want three table cells", got)
	}
	if got := eval[string](e, `Array.from(document.querySelectorAll("#plan-doc h3, #plan-doc h4, #plan-doc strong, #plan-doc li > code")).map(el => el.tagName + ":" + el.textContent).join(" | ")`); got != "H3:Plan: greet in two languages | STRONG:two | H4:Files | CODE:a.go | CODE:a_test.go" {
		t.Errorf("the plan's headings and emphasis read %q", got)
	}
	if got := eval[string](e, `Array.from(document.querySelectorAll("#plan script, #plan img, #plan iframe, #plan [onclick], #plan [onerror], #plan [style]")).map(el => el.outerHTML).join(" ") + (window.__planRan || "")`); got != "" {
		t.Errorf("the plan's own HTML reached the page: %s", got)
	}
	if got := eval[string](e, `Array.from(document.querySelectorAll("#plan-doc a")).map(a => a.getAttribute("href")).join(" ")`); got != "https://go.dev/doc/ https://evil.example/p.png https://example.com/"+strings.Repeat("a", 150) {
		t.Errorf("the plan's links go to %q: want the docs, the image's address and the bare link, and no javascript:", got)
	}
	fence := fmt.Sprintf(`document.querySelector("#plan-doc pre[data-line='%d']")`, planLine(t, "```sh"))
	if got := eval[string](e, `(`+fence+` || {}).textContent`); !strings.Contains(got, `echo "<script>alert(1)</script> and a long line`) {
		t.Errorf("the fence reads %q, want its script as text", got)
	}
	e.inLayouts(func(layout string) {
		if w := eval[int](e, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
			t.Errorf("%s: the page with the plan scrolls %d px sideways: %s", layout, w, eval[string](e, `Array.from(document.querySelectorAll("#plan *")).filter(el => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 6).map(el => el.tagName + "." + el.className + " " + Math.round(el.getBoundingClientRect().width)).join("; ")`))
		}
		if !eval[bool](e, `(p => p.scrollWidth > p.clientWidth && getComputedStyle(p).overflowX === "auto")(`+fence+`)`) {
			t.Errorf("%s: the fence's long line does not scroll inside its box", layout)
		}
		for _, v := range e.axe(string(axe)) {
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Errorf("%s: axe-core: %s %s: %v — %s", layout, v.Impact, v.ID, v.Targets, v.Help)
			}
		}
	})
	e.shots("plan-rendered")

	// Selecting a rendered table cell, then a nested list item, starts
	// notes on their plan lines, which the numbered source shows.
	row, item := planLine(t, "| `a.go`"), planLine(t, "   - in `a_test.go`")
	e.run("select a row of the table", chromedp.Click(chromedp.CSS(`#plan-doc tbody tr:first-child td:nth-child(2)`)))
	e.run("select a nested list item", chromedp.Click(chromedp.CSS(`#plan-doc li li`)))
	want := fmt.Sprintf("docs/plan.md:%d: \ndocs/plan.md:%d: ", row, item)
	if got := eval[string](e, `document.querySelector("#notes-reject").value`); got != want {
		t.Errorf("selecting the row and the list item starts the notes %q, want %q", got, want)
	}
	// In a paragraph over three source lines, the line clicked, not the
	// paragraph's first: a word on its last line, then one inside
	// emphasis on its first.
	for _, c := range []struct{ word, line string }{{"nothing", "the greeting stays"}, {"two", "The change adds"}} {
		want += fmt.Sprintf("\ndocs/plan.md:%d: ", planLine(t, c.line))
		e.clickWord("#plan-doc p", c.word)
		if got := eval[string](e, `document.querySelector("#notes-reject").value`); got != want {
			t.Errorf("clicking %q in the paragraph makes the notes %q, want %q", c.word, got, want)
		}
	}
	e.click("#plan-source > summary")
	if got := eval[string](e, fmt.Sprintf(`(s => s.textContent + " numbered " + getComputedStyle(s, "::before").content)(document.querySelector('#plan-source span[data-line="%d"]'))`, row)); got != "| `a.go` | new: the greeting | +12 | numbered \""+fmt.Sprint(row)+"\"" {
		t.Errorf("the source's line %d reads %q", row, got)
	}
	e.shots("plan-source-and-notes")

	// Without JavaScript the plan is rendered the same (on the server),
	// and the fold shows the numbers a note typed by hand names.
	e.run("scripts off", scripts(false))
	e.open("/deliveries/" + d.ID)
	if !eval[bool](e, `document.querySelector("#log-expand").classList.contains("reserved") && !!document.querySelector("#plan-doc table")`) {
		t.Error("without JavaScript the plan is not rendered")
	}
	e.click("#plan-source > summary")
	if got := eval[string](e, fmt.Sprintf(`getComputedStyle(document.querySelector('#plan-source span[data-line="%d"]'), "::before").content`, item)); got != fmt.Sprintf(`"%d"`, item) {
		t.Errorf("without JavaScript the source's line %d is numbered %s", item, got)
	}
	e.shots("plan-no-javascript")
	e.run("scripts on", scripts(true))
}

// clickWord clicks the middle of the first occurrence of word in the
// text of the first element sel matches, as a person's pointer would.
func (e *env) clickWord(sel, word string) {
	e.t.Helper()
	at := eval[[]float64](e, fmt.Sprintf(`(() => {
		const el = document.querySelector(%q), w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
		for (let t; (t = w.nextNode()); ) {
			const i = t.data.indexOf(%q);
			if (i < 0) continue;
			t.parentElement.scrollIntoView({block: "center"});
			const r = document.createRange();
			r.setStart(t, i);
			r.setEnd(t, i + %d);
			const b = r.getBoundingClientRect();
			return [b.left + b.width / 2, b.top + b.height / 2];
		}
		return [];
	})()`, sel, word, len(word)))
	if len(at) != 2 {
		e.t.Fatalf("no %q in %s", word, sel)
	}
	e.run("click "+word, chromedp.MouseClickXY(at[0], at[1]))
}
