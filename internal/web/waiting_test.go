package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// "Waiting for you" lists exactly the deliveries that wait for a person,
// the longest waiting first, at any scale: 520 deliveries, a third of
// them waiting (checkpoints to start, results to approve, failures),
// numbered in one order and waiting in another. The API's pages and the
// dashboard's give the same rows; the nav's count links to them; the
// board's columns show the waiting ones first.
func TestWaitingForYouAtScale(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			st := e.svc.Store()
			t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
			type waiting struct {
				seq   int64
				since time.Time
			}
			var want []waiting
			for i := range 520 {
				d := &baton.Delivery{ID: fmt.Sprintf("%012x", 0xa00000+i), Summary: fmt.Sprintf("Delivery %03d", i), Repository: e.repo,
					Forge: baton.ForgeLocal, Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhasePlan, baton.PhaseDeploy},
					Config: baton.DeliveryConfig{Agent: "claude"}, CreatedAt: t0, Attempt: 1,
					// Waiting longest is not numbered first: i*7919 mod 1000.
					UpdatedAt: t0.Add(time.Duration(i*7919%1000) * time.Minute)}
				switch i % 6 {
				case 0:
					d.Phase, d.RunStatus = baton.PhasePlan, baton.StatusSucceeded // a plan to approve
				case 1:
					d.Phase, d.RunStatus = baton.PhaseDeploy, baton.StatusPending // a checkpoint to start
				case 2:
					d.Phase, d.RunStatus, d.Error = baton.PhaseImplement, baton.StatusFailed, "boom"
				case 3:
					d.Phase, d.RunStatus, d.Queued = baton.PhaseImplement, baton.StatusPending, true // for a worker
				case 4:
					d.Phase, d.RunStatus = baton.PhaseReview, baton.StatusRunning
				case 5:
					d.Phase, d.RunStatus = baton.PhaseClose, baton.StatusSucceeded
				}
				got, _, err := st.CreateDelivery(t.Context(), d)
				if err != nil {
					t.Fatal(err)
				}
				if got.WaitsForPerson() {
					want = append(want, waiting{got.Seq, d.UpdatedAt})
				}
			}
			sort.SliceStable(want, func(i, j int) bool {
				return want[i].since.Before(want[j].since) || want[i].since.Equal(want[j].since) && want[i].seq < want[j].seq
			})
			var wantSeqs []string
			for _, w := range want {
				wantSeqs = append(wantSeqs, strconv.FormatInt(w.seq, 10))
			}

			// The API, a page of 100 at a time.
			var apiSeqs []string
			cursor := ""
			for range 20 {
				var page struct {
					Deliveries []struct {
						Seq     int64
						Waiting bool `json:"waiting_for_person"`
					} `json:"deliveries"`
					NextCursor string `json:"next_cursor"`
				}
				e.do("GET", "/api/deliveries?state=waiting&limit=100&cursor="+cursor, "", true, &page)
				for _, d := range page.Deliveries {
					apiSeqs = append(apiSeqs, strconv.FormatInt(d.Seq, 10))
					if !d.Waiting {
						t.Errorf("GET /api/deliveries?state=waiting lists #%d, which waits for no person", d.Seq)
					}
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			t.Logf("%d of 520 deliveries wait for a person; the API listed %d, the dashboard lists them 50 a page", len(wantSeqs), len(apiSeqs))
			if !slices.Equal(apiSeqs, wantSeqs) {
				t.Errorf("the API lists %d waiting deliveries %v…, want %d, the longest waiting first: %v…", len(apiSeqs), head(apiSeqs), len(wantSeqs), head(wantSeqs))
			}

			// The dashboard, from the nav's count, a page of 50 at a time.
			c := &http.Client{}
			home := get(t, c, e.srv.URL+"/")
			if !strings.Contains(home, `<a href="/?state=waiting" id="nav-waiting"`) || !strings.Contains(home, fmt.Sprintf(`<span id="waiting-n">%d</span> waiting for you`, len(want))) {
				t.Errorf("the nav's count does not link to the waiting list:\n%s", between(home, "<header", "</header>"))
			}
			row := regexp.MustCompile(`<td data-label="#">(\d+)</td>`)
			var pageSeqs []string
			for n := 1; n <= 10; n++ {
				html := get(t, c, fmt.Sprintf("%s/?state=waiting&page=%d", e.srv.URL, n))
				for _, m := range row.FindAllStringSubmatch(html, -1) {
					pageSeqs = append(pageSeqs, m[1])
				}
				if n == 1 && !strings.Contains(html, fmt.Sprintf("1–50 of %d, waiting for a person, the longest waiting first", len(want))) {
					t.Errorf("the waiting list's first page does not say what it shows:\n%s", between(html, `<div id="list">`, "<table"))
				}
				if !strings.Contains(html, "page="+strconv.Itoa(n+1)) {
					break
				}
			}
			if !slices.Equal(pageSeqs, wantSeqs) {
				t.Errorf("the dashboard lists %d waiting deliveries %v…, want %d: %v…", len(pageSeqs), head(pageSeqs), len(wantSeqs), head(wantSeqs))
			}

			// The board: in each column, the waiting ones first.
			cols, err := e.svc.Board(t.Context(), 20)
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range cols {
				seen := false
				for i, d := range col.Deliveries {
					if !d.Waiting {
						seen = true
					} else if seen {
						t.Errorf("the board's %s column shows #%d, waiting, at %d after one that is not", col.Phase, d.Seq, i)
					}
				}
				if col.Phase == baton.PhaseImplement && (len(col.Deliveries) == 0 || !col.Deliveries[0].Waiting) {
					t.Errorf("the board's implement column does not start with a waiting delivery")
				}
			}
		})
	}
}

func head(s []string) []string { return s[:min(len(s), 8)] }
