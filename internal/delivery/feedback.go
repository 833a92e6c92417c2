package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// A person's feedback from GitHub (a comment that mentions baton, a
// review requesting changes) sends a delivery back to implement, or to
// plan before a plan was taken (FeedbackFits, ActFeedback), one round per
// piece of feedback. internal/intake decides who may ask and which
// delivery it is about; the delivery decides when it can take it: now, or
// when the run or round in the way ends. Feedback that waits is recorded
// as deferred, and the change that frees its delivery applies the oldest
// of it in that change's own transaction (applyWaitingFeedback).

// Feedback acts on fb, a comment or review intake recorded as queued and
// checked (its author may push; fb.DeliveryID is its delivery): applied,
// with a review ref to it (which the next agent reads on GitHub; its text
// is never copied into a prompt), or deferred while a phase runs or a
// round is queued, or ignored for a closed or merged delivery. It returns
// fb as recorded, with the reason, and the delivery when fb sent it back.
// Feedback already decided is returned as it was: each piece acts once,
// whatever retries its job. The delivery's row is taken first, so the
// decision is ordered with every change of the delivery: feedback left
// waiting is always seen by the change that frees the delivery.
func (s *Service) Feedback(ctx context.Context, fb sqlstore.Feedback) (sqlstore.Feedback, *baton.Delivery, error) {
	var out sqlstore.Feedback
	var sent *baton.Delivery
	err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
		st := tx.Store()
		rec, err := st.FindFeedback(ctx, fb.Repo, fb.Kind, fb.ID)
		if err != nil {
			return err
		}
		if out = *rec; rec.State != sqlstore.FeedbackQueued {
			return nil
		}
		out.DeliveryID = fb.DeliveryID
		if err := st.LockDelivery(ctx, fb.DeliveryID); err != nil {
			return err
		}
		cur, err := st.FindDeliveryByID(ctx, fb.DeliveryID)
		if err != nil {
			return err
		}
		now := s.now()
		out.UpdatedAt = now
		switch fit, why := FeedbackFits(*cur); fit {
		case FeedbackIgnored:
			out.State, out.Reason = sqlstore.FeedbackIgnored, why
		case FeedbackWaits:
			out.State, out.Reason = sqlstore.FeedbackDeferred, why
		default:
			if sent, err = applyFeedback(ctx, tx, cur, out, now); err != nil {
				return err
			}
			out.State, out.Reason = sqlstore.FeedbackApplied, fmt.Sprintf("delivery %s is %s", sent.ID, sent.String())
		}
		return st.UpdateFeedback(ctx, out)
	})
	if err != nil {
		return fb, nil, err
	}
	if sent != nil {
		s.notify(sent.ID)
	}
	return out, sent, nil
}

// applyFeedback sends d back for fb in tx: the state machine's feedback
// action by its author, with a review ref to the comment or review.
func applyFeedback(ctx context.Context, tx queue.Tx, d *baton.Delivery, fb sqlstore.Feedback, now time.Time) (*baton.Delivery, error) {
	label, typ := "comment by @"+fb.Author, "github_comment"
	if fb.Kind == "review" {
		label, typ = "changes requested by @"+fb.Author, "github_review"
	}
	actor := "github:" + fb.Author
	note := "feedback from " + actor
	if fb.URL != "" {
		note += ": " + fb.URL
	}
	res, err := Apply(*d, Input{Action: ActFeedback, Actor: actor, Person: true, Now: now, Note: note,
		Refs: []baton.Ref{{Role: baton.RoleReview, Type: typ, Label: label, URL: fb.URL}}})
	if err != nil {
		return nil, err
	}
	return commit(ctx, tx, d, res)
}

// applyWaitingFeedback applies, in tx, the oldest feedback deferred for
// d when d can take it now, and records it applied: the change that left
// d so makes the next round. A change that closed d, or merged its work,
// ignores what waited for it. It returns d as it is after.
func applyWaitingFeedback(ctx context.Context, tx queue.Tx, d *baton.Delivery) (*baton.Delivery, error) {
	switch fit, why := FeedbackFits(*d); fit {
	case FeedbackWaits:
		return d, nil
	case FeedbackIgnored:
		return d, tx.Store().IgnoreWaitingFeedback(ctx, d.ID, why, d.UpdatedAt)
	}
	fb, err := tx.Store().WaitingFeedback(ctx, d.ID)
	if err != nil || fb == nil {
		return d, err
	}
	sent, err := applyFeedback(ctx, tx, d, *fb, d.UpdatedAt)
	if err != nil {
		return nil, err
	}
	fb.State, fb.Reason, fb.UpdatedAt = sqlstore.FeedbackApplied, fmt.Sprintf("delivery %s is %s", sent.ID, sent.String()), d.UpdatedAt
	if err := tx.Store().UpdateFeedback(ctx, *fb); err != nil {
		return nil, err
	}
	return sent, nil
}
