package sqlstore

import (
	"context"
	"time"
)

// WebhookDelivery is one webhook as received: GitHub's delivery id (or,
// without one, a name derived from the body) and the body's SHA-256.
type WebhookDelivery struct {
	ID         string
	BodySHA256 string
	ReceivedAt time.Time
}

// ClaimWebhook records w unless a webhook with its id or its body was
// recorded at or after since: it returns true when w is new (the caller
// acts on it), false for a replay. Records older than since are
// forgotten first. One INSERT decides, so of several servers receiving
// the same webhook exactly one gets true.
func (s *Store) ClaimWebhook(ctx context.Context, w WebhookDelivery, since time.Time) (bool, error) {
	if _, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE received_at < ?`, fmtTime(since)); err != nil {
		return false, err
	}
	n, err := s.exec(ctx, `INSERT INTO webhook_deliveries (delivery_id, body_sha256, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		w.ID, w.BodySHA256, fmtTime(w.ReceivedAt))
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// ReleaseWebhook forgets the webhook with id, so that GitHub's
// redelivery of one whose handling failed is acted on.
func (s *Store) ReleaseWebhook(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `DELETE FROM webhook_deliveries WHERE delivery_id = ?`, id)
	return err
}
