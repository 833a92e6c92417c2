package delivery_test

import (
	"fmt"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
)

// Apply is the pipeline's state machine: pure, so every edge and worker
// applies actions the same way. A refused action is a Conflict that says
// what would apply.
func ExampleApply() {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	d := baton.Delivery{
		ID: "3f2a9c1b7d4e", Summary: "Add a /health endpoint", Repository: "/src/app", Forge: baton.ForgeLocal,
		Phase: baton.PhaseReview, RunStatus: baton.StatusRunning, Attempt: 1,
		Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhaseDeploy},
		Config: baton.DeliveryConfig{Agent: "claude", MaxRounds: 5},
	}
	// The review's verdict is not_pass: back to implement, queued.
	res, err := delivery.Apply(d, delivery.Input{Action: delivery.ActForward, Actor: "worker:1", Now: now, Attempt: 1,
		Verdict: baton.VerdictNotPass, Note: "the handler has no test"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Delivery.String(), "queued:", res.Enqueue)
	for _, e := range res.Log {
		fmt.Printf("  %s %s %s %s\n", e.Phase, e.Status, e.Verdict, e.Note)
	}
	// Retrying a pending phase is refused.
	_, err = delivery.Apply(res.Delivery, delivery.Input{Action: delivery.ActRetry, Actor: "sam", Person: true, Now: now})
	fmt.Println(baton.ErrorCode(err), err)
	// Output:
	// implement/pending queued: true
	//   review succeeded not_pass the handler has no test
	//   implement pending  review not_pass: back to implement (round 1)
	// conflict delivery 3f2a9c1b7d4e is implement/pending: only a failed or blocked phase is retried
}
