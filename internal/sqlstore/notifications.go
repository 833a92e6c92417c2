package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Notification states.
const (
	NotificationPending = "pending"
	NotificationSent    = "sent"
	NotificationFailed  = "failed" // retried until the attempts ran out
)

// Notification is news of a delivery to send to people: written in the
// transaction of the change it tells, sent by a server's notifier to
// every target, each once.
type Notification struct {
	ID         int64
	DeliveryID string
	// Event is delivery.waiting, delivery.failed or delivery.closed.
	Event string
	// Body is the JSON sent to webhooks, the source of every message.
	Body string
	// Done names the targets that took it.
	Done      []string
	Attempts  int
	NextAt    time.Time
	State     string
	LastError string
	CreatedAt time.Time
}

const notificationCols = `id, delivery_id, event, body, done, attempts, next_at, claimed_until, state, last_error, created_at`

// CreateNotification stores n as pending, due at once (filling n.ID).
func (s *Store) CreateNotification(ctx context.Context, n *Notification) error {
	n.State, n.NextAt = NotificationPending, n.CreatedAt
	err := s.row(ctx, `INSERT INTO notifications (delivery_id, event, body, done, attempts, next_at, state, created_at)
		VALUES (?, ?, ?, '', 0, ?, ?, ?) RETURNING id`, n.DeliveryID, n.Event, n.Body, fmtTime(n.NextAt), n.State, fmtTime(n.CreatedAt)).Scan(&n.ID)
	if err != nil {
		return fmt.Errorf("store a notification of %s: %w", n.DeliveryID, s.wrap(err))
	}
	return nil
}

// ClaimNotification takes the oldest pending notification due at now
// that nobody else holds, for lease: one conditional UPDATE decides, so
// two servers never send one at once. It returns nil when none is due.
func (s *Store) ClaimNotification(ctx context.Context, now time.Time, lease time.Duration) (*Notification, error) {
	for range 5 {
		var id int64
		err := s.row(ctx, `SELECT id FROM notifications WHERE state = ? AND next_at <= ? AND claimed_until <= ? ORDER BY next_at, id LIMIT 1`,
			NotificationPending, fmtTime(now), fmtTime(now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, s.wrap(err)
		}
		n, err := s.exec(ctx, `UPDATE notifications SET claimed_until = ? WHERE id = ? AND state = ? AND claimed_until <= ?`,
			fmtTime(now.Add(lease)), id, NotificationPending, fmtTime(now))
		if err != nil {
			return nil, err
		}
		if n == 1 {
			return s.notification(ctx, id)
		}
		// Another server took it first: look again.
	}
	return nil, nil
}

func (s *Store) notification(ctx context.Context, id int64) (*Notification, error) {
	var (
		n               Notification
		done, nx, cl, c string
	)
	err := s.row(ctx, `SELECT `+notificationCols+` FROM notifications WHERE id = ?`, id).Scan(
		&n.ID, &n.DeliveryID, &n.Event, &n.Body, &done, &n.Attempts, &nx, &cl, &n.State, &n.LastError, &c)
	if err != nil {
		return nil, s.wrap(err)
	}
	if done != "" {
		n.Done = strings.Split(done, ",")
	}
	if n.NextAt, err = parseTime(nx); err != nil {
		return nil, err
	}
	if n.CreatedAt, err = parseTime(c); err != nil {
		return nil, err
	}
	return &n, nil
}

// SaveNotification writes what a send did: the targets done, the
// attempts, the state, when to try again and why it failed. The claim
// ends.
func (s *Store) SaveNotification(ctx context.Context, n *Notification) error {
	slices.Sort(n.Done)
	_, err := s.exec(ctx, `UPDATE notifications SET done = ?, attempts = ?, next_at = ?, state = ?, last_error = ?, claimed_until = '' WHERE id = ?`,
		strings.Join(slices.Compact(n.Done), ","), n.Attempts, fmtTime(n.NextAt), n.State, n.LastError, n.ID)
	return err
}

// Notifications lists the notifications of a delivery ("" for all),
// oldest first.
func (s *Store) Notifications(ctx context.Context, deliveryID string) ([]Notification, error) {
	q := `SELECT id FROM notifications`
	var args []any
	if deliveryID != "" {
		q += ` WHERE delivery_id = ?`
		args = append(args, deliveryID)
	}
	rows, err := s.query(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	out := make([]Notification, 0, len(ids))
	for _, id := range ids {
		n, err := s.notification(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *n)
	}
	return out, nil
}

// PruneNotifications deletes notifications sent or given up on before
// before; it returns how many.
func (s *Store) PruneNotifications(ctx context.Context, before time.Time) (int64, error) {
	return s.exec(ctx, `DELETE FROM notifications WHERE state <> ? AND created_at < ?`, NotificationPending, fmtTime(before))
}
