package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// hostilePlan is a plan as an agent could write it: a table, raw HTML, a
// fence holding a script, a javascript: link and an image.
const hostilePlan = "# Plan\n\n| File | Change |\n|---|---|\n| `a.go` | **new** |\n\n<script>alert(1)</script>\n\n" +
	"```html\n<script>alert(2)</script>\n```\n\n[click](javascript:alert(3)) ![pixel](https://evil.example/p.png)\n"

// At the plan checkpoint the page shows the plan rendered as markdown,
// with nothing the plan wrote as markup beyond what internal/markdown
// allows, its numbered source in a fold, and a note on the line a
// rendered block names is one the server accepts.
func TestPlanRenderedSafelyWithLineNotes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	// The agent prints the plan: printf reads its \n, and the plan has no ' or %.
	agent := "command:printf '" + strings.ReplaceAll(hostilePlan, "\n", `\n`) + "'"
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Render the plan", Actor: "test", Settings: delivery.Settings{Agent: &agent}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.RunNow(t.Context(), d.ID, "test", delivery.Settings{}, io.Discard, time.Minute); err != nil || got.String() != "plan/succeeded" {
		t.Fatalf("run the plan = %v, %v", got, err)
	}
	page := get(t, http.DefaultClient, e.srv.URL+"/deliveries/"+d.ID)
	start := strings.Index(page, `<div class="md" id="plan-doc"`)
	end := strings.Index(page, `<details class="plan-source"`)
	if start < 0 || end < start {
		t.Fatalf("the delivery's page lacks the rendered plan and its source:\n%s", page)
	}
	rendered := page[start:end]
	for _, want := range []string{`<h3 data-line="1">Plan</h3>`, `<table data-line="3" data-end="5">`, `<th scope="col">File</th>`, "<strong>new</strong>",
		"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;script&gt;alert(2)&lt;/script&gt;",
		`<a href="https://evil.example/p.png" rel="noreferrer nofollow">image: pixel</a>`} {
		if !strings.Contains(rendered, want) {
			t.Errorf("the rendered plan lacks %q:\n%s", want, rendered)
		}
	}
	section := between(page, `<section id="plan"`, "</section>")
	markup := strings.ToLower(strings.Join(regexp.MustCompile(`<[^>]*>`).FindAllString(section, -1), ""))
	for _, bad := range []string{"<script", "javascript:", "<img"} {
		if strings.Contains(markup, bad) {
			t.Errorf("the plan's markup holds %q", bad)
		}
	}
	lines := strings.Count(strings.TrimSpace(hostilePlan), "\n") + 1
	source := page[end:]
	if n := strings.Count(source[:strings.Index(source, "</details>")], `<span data-line="`); n != lines {
		t.Errorf("the plan's source numbers %d lines, want %d", n, lines)
	}

	// The line the rendered table names is the line a note on it is kept at.
	m := regexp.MustCompile(`<tr data-line="(\d+)"><td><code>a\.go`).FindStringSubmatch(rendered)
	if m == nil {
		t.Fatalf("the table's row names no line:\n%s", rendered)
	}
	line, _ := strconv.Atoi(m[1])
	if got := strings.Split(strings.TrimSpace(hostilePlan), "\n")[line-1]; !strings.HasPrefix(got, "| `a.go`") {
		t.Errorf("the row names line %d, which reads %q", line, got)
	}
	body, _ := json.Marshal(map[string]any{"reason": "Say why", "notes": []baton.LineNote{{Path: "docs/plan.md", Line: line, Body: "why new?"}}})
	if r := e.do("POST", "/api/deliveries/"+d.ID+"/reject", string(body), true, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("reject with a note on the row's line = %d", r.StatusCode)
	}
	cur, err := e.svc.Current(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, r := range cur.Refs {
		if r.Type == baton.RefReviewLine {
			refs = append(refs, r.Label)
		}
	}
	if want := "docs/plan.md:" + m[1]; strings.Join(refs, " ") != want {
		t.Errorf("the note's refs are %q, want %q", refs, want)
	}
}
