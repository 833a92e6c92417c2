package delivery_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// step is one phase log entry of a made-up delivery, minutes after its
// creation.
type step struct {
	min      float64
	phase    baton.Phase
	status   baton.RunStatus
	waits    bool
	decision string
}

// spend is one agent run's report.
type spend struct {
	cost    float64
	in, out int64
}

// insightsNow is the test clock: the figures are read at this moment.
var insightsNow = time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)

// seedInsights writes deliveries with known times and costs straight
// into the store, as the pipeline would have left them.
func seedInsights(t *testing.T, st *sqlstore.Store) {
	t.Helper()
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	n := 0
	mk := func(repo, agent string, created time.Time, canceled bool, steps []step, runs ...spend) {
		t.Helper()
		n++
		summary := fmt.Sprintf("delivery %d", n)
		last := steps[len(steps)-1]
		d := &baton.Delivery{ID: baton.DeliveryID(repo, summary), Summary: summary, Repository: repo, Forge: baton.ForgeLocal,
			Phase: last.phase, RunStatus: last.status, Endpoint: baton.PhaseObserve, Canceled: canceled,
			Config: baton.DeliveryConfig{Agent: agent, MaxRounds: 5}, CreatedAt: created, UpdatedAt: created}
		if _, _, err := st.CreateDelivery(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			e := &baton.PhaseLogEntry{Phase: s.phase, Status: s.status, Executor: baton.ExecutorAgent, Actor: "test", Action: "test",
				Waits: s.waits, Decision: s.decision, StartedAt: created.Add(time.Duration(s.min * float64(time.Minute)))}
			if err := st.AppendPhaseLog(t.Context(), d.ID, e); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range runs {
			run := &baton.AgentRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Agent: agent, StartedAt: created}
			if err := st.CreateAgentRun(t.Context(), run); err != nil {
				t.Fatal(err)
			}
			run.Status, run.CostUSD, run.InputTokens, run.OutputTokens = baton.RunSucceeded, r.cost, r.in, r.out
			if err := st.FinishAgentRun(t.Context(), run); err != nil {
				t.Fatal(err)
			}
		}
	}
	P, I, D, C := baton.PhasePlan, baton.PhaseImplement, baton.PhaseDeploy, baton.PhaseClose
	pend, run, ok, failed := baton.StatusPending, baton.StatusRunning, baton.StatusSucceeded, baton.StatusFailed
	// 1: merged after 163 minutes: 41 worked, 120 waited for a person, 2 for a worker.
	mk("repo-a", "claude", t0, false, []step{{0, P, pend, false, ""}, {1, P, run, false, ""}, {11, P, ok, false, ""},
		{71, I, pend, false, ""}, {72, I, run, false, ""}, {102, D, pend, true, ""}, {162, D, run, false, ""}, {163, D, ok, false, ""}, {163, C, ok, false, ""}},
		spend{0.50, 1000, 200}, spend{1.25, 3000, 800})
	// 2: failed, waiting since for someone to retry.
	mk("repo-a", "codex", t0.Add(24*time.Hour), false, []step{{0, P, pend, false, ""}, {0.5, P, run, false, ""}, {5.5, P, failed, false, ""}}, spend{0.30, 300, 100})
	// 3: canceled by a person.
	mk("repo-b", "claude", t0.Add(48*time.Hour), true, []step{{0, P, pend, false, ""}, {10.0 / 60, P, run, false, ""}, {70.0 / 60, P, failed, false, delivery.DecisionCanceled}})
	// 4: merged after 400 s.
	mk("repo-b", "claude", t0.Add(72*time.Hour), false, []step{{0, P, run, false, ""}, {100.0 / 60, D, run, false, ""}, {400.0 / 60, D, ok, false, ""}, {400.0 / 60, C, ok, false, ""}}, spend{0.25, 60, 40})
	// 5: before the window.
	mk("repo-a", "claude", time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC), false, []step{{0, D, ok, false, ""}}, spend{9, 9, 9})
	// 6: queued an hour before now.
	mk("repo-a", "claude", insightsNow.Add(-time.Hour), false, []step{{0, P, pend, false, ""}})
	// 7: closed by a person at its plan checkpoint.
	mk("repo-a", "codex", t0.Add(73*time.Hour), false, []step{{0, P, run, false, ""}, {5, P, ok, false, ""}, {10, C, failed, false, delivery.DecisionClosed}})
	// 8: merged after 1000 s, at no cost reported.
	mk("repo-b", "codex", time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC), false, []step{{0, D, run, false, ""}, {1000.0 / 60, D, ok, false, ""}, {1000.0 / 60, C, ok, false, ""}})
}

