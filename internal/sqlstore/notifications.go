package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Notification is news of a delivery to send to people: written in the
// transaction of the change it tells, with the River job that sends it
// to every target, each once; deleted when every target took it or its
// job gave up.
type Notification struct {
	ID         int64
	DeliveryID string
	// Event is delivery.waiting, delivery.failed or delivery.closed.
	Event string
	// Body is the JSON sent to webhooks, the source of every message.
	Body string
	// Done names the targets that took it.
	Done      []string
	CreatedAt time.Time
}

// CreateNotification stores n (filling n.ID).
func (s *Store) CreateNotification(ctx context.Context, n *Notification) error {
	err := s.row(ctx, `INSERT INTO notifications (delivery_id, event, body, done, created_at) VALUES (?, ?, ?, '', ?) RETURNING id`,
		n.DeliveryID, n.Event, n.Body, fmtTime(n.CreatedAt)).Scan(&n.ID)
	if err != nil {
		return fmt.Errorf("store a notification of %s: %w", n.DeliveryID, s.wrap(err))
	}
	return nil
}

// FindNotification returns the notification with id; NotFound once it
// was sent or given up.
func (s *Store) FindNotification(ctx context.Context, id int64) (*Notification, error) {
	var (
		n       Notification
		done, c string
	)
	err := s.row(ctx, `SELECT id, delivery_id, event, body, done, created_at FROM notifications WHERE id = ?`, id).Scan(
		&n.ID, &n.DeliveryID, &n.Event, &n.Body, &done, &c)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no notification %d", id)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	if done != "" {
		n.Done = strings.Split(done, ",")
	}
	if n.CreatedAt, err = parseTime(c); err != nil {
		return nil, err
	}
	return &n, nil
}

// SetNotificationDone records the targets that took notification id.
func (s *Store) SetNotificationDone(ctx context.Context, id int64, done []string) error {
	done = slices.Compact(slices.Sorted(slices.Values(done)))
	_, err := s.exec(ctx, `UPDATE notifications SET done = ? WHERE id = ?`, strings.Join(done, ","), id)
	return err
}

// DeleteNotification forgets notification id: every target took it, or
// its job gave up.
func (s *Store) DeleteNotification(ctx context.Context, id int64) error {
	_, err := s.exec(ctx, `DELETE FROM notifications WHERE id = ?`, id)
	return err
}

// NotificationIDs lists the notifications of a delivery ("" for all) in
// flight, oldest first.
func (s *Store) NotificationIDs(ctx context.Context, deliveryID string) ([]int64, error) {
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
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, s.wrap(rows.Err())
}
