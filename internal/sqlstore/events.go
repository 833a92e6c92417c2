package sqlstore

import (
	"context"
	"fmt"

	"github.com/baton-agent/baton"
)

// AppendEvents numbers evs after the delivery's last event and inserts
// them, filling each Seq. Taking the numbers updates the delivery's row,
// which holds its lock until the transaction ends: two writers on one
// delivery (a worker's output, a person's action) commit their events
// one after the other, so a reader never sees a later number before an
// earlier one. Call it in a transaction (Queue.InTx). Returns NotFound.
func (s *Store) AppendEvents(ctx context.Context, deliveryID string, evs []baton.DeliveryEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var last int64
	err := s.row(ctx, `UPDATE deliveries SET last_event = last_event + ? WHERE id = ? RETURNING last_event`,
		int64(len(evs)), deliveryID).Scan(&last)
	if err != nil {
		if _, ferr := s.FindDeliveryByID(ctx, deliveryID); ferr != nil {
			return ferr
		}
		return fmt.Errorf("number events of %s: %w", deliveryID, s.wrap(err))
	}
	first := last - int64(len(evs)) + 1
	for i := range evs {
		e := &evs[i]
		e.DeliveryID, e.Seq = deliveryID, first+int64(i)
		e.Text = baton.Truncate(e.Text, baton.MaxEventText, "… [cut]")
		if _, err := s.exec(ctx, `INSERT INTO delivery_events (delivery_id, seq, kind, run_n, phase, status, text, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			deliveryID, e.Seq, string(e.Kind), int64(e.Run), string(e.Phase), string(e.Status), e.Text, fmtTime(e.At)); err != nil {
			return fmt.Errorf("insert event %d of %s: %w", e.Seq, deliveryID, err)
		}
	}
	return nil
}

// Events returns the delivery's events after seq, oldest first, at most
// limit of them (limit <= 0: all).
func (s *Store) Events(ctx context.Context, deliveryID string, after int64, limit int) ([]baton.DeliveryEvent, error) {
	q := `SELECT seq, kind, run_n, phase, status, text, at FROM delivery_events WHERE delivery_id = ? AND seq > ? ORDER BY seq`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.query(ctx, q, deliveryID, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []baton.DeliveryEvent
	for rows.Next() {
		var (
			e                       baton.DeliveryEvent
			kind, phase, status, at string
			run                     int64
		)
		if err := rows.Scan(&e.Seq, &kind, &run, &phase, &status, &e.Text, &at); err != nil {
			return nil, err
		}
		e.DeliveryID, e.Kind, e.Run, e.Phase, e.Status = deliveryID, baton.EventKind(kind), int(run), baton.Phase(phase), baton.RunStatus(status)
		if e.At, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, s.wrap(rows.Err())
}

// LastEvent returns the number of the delivery's last event (0: none).
func (s *Store) LastEvent(ctx context.Context, deliveryID string) (int64, error) {
	var n int64
	if err := s.row(ctx, `SELECT last_event FROM deliveries WHERE id = ?`, deliveryID).Scan(&n); err != nil {
		if _, ferr := s.FindDeliveryByID(ctx, deliveryID); ferr != nil {
			return 0, ferr
		}
		return 0, s.wrap(err)
	}
	return n, nil
}
