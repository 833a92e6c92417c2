package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/baton-agent/baton"
)

// CreateSetupRun stores r, a set-up that ended, filling ID and N.
func (s *Store) CreateSetupRun(ctx context.Context, r *baton.SetupRun) error {
	cmds := []byte("[]")
	if len(r.Commands) > 0 {
		cmds, _ = json.Marshal(r.Commands) // strings always marshal
	}
	err := s.row(ctx, `INSERT INTO setup_runs (delivery_id, n, phase, attempt, status, commands, ran, exit_code, output, log, note, started_at, ended_at)
		SELECT ?, COALESCE(MAX(n), 0) + 1, ?, CAST(? AS BIGINT), ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ?, ?, ?, ? FROM setup_runs WHERE delivery_id = ?
		RETURNING id, n`,
		r.DeliveryID, string(r.Phase), r.Attempt, string(r.Status), string(cmds), r.Ran, r.ExitCode, r.Output, r.Log, r.Note,
		fmtTime(r.StartedAt), fmtTime(r.EndedAt), r.DeliveryID).Scan(&r.ID, &r.N)
	if err != nil {
		return fmt.Errorf("store a set-up of %s: %w", r.DeliveryID, s.wrap(err))
	}
	return nil
}

// SetupRuns lists a delivery's set-ups, oldest first.
func (s *Store) SetupRuns(ctx context.Context, deliveryID string) ([]baton.SetupRun, error) {
	rows, err := s.query(ctx, `SELECT id, delivery_id, n, phase, attempt, status, commands, ran, exit_code, output, log, note, started_at, ended_at
		FROM setup_runs WHERE delivery_id = ? ORDER BY n`, deliveryID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []baton.SetupRun
	for rows.Next() {
		var (
			r                           baton.SetupRun
			n, ran, exit                int64
			phase, status, cmds, sa, ea string
		)
		if err := rows.Scan(&r.ID, &r.DeliveryID, &n, &phase, &r.Attempt, &status, &cmds, &ran, &exit, &r.Output, &r.Log, &r.Note, &sa, &ea); err != nil {
			return nil, err
		}
		r.N, r.Phase, r.Status, r.Ran, r.ExitCode = int(n), baton.Phase(phase), baton.SetupStatus(status), int(ran), int(exit)
		if err := json.Unmarshal([]byte(cmds), &r.Commands); err != nil {
			return nil, fmt.Errorf("set-up %d of %s: commands: %w", r.ID, deliveryID, err)
		}
		if r.StartedAt, err = parseTime(sa); err != nil {
			return nil, err
		}
		if r.EndedAt, err = parseTime(ea); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, s.wrap(rows.Err())
}
