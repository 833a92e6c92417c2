package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// A reject's line notes come through the API as a list and through the
// dashboard's form as text (path:line: text, one a line: what there is
// without JavaScript). A note on something the person was not shown is
// refused with 400 and nothing is posted; the form comes back with the
// notes as typed. Accepted notes are review refs of the delivery.
func TestRejectLineNotesThroughTheAPIAndTheForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	agent := "command:printf '1. Add the endpoint.\\n2. Test it.\\n'"
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: "Add a health endpoint", Actor: "test", Settings: delivery.Settings{Agent: &agent}})
	if err != nil {
		t.Fatal(err)
	}
	plan := func() {
		t.Helper()
		if got, err := e.svc.RunNow(t.Context(), d.ID, "test", delivery.Settings{}, io.Discard, time.Minute); err != nil || got.String() != "plan/succeeded" {
			t.Fatalf("run the plan = %v, %v", got, err)
		}
	}
	plan()
	notes := func() []string {
		t.Helper()
		cur, err := e.svc.Current(t.Context(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range cur.Refs {
			if r.Type == baton.RefReviewLine {
				out = append(out, r.Label)
			}
		}
		return out
	}

	e.wantError("POST", "/api/deliveries/"+d.ID+"/reject", `{"reason":"no","notes":[{"path":"main.go","line":1,"body":"x"}]}`, true, http.StatusBadRequest, "invalid")
	e.wantError("POST", "/api/deliveries/"+d.ID+"/approve", `{"notes":[{"path":"docs/plan.md","line":1,"body":"x"}]}`, true, http.StatusBadRequest, "invalid")
	e.wantError("POST", "/api/deliveries/"+d.ID+"/reject", `{"reason":"no","notes":[{"path":"docs/plan.md","line":1}]}`, true, http.StatusBadRequest, "invalid")
	if n, _ := e.svc.Store().ReviewNotes(t.Context(), d.ID); len(n) != 0 {
		t.Fatalf("refused rejects kept %d review notes", len(n))
	}
	body, _ := json.Marshal(map[string]any{"reason": "Say what healthy means", "notes": []baton.LineNote{{Path: "docs/plan.md", Line: 1, Body: "which endpoint?"}, {Path: "docs/plan.md", Line: 2, Body: "a test of what?"}}})
	if resp := e.do("POST", "/api/deliveries/"+d.ID+"/reject", string(body), true, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("reject with notes = %d", resp.StatusCode)
	}
	if got := strings.Join(notes(), " "); got != "docs/plan.md:1 docs/plan.md:2" {
		t.Errorf("line refs after the API's reject: %q", got)
	}

	plan()
	_, cookie := e.signIn(token)
	csrf := e.csrfOf(cookie)
	post := func(form url.Values) (int, string) {
		t.Helper()
		form.Set("csrf", csrf)
		req, _ := http.NewRequest("POST", e.srv.URL+"/deliveries/"+d.ID+"/reject", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.srv.URL)
		req.AddCookie(cookie)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	typed := "docs/plan.md:2: a test\n  of the status code\nplan.md:1: wrong path"
	status, page := post(url.Values{"reason": {"Still vague"}, "notes": {typed}})
	if status != http.StatusBadRequest || !strings.Contains(page, "line note on plan.md:1: that is not") || !strings.Contains(page, ">"+strings.ReplaceAll(typed, "\n", "\n")+"</textarea>") {
		t.Errorf("a form with a note on a path not shown = %d, want 400 with the reason and the notes as typed:\n%s", status, page)
	}
	status, page = post(url.Values{"reason": {"Still vague"}, "notes": {"a test of the status code"}})
	if status != http.StatusBadRequest || !strings.Contains(page, "start a note with the file and line") {
		t.Errorf("notes without path:line = %d, want 400 saying how to write one", status)
	}
	if status, _ = post(url.Values{"reason": {"Still vague"}, "notes": {"docs/plan.md:2: a test\n  of the status code"}}); status != http.StatusSeeOther {
		t.Fatalf("the form's reject = %d, want 303", status)
	}
	if got := strings.Join(notes(), " "); got != "docs/plan.md:1 docs/plan.md:2 docs/plan.md:2" {
		t.Errorf("line refs after the form's reject: %q, want the new note beside the old", got)
	}
}
