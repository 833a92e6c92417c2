package delivery_test

import (
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// What a version of baton before notices and comments were jobs left in
// flight gets its job at a server's start, once however often it starts:
// a notice still to send, a comment still to act on. Feedback that waited
// for a delivery that can take it now is applied; feedback that waited
// for a delivery that is gone is ignored.
func TestRequeueGivesLeftWorkItsJob(t *testing.T) {
	t.Parallel()
	for _, dialect := range sqlstoretest.Dialects(t) {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			q, err := queue.Open(ctx, sqlstoretest.DSN(t, dialect), queue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(q.Close)
			svc := &delivery.Service{Queue: q, DataDir: t.TempDir()}
			st := svc.Store()
			now := time.Now().UTC()
			// A delivery waiting at its deploy checkpoint: free to take feedback.
			d, _, err := st.CreateDelivery(ctx, &baton.Delivery{ID: "left00000001", Summary: "s", Repository: "octo/app", Forge: baton.ForgeGitHub,
				Phase: baton.PhaseDeploy, RunStatus: baton.StatusPending, Endpoint: baton.PhaseObserve, Checkpoints: []baton.Phase{baton.PhaseDeploy},
				Config: baton.DeliveryConfig{Agent: "claude"}, CreatedAt: now, UpdatedAt: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreateNotification(ctx, &sqlstore.Notification{DeliveryID: d.ID, Event: delivery.NoticeWaiting, Body: "{}", CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			for _, fb := range []sqlstore.Feedback{
				{Repo: "octo/app", Kind: "issue_comment", ID: 1, Author: "alice", URL: "https://github.com/octo/app/issues/1#issuecomment-1", State: sqlstore.FeedbackQueued},
				{Repo: "octo/app", Kind: "review", ID: 2, Author: "carol", URL: "https://github.com/octo/app/pull/2#pullrequestreview-2", State: sqlstore.FeedbackDeferred, DeliveryID: d.ID},
				{Repo: "octo/app", Kind: "issue_comment", ID: 3, Author: "bob", URL: "https://github.com/octo/app/issues/9#issuecomment-3", State: sqlstore.FeedbackDeferred, DeliveryID: "gone00000000"},
			} {
				fb.CreatedAt, fb.UpdatedAt = now, now
				if _, err := st.CreateFeedback(ctx, fb); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := svc.Requeue(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for kind, want := range map[string]int{queue.NoticeArgs{}.Kind(): 1, queue.FeedbackArgs{}.Kind(): 1} {
				if got, err := q.JobCounts(ctx, kind); err != nil || got["available"] != want || len(got) != 1 {
					t.Errorf("%s jobs = %v, %v; want %d available", kind, got, err, want)
				}
			}
			cur, err := svc.Current(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := cur.Ref(baton.RoleReview, "github_review"); cur.String() != "implement/pending" || !cur.Queued || !ok || r.Label != "changes requested by @carol" {
				t.Errorf("the delivery carol's review waited for is %s (queued %v), ref %+v; want implement queued for it", cur.String(), cur.Queued, r)
			}
			for id, want := range map[int64]string{2: sqlstore.FeedbackApplied, 3: sqlstore.FeedbackIgnored} {
				kind := "issue_comment"
				if id == 2 {
					kind = "review"
				}
				if f, err := st.FindFeedback(ctx, "octo/app", kind, id); err != nil || f.State != want {
					t.Errorf("feedback %d = %+v, %v; want %s", id, f, err, want)
				}
			}
		})
	}
}

// Feedback waiting for a delivery's queued plan that a person then closes
// is ignored by the close, with its reason: a closed delivery takes no
// more.
func TestCloseIgnoresWaitingFeedback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	ctx := t.Context()
	d, _, err := h.svc.Insert(ctx, newDelivery(sourceRepo(t), cfg(), baton.PhasePlan), "alice")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	fb := sqlstore.Feedback{Repo: "octo/app", Kind: "issue_comment", ID: 5, Author: "alice", URL: "https://github.com/octo/app/issues/1#issuecomment-5",
		State: sqlstore.FeedbackQueued, CreatedAt: now, UpdatedAt: now, DeliveryID: d.ID}
	if _, err := h.svc.Store().CreateFeedback(ctx, fb); err != nil {
		t.Fatal(err)
	}
	if got, _, err := h.svc.Feedback(ctx, fb); err != nil || got.State != sqlstore.FeedbackDeferred {
		t.Fatalf("feedback on a queued plan = %+v, %v; want deferred", got, err)
	}
	if _, err := h.svc.Decide(ctx, d.ID, delivery.ActClose, "bob", "not needed"); err != nil {
		t.Fatal(err)
	}
	if f, _ := h.svc.Store().FindFeedback(ctx, "octo/app", "issue_comment", 5); f.State != sqlstore.FeedbackIgnored || f.Reason == "" {
		t.Errorf("after the close the feedback is %s (%q), want ignored with why", f.State, f.Reason)
	}
}
