package web_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// seedTwo writes two deliveries with known times and costs into e's
// store, read at now (the service's clock): one merged ten minutes after
// it was created, for $0.40 and 1,500 tokens, and one whose plan failed
// five minutes in.
func seedTwo(t *testing.T, e *env, now time.Time) {
	t.Helper()
	e.svc.Now = func() time.Time { return now }
	st := e.svc.Store()
	for i, agent := range []string{"claude", "codex"} {
		created := time.Date(2026, 3, 2+i, 9, 0, 0, 0, time.UTC)
		summary := fmt.Sprintf("delivery %d", i+1)
		d := &baton.Delivery{ID: baton.DeliveryID(e.repo, summary), Summary: summary, Repository: e.repo, Forge: baton.ForgeLocal,
			Phase: baton.PhaseClose, RunStatus: baton.StatusSucceeded, Endpoint: baton.PhaseObserve,
			Config: baton.DeliveryConfig{Agent: agent, MaxRounds: 5}, CreatedAt: created, UpdatedAt: created}
		steps := []baton.PhaseLogEntry{{Phase: baton.PhasePlan, Status: baton.StatusRunning}, {Phase: baton.PhaseDeploy, Status: baton.StatusSucceeded}, {Phase: baton.PhaseClose, Status: baton.StatusSucceeded}}
		at := []time.Duration{0, 10 * time.Minute, 10 * time.Minute}
		if agent == "codex" {
			d.Phase, d.RunStatus = baton.PhasePlan, baton.StatusFailed
			steps, at = steps[:1], at[:1]
			steps = append(steps, baton.PhaseLogEntry{Phase: baton.PhasePlan, Status: baton.StatusFailed})
			at = append(at, 5*time.Minute)
		}
		if _, _, err := st.CreateDelivery(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		for j := range steps {
			steps[j].Executor, steps[j].Actor, steps[j].Action, steps[j].StartedAt = baton.ExecutorAgent, "test", "test", created.Add(at[j])
			if err := st.AppendPhaseLog(t.Context(), d.ID, &steps[j]); err != nil {
				t.Fatal(err)
			}
		}
		if agent == "claude" {
			run := &baton.AgentRun{DeliveryID: d.ID, Phase: baton.PhasePlan, Agent: agent, StartedAt: created}
			if err := st.CreateAgentRun(t.Context(), run); err != nil {
				t.Fatal(err)
			}
			run.Status, run.CostUSD, run.InputTokens, run.OutputTokens = baton.RunSucceeded, 0.40, 1000, 500
			if err := st.FinishAgentRun(t.Context(), run); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The insights of two deliveries with known times and costs, through
// the API, the page and the Prometheus metrics: the same figures, on
// SQLite and PostgreSQL.
func TestInsightsThroughTheAPIThePageAndMetrics(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, dialect)
			now := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
			seedTwo(t, e, now)
			failedWait := now.Sub(time.Date(2026, 3, 3, 9, 5, 0, 0, time.UTC)).Seconds()

			var in struct {
				Since, Until string
				Total        map[string]float64
				ByAgent      []map[string]any `json:"by_agent"`
				Days         []struct {
					Date            string
					Created, Merged int
				}
			}
			if r := e.do("GET", "/api/insights?since=2026-03-01&until=2026-03-07", "", true, &in); r.StatusCode != 200 {
				t.Fatalf("GET /api/insights = %d", r.StatusCode)
			}
			want := map[string]float64{"created": 2, "merged": 1, "failed": 1, "canceled": 0, "closed": 0, "open": 0,
				"median_merge_seconds": 600, "mean_merge_seconds": 600, "work_seconds": 600 + 300, "person_seconds": failedWait, "queue_seconds": 0,
				"cost_usd": 0.40, "tokens": 1500, "merged_cost_usd": 0.40, "merged_tokens": 1500, "cost_per_merged_usd": 0.40, "tokens_per_merged": 1500}
			for k, v := range want {
				if got, ok := in.Total[k]; !ok || fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", v) {
					t.Errorf("total %s = %v, want %v", k, got, v)
				}
			}
			if in.Since != "2026-03-01T00:00:00Z" || in.Until != "2026-03-08T00:00:00Z" || len(in.Days) != 7 || in.Days[1].Created != 1 || in.Days[1].Merged != 1 ||
				len(in.ByAgent) != 2 || in.ByAgent[0]["name"] != "claude" || in.ByAgent[0]["merged"] != 1.0 {
				t.Errorf("insights = %+v", in)
			}
			e.wantError("GET", "/api/insights?days=400", "", true, http.StatusBadRequest, "invalid")
			e.wantError("GET", "/api/insights?until=2026-03-07", "", true, http.StatusBadRequest, "invalid")

			page := get(t, http.DefaultClient, e.srv.URL+"/insights?since=2026-03-01&until=2026-03-07")
			for _, want := range []string{"<dt>Merged</dt><dd>1</dd>", "<dt>Median time to merge</dt><dd>10m0s</dd>", "<dt>Cost per merged delivery</dt><dd>$0.4000</dd>",
				"<dt>Tokens per merged delivery</dt><dd>1500</dd>", "<tr><td>2026-03-02</td><td>1</td><td>1</td></tr>", `<td data-label="Agent" class="any">codex</td><td data-label="Working">5m0s</td>`} {
				if !strings.Contains(page, want) {
					t.Errorf("the insights page lacks %q", want)
				}
			}

			resp, err := http.Get(e.srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text := string(b)
			for _, want := range []string{
				`baton_insights_deliveries{group="all",name="",outcome="merged"} 1`,
				`baton_insights_deliveries{group="agent",name="codex",outcome="failed"} 1`,
				`baton_insights_merge_seconds{group="all",name="",stat="median"} 600`,
				`baton_insights_cost_usd{group="agent",name="claude",of="per_merged"} 0.4`,
				`baton_insights_tokens{group="repository",name="` + e.repo + `",of="merged"} 1500`,
				`baton_insights_seconds{group="all",name="",kind="work"} 900`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("metrics lack %q:\n%s", want, text)
				}
			}
			checkExposition(t, text)
		})
	}
}

// /metrics, insights among them, is behind the API's auth.
func TestInsightsNeedTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sqlstore.SQLite)
	e.web.Open = false
	for _, path := range []string{"/metrics", "/api/insights"} {
		if r := e.do("GET", path, "", false, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token = %d, want 401", path, r.StatusCode)
		}
		if r := e.do("GET", path, "", true, nil); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the token = %d, want 200", path, r.StatusCode)
		}
	}
}
