package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Feedback states.
const (
	// FeedbackQueued is a comment its River job (baton.feedback) is to
	// act on.
	FeedbackQueued   = "queued"
	FeedbackDeferred = "deferred" // waits for the delivery's running phase or queued round
	FeedbackApplied  = "applied"
	FeedbackIgnored  = "ignored"
	// FeedbackFailed is a comment its job gave up on (GitHub or the
	// database failed every attempt); the reason says why.
	FeedbackFailed = "failed"
)

// Feedback is a comment or review on GitHub that asked baton for
// something, and what became of it.
type Feedback struct {
	// Repo is the repository as its source names it, lower-cased.
	Repo string
	// Kind is issue_comment or review; ID is GitHub's id of it.
	Kind       string
	ID         int64
	DeliveryID string
	Author     string
	URL        string
	State      string
	Reason     string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const feedbackCols = `repo, kind, comment_id, delivery_id, author, url, state, reason, created_at, updated_at`

// CreateFeedback records f unless the same comment or review was recorded
// before: true means f is new, and the caller queues its job in the same
// transaction. One INSERT decides, so of a webhook and a poll seeing one
// comment, one acts.
func (s *Store) CreateFeedback(ctx context.Context, f Feedback) (bool, error) {
	n, err := s.exec(ctx, `INSERT INTO feedback (`+feedbackCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		strings.ToLower(f.Repo), f.Kind, f.ID, f.DeliveryID, f.Author, f.URL, f.State, f.Reason, fmtTime(f.CreatedAt), fmtTime(f.UpdatedAt))
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// FindFeedback returns the comment or review repo, kind and id name, as
// recorded. NotFound when it was never recorded.
func (s *Store) FindFeedback(ctx context.Context, repo, kind string, id int64) (*Feedback, error) {
	list, err := s.feedback(ctx, ` WHERE repo = ? AND kind = ? AND comment_id = ?`, strings.ToLower(repo), kind, id)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, baton.Errorf(baton.NotFound, "no feedback %s %s %d", repo, kind, id)
	}
	return &list[0], nil
}

// UpdateFeedback sets what became of a comment or review.
func (s *Store) UpdateFeedback(ctx context.Context, f Feedback) error {
	_, err := s.exec(ctx, `UPDATE feedback SET delivery_id = ?, state = ?, reason = ?, updated_at = ? WHERE repo = ? AND kind = ? AND comment_id = ?`,
		f.DeliveryID, f.State, f.Reason, fmtTime(f.UpdatedAt), strings.ToLower(f.Repo), f.Kind, f.ID)
	return err
}

// FeedbackOf lists the feedback recorded in state ("" for any), oldest
// first.
func (s *Store) FeedbackOf(ctx context.Context, state string) ([]Feedback, error) {
	if state == "" {
		return s.feedback(ctx, ``)
	}
	return s.feedback(ctx, ` WHERE state = ?`, state)
}

// WaitingFeedback returns the oldest feedback deferred for the delivery
// with id, nil when none waits.
func (s *Store) WaitingFeedback(ctx context.Context, deliveryID string) (*Feedback, error) {
	list, err := s.feedback(ctx, ` WHERE delivery_id = ? AND state = ?`, deliveryID, FeedbackDeferred)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// IgnoreWaitingFeedback records the feedback deferred for the delivery
// with id as ignored, for why: the delivery will never take it.
func (s *Store) IgnoreWaitingFeedback(ctx context.Context, deliveryID, why string, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE feedback SET state = ?, reason = ?, updated_at = ? WHERE delivery_id = ? AND state = ?`,
		FeedbackIgnored, why, fmtTime(at), deliveryID, FeedbackDeferred)
	return err
}

// feedback lists the feedback where says, oldest first.
func (s *Store) feedback(ctx context.Context, where string, args ...any) ([]Feedback, error) {
	rows, err := s.query(ctx, `SELECT `+feedbackCols+` FROM feedback`+where+` ORDER BY created_at, comment_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Feedback
	for rows.Next() {
		var f Feedback
		var c, u string
		if err := rows.Scan(&f.Repo, &f.Kind, &f.ID, &f.DeliveryID, &f.Author, &f.URL, &f.State, &f.Reason, &c, &u); err != nil {
			return nil, err
		}
		if f.CreatedAt, err = parseTime(c); err != nil {
			return nil, err
		}
		if f.UpdatedAt, err = parseTime(u); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, s.wrap(rows.Err())
}

// OpenDeliveriesOf lists the deliveries of a repository (as deliveries
// name it: owner/name, host/owner/name) that are not closed, ignoring
// case.
func (s *Store) OpenDeliveriesOf(ctx context.Context, repository string) ([]*baton.Delivery, error) {
	return s.list(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE LOWER(repository) = ? AND phase <> ? ORDER BY seq`,
		strings.ToLower(repository), string(baton.PhaseClose))
}

// SetCommentsPolled records up to when the poller read a source's
// comments. Only this writes it (UpdateSource leaves it), so a sync and a
// comment poll never undo each other.
func (s *Store) SetCommentsPolled(ctx context.Context, sourceID string, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE sources SET comments_polled_at = ? WHERE id = ?`, fmtTime(at), sourceID)
	return err
}

// SetCommentWebhook records that a comment or review webhook arrived for
// a source. Only this writes it (UpdateSource leaves it).
func (s *Store) SetCommentWebhook(ctx context.Context, sourceID string, at time.Time) error {
	_, err := s.exec(ctx, `UPDATE sources SET comment_webhook_at = ? WHERE id = ?`, fmtTime(at), sourceID)
	return err
}
