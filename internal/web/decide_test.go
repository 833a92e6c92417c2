package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
	"github.com/baton-agent/baton/internal/testenv"
)

// A decision names the state it was made on, and is applied to that
// state or not at all. 20 approves and 20 rejects fired at once at a
// plan checkpoint, each with the state the person was shown, while a
// worker runs: exactly one is accepted, every round. Without the state,
// a decision that lost the race to the checkpoint was applied to the
// state the worker had moved the delivery on to (a deploy checkpoint
// started by an approve meant for the plan).
func TestDecisionsOnAStateWithAWorkerRunning(t *testing.T) {
	t.Parallel()
	rounds := 100
	if testing.Short() {
		rounds = 5
	}
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			e := newEnvQueue(t, sqlstoretest.DSN(t, dialect), queue.Config{Workers: 2, FetchPollInterval: 50 * time.Millisecond})
			ctx, stop := context.WithCancel(context.Background())
			worker := &delivery.Worker{Runner: &delivery.Runner{Service: e.svc, Owner: "worker:test", PollEvery: 20 * time.Millisecond, KillGrace: time.Second}}
			done := make(chan error, 1)
			go func() { done <- worker.Run(ctx) }()
			t.Cleanup(func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("worker: %v", err)
				}
			})
			wake, fire := testenv.Signal()
			t.Cleanup(e.svc.OnEvents(func(string) { fire() }))
			for round := range rounds {
				raceOnState(t, e, wake, fmt.Sprintf("Decide on what was seen, round %d", round))
			}
		})
	}
}

func raceOnState(t *testing.T, e *env, wake <-chan struct{}, summary string) {
	t.Helper()
	agent := "command:echo 1. Do it."
	d, _, err := e.svc.Create(t.Context(), delivery.Request{Repo: e.repo, Summary: summary, Actor: "test",
		Settings: delivery.Settings{Agent: &agent}})
	if err != nil {
		t.Fatal(err)
	}
	var cur *baton.Delivery
	if !testenv.Until(30*time.Second, wake, func() bool {
		cur, err = e.svc.Current(t.Context(), d.ID)
		return err != nil || cur.String() == "plan/succeeded" || cur.RunStatus == baton.StatusFailed
	}) || err != nil || cur.String() != "plan/succeeded" {
		t.Fatalf("%s: the plan is %v (%v), want plan/succeeded waiting for a person", summary, cur, err)
	}
	var view struct {
		Delivery struct{ State string } `json:"delivery"`
	}
	e.do("GET", "/api/deliveries/"+d.ID, "", true, &view)
	if view.Delivery.State != "plan/succeeded/1" {
		t.Fatalf("%s: the delivery's view has state %q, want plan/succeeded/1", summary, view.Delivery.State)
	}
	const n = 40
	count := decideAtOnce(t, e.srv.URL, token, d.ID, n, view.Delivery.State)
	if count[200] != 1 || count[409] != n-1 {
		t.Errorf("%s: %d decisions on plan/succeeded/1 at once answered %v, want one 200 and %d × 409", summary, n, count, n-1)
	}
	log, _ := e.svc.PhaseLog(t.Context(), d.ID)
	var decisions []string
	rejected := false
	for _, entry := range log {
		if entry.Decision != "" {
			decisions = append(decisions, entry.Decision)
			rejected = rejected || entry.Action == string(delivery.ActReject)
		}
	}
	if len(decisions) != 1 {
		t.Errorf("%s: the phase log records decisions %q, want one", summary, decisions)
	}
	checkWinnersNote(t, e, d.ID, summary, rejected)

	// Once the worker has moved the delivery on to wait for a person
	// again (implement blocked: the agent changed nothing; or the plan
	// again after a reject), decisions made on the plan checkpoint
	// arrive: a page left open, a slow network. Each is refused, saying
	// what the delivery was and what it is now.
	if !testenv.Until(30*time.Second, wake, func() bool {
		cur, err = e.svc.Current(t.Context(), d.ID)
		return err != nil || cur.WaitsForPerson() && cur.Attempt > 1
	}) || err != nil {
		t.Fatalf("%s: the delivery is %v (%v), want it waiting for a person again", summary, cur, err)
	}
	late, _ := json.Marshal(map[string]string{"state": view.Delivery.State, "reason": "late"})
	for _, action := range []string{"approve", "reject", "close"} {
		var ae apiError
		resp := e.do("POST", "/api/deliveries/"+d.ID+"/"+action, string(late), true, &ae)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(ae.Message, "it was plan/succeeded (attempt 1), it is now "+delivery.StateOf(cur, "").Words()) {
			t.Errorf("%s: a late %s made on plan/succeeded/1 with the delivery at %s answered %d %q, want 409 saying what changed",
				summary, action, cur.String(), resp.StatusCode, ae.Message)
		}
	}
	if after, _ := e.svc.Current(t.Context(), d.ID); after.String() != cur.String() || after.Attempt != cur.Attempt {
		t.Errorf("%s: late decisions moved the delivery from %s to %s", summary, cur.String(), after.String())
	}
}

// decideAtOnce fires n decisions on delivery id at the same moment
// through the API (approves, and rejects with a reason, in turn), naming
// the state they were made on when state is not "", and counts the
// answers' status codes.
func decideAtOnce(t *testing.T, url, token, id string, n int, state string) map[int]int {
	t.Helper()
	statuses := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		action, body := "approve", ""
		if i%2 == 1 {
			action, body = "reject", fmt.Sprintf(`{"reason":"no, says reviewer %d"}`, i)
		}
		req, _ := http.NewRequest("POST", url+"/api/deliveries/"+id+"/"+action, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if state != "" {
			req.Header.Set("If-Match", `"`+state+`"`)
		}
		wg.Go(func() {
			<-start
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			resp.Body.Close()
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
				t.Logf("%s answered %d: %s", action, resp.StatusCode, body) // what an unexpected answer said
			}
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	return count
}
