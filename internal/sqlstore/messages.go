package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/baton-agent/baton"
)

// CreateMessage stores m (filling m.ID), waiting to be delivered.
func (s *Store) CreateMessage(ctx context.Context, m *baton.Message) error {
	err := s.row(ctx, `INSERT INTO messages (delivery_id, phase, attempt, actor, text, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		m.DeliveryID, string(m.Phase), m.Attempt, m.Actor, m.Text, fmtTime(m.CreatedAt)).Scan(&m.ID)
	if err != nil {
		return fmt.Errorf("store a message to %s: %w", m.DeliveryID, s.wrap(err))
	}
	return nil
}

const messageCols = `id, delivery_id, phase, attempt, actor, text, created_at, delivered_at, outcome`

func scanMessage(r Row) (*baton.Message, error) {
	var (
		m                 baton.Message
		phase, c, deliver string
	)
	if err := r.Scan(&m.ID, &m.DeliveryID, &phase, &m.Attempt, &m.Actor, &m.Text, &c, &deliver, &m.Outcome); err != nil {
		return nil, err
	}
	m.Phase = baton.Phase(phase)
	var err error
	if m.CreatedAt, err = parseTime(c); err != nil {
		return nil, err
	}
	if m.DeliveredAt, err = parseTime(deliver); err != nil {
		return nil, err
	}
	return &m, nil
}

// FindMessage returns message id.
func (s *Store) FindMessage(ctx context.Context, id int64) (*baton.Message, error) {
	m, err := scanMessage(s.row(ctx, `SELECT `+messageCols+` FROM messages WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no message %d", id)
	}
	return m, s.wrap(err)
}

// Messages returns the delivery's messages, oldest first; waiting ones
// only when pending is set.
func (s *Store) Messages(ctx context.Context, deliveryID string, pending bool) ([]baton.Message, error) {
	q := `SELECT ` + messageCols + ` FROM messages WHERE delivery_id = ?`
	if pending {
		q += ` AND delivered_at = ''`
	}
	rows, err := s.query(ctx, q+` ORDER BY id`, deliveryID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []baton.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *m)
	}
	return out, s.wrap(rows.Err())
}

// DeliverMessage records that message id reached its agent, or that its
// run ended without it (outcome says which), once: it reports false when
// the message was delivered already.
func (s *Store) DeliverMessage(ctx context.Context, id int64, outcome string, at time.Time) (bool, error) {
	n, err := s.exec(ctx, `UPDATE messages SET delivered_at = ?, outcome = ? WHERE id = ? AND delivered_at = ''`, fmtTime(at), outcome, id)
	if err != nil {
		return false, s.wrap(err)
	}
	return n == 1, nil
}