// The figures over a window, checked against deliveries with known
// times and costs, on SQLite and PostgreSQL.
func TestInsights(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			h := newHarnessOn(t, dialect, 0)
			h.svc.Now = func() time.Time { return insightsNow }
			seedInsights(t, h.svc.Store())
			got, err := h.svc.Insights(t.Context(), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			// Person waits run to now for the failed (2) and the canceled
			// (3) delivery: nobody has decided on them yet.
			failedWait := insightsNow.Sub(time.Date(2026, 3, 3, 9, 5, 30, 0, time.UTC)).Seconds()
			canceledWait := insightsNow.Sub(time.Date(2026, 3, 4, 9, 1, 10, 0, time.UTC)).Seconds()
			want := delivery.Insights{
				Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Until: insightsNow,
				Total: delivery.Figures{Created: 7, Merged: 3, Failed: 1, Canceled: 1, Closed: 1, Open: 1,
					MedianMergeSeconds: 1000, MeanMergeSeconds: (9780 + 400 + 1000) / 3.0,
					WorkSeconds: 2460 + 300 + 60 + 400 + 300 + 1000, PersonSeconds: 7200 + failedWait + canceledWait + 300, QueueSeconds: 120 + 30 + 10 + 3600,
					CostUSD: 2.30, Tokens: 5500, MergedCostUSD: 2.00, MergedTokens: 5100, CostPerMergedUSD: 2.0 / 3, TokensPerMerged: 1700},
				ByAgent: []delivery.Group{
					{Name: "claude", Figures: delivery.Figures{Created: 4, Merged: 2, Canceled: 1, Open: 1, MedianMergeSeconds: (9780 + 400) / 2.0, MeanMergeSeconds: (9780 + 400) / 2.0,
						WorkSeconds: 2460 + 60 + 400, PersonSeconds: 7200 + canceledWait, QueueSeconds: 120 + 10 + 3600,
						CostUSD: 2.00, Tokens: 5100, MergedCostUSD: 2.00, MergedTokens: 5100, CostPerMergedUSD: 1.00, TokensPerMerged: 2550}},
					{Name: "codex", Figures: delivery.Figures{Created: 3, Merged: 1, Failed: 1, Closed: 1, MedianMergeSeconds: 1000, MeanMergeSeconds: 1000,
						WorkSeconds: 300 + 300 + 1000, PersonSeconds: failedWait + 300, QueueSeconds: 30,
						CostUSD: 0.30, Tokens: 400}},
				},
				ByRepository: []delivery.Group{
					{Name: "repo-a", Figures: delivery.Figures{Created: 4, Merged: 1, Failed: 1, Closed: 1, Open: 1, MedianMergeSeconds: 9780, MeanMergeSeconds: 9780,
						WorkSeconds: 2460 + 300 + 300, PersonSeconds: 7200 + failedWait + 300, QueueSeconds: 120 + 30 + 3600,
						CostUSD: 2.05, Tokens: 5400, MergedCostUSD: 1.75, MergedTokens: 5000, CostPerMergedUSD: 1.75, TokensPerMerged: 5000}},
					{Name: "repo-b", Figures: delivery.Figures{Created: 3, Merged: 2, Canceled: 1, MedianMergeSeconds: 700, MeanMergeSeconds: 700,
						WorkSeconds: 60 + 400 + 1000, PersonSeconds: canceledWait, QueueSeconds: 10,
						CostUSD: 0.25, Tokens: 100, MergedCostUSD: 0.25, MergedTokens: 100, CostPerMergedUSD: 0.125, TokensPerMerged: 50}},
				},
				Days: []delivery.Day{{"2026-03-01", 0, 0}, {"2026-03-02", 1, 1}, {"2026-03-03", 1, 0}, {"2026-03-04", 1, 0},
					{"2026-03-05", 2, 1}, {"2026-03-06", 1, 1}, {"2026-03-07", 1, 0}},
			}
			approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })
			if diff := cmp.Diff(want, *got, approx, cmpopts.IgnoreUnexported(delivery.Figures{})); diff != "" {
				t.Errorf("insights (-want +got):\n%s", diff)
			}

			// A window of one day holds what was created on it.
			day, err := h.svc.Insights(t.Context(), time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC))
			if err != nil || day.Total.Created != 2 || day.Total.Merged != 1 || day.Total.Closed != 1 || len(day.Days) != 1 {
				t.Errorf("the window of 5 March = %+v, %v", day, err)
			}
			for _, bad := range [][2]time.Time{{insightsNow, insightsNow.Add(-time.Hour)}, {insightsNow.Add(-400 * 24 * time.Hour), insightsNow}} {
				if _, err := h.svc.Insights(t.Context(), bad[0], bad[1]); baton.ErrorCode(err) != baton.Invalid {
					t.Errorf("window %v: %v, want Invalid", bad, err)
				}
			}
		})
	}
}
