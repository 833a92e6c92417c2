package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

const sourceCols = `id, repo, api_url, label, endpoint, checkpoints, agent, paused, webhook_secret, listing,
	last_sync_at, last_ok_at, last_result, sync_error, rate_limit_reset, created_at, updated_at, draft, notify, setup, comment_webhook_at, comments_polled_at`

// encodeSourceCheckpoints keeps nil (the defaults) apart from none.
func encodeSourceCheckpoints(ps []baton.Phase) string {
	if ps == nil {
		return ""
	}
	if len(ps) == 0 {
		return "none"
	}
	return encodeCheckpoints(ps)
}

func (s *Store) sourceArgs(src *baton.Source) ([]any, error) {
	res, err := json.Marshal(src.Sync.Result)
	if err != nil {
		return nil, err
	}
	notify := ""
	if !src.Notify.IsZero() {
		b, err := json.Marshal(src.Notify)
		if err != nil {
			return nil, err
		}
		notify = string(b)
	}
	setup := ""
	if !src.Setup.IsZero() {
		b, err := json.Marshal(src.Setup)
		if err != nil {
			return nil, err
		}
		setup = string(b)
	}
	return []any{src.ID, src.Repo, src.APIURL, src.Label, string(src.Endpoint), encodeSourceCheckpoints(src.Checkpoints), src.Agent,
		b2i(src.Paused), src.WebhookSecret, src.Listing, fmtTime(src.Sync.LastSyncAt), fmtTime(src.Sync.LastOKAt), string(res),
		src.Sync.Error, fmtTime(src.Sync.RateLimitReset), fmtTime(src.CreatedAt), fmtTime(src.UpdatedAt),
		string(src.Draft), notify, setup, fmtTime(src.CommentWebhookAt), fmtTime(src.CommentsPolledAt)}, nil
}

// CreateSource inserts src. Returns Conflict when the repository has a
// source already, Invalid when src fails Validate.
func (s *Store) CreateSource(ctx context.Context, src *baton.Source) error {
	if err := src.Validate(); err != nil {
		return err
	}
	args, err := s.sourceArgs(src)
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `INSERT INTO sources (`+sourceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
		if baton.ErrorCode(err) == baton.Conflict {
			return baton.WrapError(baton.Conflict, err, "%s already has a source: `baton source list` shows it", src.Repo)
		}
		return fmt.Errorf("insert source %s: %w", src.Repo, err)
	}
	return nil
}

// UpdateSource writes every field of src but CommentWebhookAt and
// CommentsPolledAt (SetCommentWebhook, SetCommentsPolled). Returns
// NotFound.
func (s *Store) UpdateSource(ctx context.Context, src *baton.Source) error {
	if err := src.Validate(); err != nil {
		return err
	}
	args, err := s.sourceArgs(src)
	if err != nil {
		return err
	}
	// comment_webhook_at and comments_polled_at are left to their own
	// setters: a sync that read the source earlier must not undo them.
	args = args[:len(args)-2]
	n, err := s.exec(ctx, `UPDATE sources SET repo = ?, api_url = ?, label = ?, endpoint = ?, checkpoints = ?, agent = ?, paused = ?,
		webhook_secret = ?, listing = ?, last_sync_at = ?, last_ok_at = ?, last_result = ?, sync_error = ?, rate_limit_reset = ?,
		created_at = ?, updated_at = ?, draft = ?, notify = ?, setup = ? WHERE id = ?`, append(args[1:], args[0])...)
	if err != nil {
		return fmt.Errorf("update source %s: %w", src.ID, err)
	}
	if n == 0 {
		return baton.Errorf(baton.NotFound, "no source %s: `baton source list` shows them", src.ID)
	}
	return nil
}

