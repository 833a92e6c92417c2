package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// A delivery's page shows its newest 300 log lines and a link to the
// ones before; following it (without JavaScript) shows 300 more; the
// fragment the page fetches in place (with it) holds those earlier ones
// alone, with the link to the ones before them.
func TestEarlierLogLinesPageIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	d := e.create("Talk a lot")
	evs := make([]baton.DeliveryEvent, 700)
	for i := range evs {
		evs[i] = baton.DeliveryEvent{Kind: baton.EventText, Phase: baton.PhasePlan, Text: fmt.Sprintf("line %d of the plan", i+1), At: time.Now()}
	}
	if err := e.svc.Store().AppendEvents(t.Context(), d.ID, evs); err != nil {
		t.Fatal(err)
	}
	last, err := e.svc.Store().LastEvent(t.Context(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`line (\d+) of the plan`)
	shown := func(page string) (first, n int) {
		m := lines.FindAllStringSubmatch(page, -1)
		if len(m) == 0 {
			return 0, 0
		}
		fmt.Sscan(m[0][1], &first)
		return first, len(m)
	}
	page := get(t, http.DefaultClient, e.srv.URL+"/deliveries/"+d.ID)
	first, n := shown(page)
	if n != 300 || !strings.Contains(page, "Show earlier lines") {
		t.Fatalf("the page shows %d lines from line %d; want the newest 300 and a link to the rest", n, first)
	}
	before := last - 299
	link := fmt.Sprintf(`href="/deliveries/%s?before=%d#live-log"`, d.ID, before)
	if !strings.Contains(page, link) || !strings.Contains(page, fmt.Sprintf("(%d before these)", before-1)) {
		t.Errorf("the page lacks the link %s", link)
	}

	page = get(t, http.DefaultClient, fmt.Sprintf("%s/deliveries/%s?before=%d", e.srv.URL, d.ID, before))
	if f, n := shown(page); n != 600 || f != first-300 {
		t.Errorf("following the link shows %d lines from line %d; want 600 from line %d", n, f, first-300)
	}
	frag := get(t, http.DefaultClient, fmt.Sprintf("%s/deliveries/%s?before=%d&fragment=earlier", e.srv.URL, d.ID, before))
	if f, n := shown(frag); n != 300 || f != first-300 || strings.Contains(frag, "<html") || strings.Contains(frag, fmt.Sprintf("line %d of", first)) {
		t.Errorf("the earlier fragment holds %d lines from line %d (want 300 from %d, and no page around them):\n%.300s", n, f, first-300, frag)
	}
	// The first lines: no link before them.
	frag = get(t, http.DefaultClient, fmt.Sprintf("%s/deliveries/%s?before=%d&fragment=earlier", e.srv.URL, d.ID, 50))
	if f, n := shown(frag); n != 49-int(last-700) || strings.Contains(frag, "Show earlier") || f == 0 && n > 0 {
		t.Errorf("the first lines' fragment holds %d lines from %d, link %v", n, f, strings.Contains(frag, "Show earlier"))
	}
	for _, bad := range []string{"0", "x", "-3"} {
		if r := e.do("GET", "/deliveries/"+d.ID+"?before="+bad, "", true, nil); r.StatusCode != http.StatusBadRequest {
			t.Errorf("before=%s = %d, want 400", bad, r.StatusCode)
		}
	}
}
