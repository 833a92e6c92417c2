package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/baton-agent/baton"
)

// WebhookDelivery is one webhook as received: GitHub's delivery id (or,
// without one, a name derived from the body), the body's SHA-256, and
// until its job handled it, the event and its JSON payload; then what
// became of it.
type WebhookDelivery struct {
	ID         string
	BodySHA256 string
	ReceivedAt time.Time
	// Event is X-GitHub-Event; Payload the event's JSON, "" once handled.
	Event   string
	Payload string
	// Outcome and Reason say what handling it did.
	Outcome string
	Reason  string
}

// CreateWebhook records w unless a webhook with its id or its body was
// recorded at or after since: it returns true when w is new (the caller
// queues its handling in the same transaction), false for a replay.
// Records older than since are forgotten first. One INSERT decides, so of
// several servers receiving the same webhook exactly one gets true.
func (s *Store) CreateWebhook(ctx context.Context, w WebhookDelivery, since time.Time) (bool, error) {
	if _, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < ?`, fmtTime(since)); err != nil {
		return false, err
	}
	n, err := s.exec(ctx, `INSERT INTO webhook_deliveries (delivery_id, body_sha256, received_at, event, payload, outcome, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		w.ID, w.BodySHA256, fmtTime(w.ReceivedAt), w.Event, w.Payload, w.Outcome, w.Reason)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// FindWebhook returns the webhook recorded with id; NotFound when none is
// (never received, forgotten after the replay window, or released).
func (s *Store) FindWebhook(ctx context.Context, id string) (*WebhookDelivery, error) {
	var (
		w  WebhookDelivery
		at string
	)
	err := s.row(ctx, `SELECT delivery_id, body_sha256, received_at, event, payload, outcome, reason FROM webhook_deliveries WHERE delivery_id = ?`, id).Scan(
		&w.ID, &w.BodySHA256, &at, &w.Event, &w.Payload, &w.Outcome, &w.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no webhook delivery %s", id)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	if w.ReceivedAt, err = parseTime(at); err != nil {
		return nil, err
	}
	return &w, nil
}

// HandledWebhook records what became of the webhook with id and drops its
// payload: its replay memory stays for the window.
func (s *Store) HandledWebhook(ctx context.Context, id, outcome, reason string) error {
	_, err := s.exec(ctx, `UPDATE webhook_deliveries SET payload = '', outcome = ?, reason = ? WHERE delivery_id = ?`, outcome, reason, id)
	return err
}

// ReleaseWebhook forgets the webhook with id, so that GitHub's
// redelivery of one whose handling gave up is acted on.
func (s *Store) ReleaseWebhook(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE delivery_id = ?`, id)
	return err
}