// DeleteSource removes the source with id; the deliveries it created
// stay. Returns NotFound.
func (s *Store) DeleteSource(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `DELETE FROM sources WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return baton.Errorf(baton.NotFound, "no source %s: `baton source list` shows them", id)
	}
	return nil
}

// FindSource finds a source by id or by repository. Returns NotFound.
func (s *Store) FindSource(ctx context.Context, ref string) (*baton.Source, error) {
	src, err := scanSource(s.row(ctx, `SELECT `+sourceCols+` FROM sources WHERE id = ? OR LOWER(repo) = ?`, ref, strings.ToLower(ref)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no source %q: `baton source list` shows them", baton.Truncate(ref, 100, "…"))
	}
	return src, s.wrap(err)
}

// Sources lists every source by repository.
func (s *Store) Sources(ctx context.Context) ([]*baton.Source, error) {
	rows, err := s.query(ctx, `SELECT `+sourceCols+` FROM sources ORDER BY repo`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*baton.Source
	for rows.Next() {
		src, err := scanSource(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, s.wrap(rows.Err())
}

func scanSource(r Row) (*baton.Source, error) {
	var (
		src                                  baton.Source
		endpoint, cps, res, ls, lo, rl, c, u string
		draft, notify, setup, cw, cp         string
		paused                               int64
	)
	if err := r.Scan(&src.ID, &src.Repo, &src.APIURL, &src.Label, &endpoint, &cps, &src.Agent, &paused, &src.WebhookSecret,
		&src.Listing, &ls, &lo, &res, &src.Sync.Error, &rl, &c, &u, &draft, &notify, &setup, &cw, &cp); err != nil {
		return nil, err
	}
	src.Endpoint, src.Paused, src.Draft = baton.Phase(endpoint), paused != 0, baton.DraftMode(draft)
	if notify != "" {
		if err := json.Unmarshal([]byte(notify), &src.Notify); err != nil {
			return nil, fmt.Errorf("source %s: decode notification targets: %w", src.ID, err)
		}
	}
	if setup != "" {
		if err := json.Unmarshal([]byte(setup), &src.Setup); err != nil {
			return nil, fmt.Errorf("source %s: decode set-up: %w", src.ID, err)
		}
	}
	switch cps {
	case "":
	case "none":
		src.Checkpoints = []baton.Phase{}
	default:
		for _, p := range strings.Split(cps, ",") {
			src.Checkpoints = append(src.Checkpoints, baton.Phase(p))
		}
	}
	if res != "" {
		if err := json.Unmarshal([]byte(res), &src.Sync.Result); err != nil {
			return nil, fmt.Errorf("source %s: decode last result: %w", src.ID, err)
		}
	}
	var err error
	for _, t := range []struct {
		s   string
		dst *time.Time
	}{{ls, &src.Sync.LastSyncAt}, {lo, &src.Sync.LastOKAt}, {rl, &src.Sync.RateLimitReset}, {c, &src.CreatedAt}, {u, &src.UpdatedAt}, {cw, &src.CommentWebhookAt}, {cp, &src.CommentsPolledAt}} {
		if *t.dst, err = parseTime(t.s); err != nil {
			return nil, err
		}
	}
	return &src, nil
}

// SourceIssue is an issue a source made a delivery of.
type SourceIssue struct {
	SourceID   string
	Number     int
	DeliveryID string
	// Open is false once the issue was seen closed or unlabelled (and the
	// delivery closed for it).
	Open bool
}

// PutSourceIssue records (or updates) an issue of a source.
func (s *Store) PutSourceIssue(ctx context.Context, si SourceIssue, at time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO source_issues (source_id, number, delivery_id, open, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (source_id, number) DO UPDATE SET delivery_id = excluded.delivery_id, open = excluded.open, updated_at = excluded.updated_at`,
		si.SourceID, int64(si.Number), si.DeliveryID, b2i(si.Open), fmtTime(at))
	return err
}

// SourceIssues lists a source's issues; open only when openOnly.
func (s *Store) SourceIssues(ctx context.Context, sourceID string, openOnly bool) ([]SourceIssue, error) {
	q := `SELECT source_id, number, delivery_id, open FROM source_issues WHERE source_id = ?`
	if openOnly {
		q += ` AND open = 1`
	}
	rows, err := s.query(ctx, q+` ORDER BY number`, sourceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SourceIssue
	for rows.Next() {
		var si SourceIssue
		var n, open int64
		if err := rows.Scan(&si.SourceID, &n, &si.DeliveryID, &open); err != nil {
			return nil, err
		}
		si.Number, si.Open = int(n), open != 0
		out = append(out, si)
	}
	return out, s.wrap(rows.Err())
}

// Setting reads a named setting's JSON into v; found is false when it
// was never set.
func (s *Store) Setting(ctx context.Context, name string, v any) (found bool, err error) {
	var raw string
	err = s.row(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap(err)
	}
	return true, json.Unmarshal([]byte(raw), v)
}

// PutSetting stores v as the named setting's JSON.
func (s *Store) PutSetting(ctx context.Context, name string, v any, at time.Time) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, `INSERT INTO settings (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, string(b), fmtTime(at))
	return err
}
