package delivery

import (
	"context"
	"errors"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
)

// Requeue queues a job for each notice in flight and each comment still
// to act on that has none: those a version of baton before they were
// jobs left behind, and those whose job River gave up on while its
// process died. A job already queued, running or retrying is not queued
// twice (each kind is unique by its arguments). Feedback waiting for a
// delivery that can take it now is applied, and feedback waiting for a
// delivery that is gone is ignored. `baton serve` calls it once at start.
func (s *Service) Requeue(ctx context.Context) error {
	st := s.Store()
	ids, err := st.NotificationIDs(ctx, "")
	if err != nil {
		return err
	}
	queued, err := st.FeedbackOf(ctx, sqlstore.FeedbackQueued)
	if err != nil {
		return err
	}
	var jobs []queue.Args
	for _, id := range ids {
		jobs = append(jobs, queue.NoticeArgs{ID: id})
	}
	for _, fb := range queued {
		jobs = append(jobs, queue.FeedbackArgs{Repo: strings.ToLower(fb.Repo), CommentKind: fb.Kind, CommentID: fb.ID})
	}
	if len(jobs) > 0 {
		err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
			for _, j := range jobs {
				if err := tx.Enqueue(ctx, j); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	waiting, err := st.FeedbackOf(ctx, sqlstore.FeedbackDeferred)
	if err != nil {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for _, fb := range waiting {
		if seen[fb.DeliveryID] {
			continue
		}
		seen[fb.DeliveryID] = true
		err := s.Queue.InTx(ctx, func(tx queue.Tx) error {
			err := tx.Store().LockDelivery(ctx, fb.DeliveryID)
			if baton.ErrorCode(err) == baton.NotFound {
				return tx.Store().IgnoreWaitingFeedback(ctx, fb.DeliveryID, "delivery "+fb.DeliveryID+" is gone", s.now())
			}
			if err != nil {
				return err
			}
			d, err := tx.Store().FindDeliveryByID(ctx, fb.DeliveryID)
			if err != nil {
				return err
			}
			_, err = applyWaitingFeedback(ctx, tx, d)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.notify(fb.DeliveryID)
	}
	return errors.Join(errs...)
}
