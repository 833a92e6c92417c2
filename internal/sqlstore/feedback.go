package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Feedback states.
const (
	// FeedbackClaimed is a comment being acted on. A claim that outlives
	// its lease was left by a process that stopped before it recorded
	// the outcome (RetakeFeedback).
	FeedbackClaimed  = "claimed"
	FeedbackDeferred = "deferred" // waits for the delivery's running phase or queued round
	FeedbackApplied  = "applied"
	FeedbackIgnored  = "ignored"
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

// ClaimFeedback records f unless the same comment or review was recorded
// before: true means f is new and the caller acts on it. One INSERT
// decides, so of a webhook and a poll seeing one comment, one acts.
func (s *Store) ClaimFeedback(ctx context.Context, f Feedback) (bool, error) {
	n, err := s.exec(ctx, `INSERT INTO feedback (`+feedbackCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		strings.ToLower(f.Repo), f.Kind, f.ID, f.DeliveryID, f.Author, f.URL, f.State, f.Reason, fmtTime(f.CreatedAt), fmtTime(f.UpdatedAt))
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// UpdateFeedback sets what became of a claimed comment or review.
func (s *Store) UpdateFeedback(ctx context.Context, f Feedback) error {
	_, err := s.exec(ctx, `UPDATE feedback SET delivery_id = ?, state = ?, reason = ?, updated_at = ? WHERE repo = ? AND kind = ? AND comment_id = ?`,
		f.DeliveryID, f.State, f.Reason, fmtTime(f.UpdatedAt), strings.ToLower(f.Repo), f.Kind, f.ID)
	return err
}

// FeedbackOf lists the feedback recorded in state ("" for any), oldest
// first.
func (s *Store) FeedbackOf(ctx context.Context, state string) ([]Feedback, error) {
	q := `SELECT ` + feedbackCols + ` FROM feedback`
	var args []any
	if state != "" {
		q += ` WHERE state = ?`
		args = append(args, state)
	}
	rows, err := s.query(ctx, q+` ORDER BY created_at, comment_id`, args...)
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

// RetakeFeedback takes over f's claim if it was last touched before
// staleBefore, stamping it now: true means the caller holds it. One
// conditional UPDATE decides, so of two processes retaking it, one does.
func (s *Store) RetakeFeedback(ctx context.Context, f Feedback, staleBefore, now time.Time) (bool, error) {
	n, err := s.exec(ctx, `UPDATE feedback SET updated_at = ? WHERE repo = ? AND kind = ? AND comment_id = ? AND state = ? AND updated_at < ?`,
		fmtTime(now), strings.ToLower(f.Repo), f.Kind, f.ID, FeedbackClaimed, fmtTime(staleBefore))
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// ReleaseFeedback forgets a claim whose handling failed, so the comment
// is acted on when it is seen again.
func (s *Store) ReleaseFeedback(ctx context.Context, f Feedback) error {
	_, err := s.exec(ctx, `DELETE FROM feedback WHERE repo = ? AND kind = ? AND comment_id = ?`, strings.ToLower(f.Repo), f.Kind, f.ID)
	return err
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
