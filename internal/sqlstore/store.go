package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
)

// Store persists deliveries, their phase log, agent runs and review
// notes on one Querier. A store bound to a transaction (With) sees and
// writes that transaction only. Errors carry baton codes: NotFound,
// Conflict (a lost race), Unavailable (a busy database), Invalid.
//
// The delivery service calls the store directly rather than through an
// interface: its transactions come from the queue, which writes River's
// job rows in the same transaction, so only a real database can stand
// behind it, and SQLite is fast enough that tests use one.
type Store struct {
	dialect Dialect
	q       Querier
	// read, when set, serves queries outside transactions (a SQLite
	// database's read-only connections); writes always go through q.
	read Querier
	// tx says q is a transaction (With).
	tx bool
}

// New returns a store of dialect on q (a database or a transaction).
func New(dialect Dialect, q Querier) *Store { return &Store{dialect: dialect, q: q} }

// With returns the same store bound to q, a transaction the caller owns.
func (s *Store) With(q Querier) *Store { return &Store{dialect: s.dialect, q: q, tx: true} }

// Dialect returns the store's SQL dialect.
func (s *Store) Dialect() Dialect { return s.dialect }

// timeLayout is fixed-width, so text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(timeLayout, s)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (s *Store) exec(ctx context.Context, q string, args ...any) (int64, error) {
	n, err := s.q.Exec(ctx, rebind(s.dialect, q), withoutNUL(args)...)
	return n, s.wrap(err)
}

func (s *Store) query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := s.on(q).Query(ctx, rebind(s.dialect, q), withoutNUL(args)...)
	return rows, s.wrap(err)
}

func (s *Store) row(ctx context.Context, q string, args ...any) Row {
	return s.on(q).QueryRow(ctx, rebind(s.dialect, q), withoutNUL(args)...)
}

// withoutNUL replaces each NUL byte of args' strings with U+FFFD.
// PostgreSQL refuses a NUL in text, and much of what is stored is what
// a command or an agent printed: a NUL there must not lose the record
// (or the transition it belongs to). SQLite does the same, so both
// databases read back alike. args is copied only when it holds a NUL.
func withoutNUL(args []any) []any {
	var out []any
	for i, a := range args {
		s, ok := a.(string)
		if !ok || strings.IndexByte(s, 0) < 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(args)
		}
		out[i] = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if out == nil {
		return args
	}
	return out
}

// on is where s runs statement q: a SELECT on its read-only connections
// when it has them (never within a transaction: With drops them), anything
// else (an INSERT ... RETURNING) on q.
func (s *Store) on(q string) Querier {
	if s.read != nil && isSelect(q) {
		return s.read
	}
	return s.q
}

func isSelect(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	return len(q) >= 6 && strings.EqualFold(q[:6], "select")
}

// wrap classifies driver errors: locked or unreachable → Unavailable,
// constraint → Conflict, a canceled context → Canceled.
func (s *Store) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return baton.WrapError(baton.Canceled, err, "database call canceled")
	case isBusy(err):
		return baton.WrapError(baton.Unavailable, err, "the database is busy: try again")
	case isUniqueViolation(err):
		return baton.WrapError(baton.Conflict, err, "already exists")
	}
	return err
}

const deliveryCols = `id, seq, summary, repository, forge, phase, run_status, endpoint, checkpoints, refs, config,
	error, queued, attempt, rounds, lost, version, owner, heartbeat_at, created_at, updated_at, canceled, stall`

func encodeCheckpoints(ps []baton.Phase) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ",")
}

// maxSeqTries bounds CreateDelivery's tries at a free seq.
const maxSeqTries = 1000

// CreateDelivery inserts d with the next seq, unless a delivery with
// d.ID exists: then it returns that one and created=false, changing
// nothing. Returns Invalid for a delivery that fails Validate.
func (s *Store) CreateDelivery(ctx context.Context, d *baton.Delivery) (*baton.Delivery, bool, error) {
	if err := d.Validate(); err != nil {
		return nil, false, err
	}
	refs, err := json.Marshal(nonNil(d.Refs))
	if err != nil {
		return nil, false, err
	}
	cfg, err := json.Marshal(d.Config)
	if err != nil {
		return nil, false, err
	}
	stall, err := json.Marshal(d.Stall)
	if err != nil {
		return nil, false, err
	}
	// Two creates at once may take the same seq (PostgreSQL): the loser
	// takes the next. Within a transaction, PostgreSQL aborts the whole
	// transaction at the loser's conflict, unless the insert ran under a
	// savepoint it goes back to. A conflict means another create has
	// committed that seq, so each try makes progress: with n creates at
	// once, the last may lose n-1 times (16 webhook jobs at once lost more
	// than the 5 tries this once allowed). The bound only stops a loop
	// that would make none.
	savepoint := s.tx && s.dialect == Postgres
	for try := 0; ; try++ {
		if savepoint {
			if _, err := s.exec(ctx, `SAVEPOINT create_delivery`); err != nil {
				return nil, false, err
			}
		}
		n, err := s.exec(ctx, `INSERT INTO deliveries (`+deliveryCols+`)
			SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
				CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), 1, ?, ?, ?, ?, CAST(? AS BIGINT), ?
			FROM deliveries WHERE TRUE
			ON CONFLICT (id) DO NOTHING`,
			d.ID, d.Summary, d.Repository, string(d.Forge), string(d.Phase), string(d.RunStatus), string(d.Endpoint),
			encodeCheckpoints(d.Checkpoints), string(refs), string(cfg), d.Error, b2i(d.Queued), d.Attempt, d.Rounds, d.Lost,
			d.Owner, fmtTime(d.HeartbeatAt), fmtTime(d.CreatedAt), fmtTime(d.UpdatedAt), b2i(d.Canceled), string(stall))
		if baton.ErrorCode(err) == baton.Conflict && try < maxSeqTries {
			if savepoint {
				if _, err := s.exec(ctx, `ROLLBACK TO SAVEPOINT create_delivery`); err != nil {
					return nil, false, err
				}
			}
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("insert delivery %s: %w", d.ID, err)
		}
		if savepoint {
			if _, err := s.exec(ctx, `RELEASE SAVEPOINT create_delivery`); err != nil {
				return nil, false, err
			}
		}
		got, err := s.FindDeliveryByID(ctx, d.ID)
		return got, n == 1, err
	}
}

// FindDeliveryByID returns NotFound when there is no such delivery.
func (s *Store) FindDeliveryByID(ctx context.Context, id string) (*baton.Delivery, error) {
	d, err := scanDelivery(s.row(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no delivery %s: `baton delivery list` shows them", id)
	}
	return d, s.wrap(err)
}

// FindDeliveryBySeq returns NotFound when no delivery has seq.
func (s *Store) FindDeliveryBySeq(ctx context.Context, seq int64) (*baton.Delivery, error) {
	d, err := scanDelivery(s.row(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE seq = ?`, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, baton.Errorf(baton.NotFound, "no delivery #%d: `baton delivery list` shows them", seq)
	}
	return d, s.wrap(err)
}

// FindDeliveriesByPrefix lists deliveries whose id starts with prefix.
func (s *Store) FindDeliveriesByPrefix(ctx context.Context, prefix string) ([]*baton.Delivery, error) {
	if strings.ContainsAny(prefix, "%_\\") {
		return nil, nil
	}
	return s.list(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id LIKE ? ORDER BY seq LIMIT 10`, prefix+"%")
}

// FindDeliveries lists deliveries newest first (with AfterSeq, the
// oldest ones after it, still newest first).
func (s *Store) FindDeliveries(ctx context.Context, f baton.DeliveryFilter) ([]*baton.Delivery, error) {
	where, args := deliveryWhere(f)
	q := `SELECT ` + deliveryCols + ` FROM deliveries WHERE ` + where
	if f.AfterSeq > 0 {
		// The page just newer than AfterSeq: the lowest numbers above it.
		q = `SELECT ` + deliveryCols + ` FROM (` + q + ` ORDER BY seq ASC`
		if f.Limit > 0 {
			q += fmt.Sprintf(` LIMIT %d`, f.Limit)
		}
		return s.list(ctx, q+`) AS page ORDER BY seq DESC`, args...)
	}
	if f.Waiting {
		// The longest waiting first: nothing changes a delivery while
		// it waits for a person, so its last change is when it began.
		q += ` ORDER BY updated_at ASC, seq ASC`
		if f.Limit > 0 {
			q += fmt.Sprintf(` LIMIT %d`, f.Limit)
		}
		if f.Offset > 0 {
			q += fmt.Sprintf(` OFFSET %d`, f.Offset)
		}
		return s.list(ctx, q, args...)
	}
	q += ` ORDER BY seq DESC`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return s.list(ctx, q, args...)
}

// CountMatching counts the deliveries f keeps, whatever its Limit.
func (s *Store) CountMatching(ctx context.Context, f baton.DeliveryFilter) (int64, error) {
	where, args := deliveryWhere(f)
	var n int64
	err := s.row(ctx, `SELECT CAST(COUNT(*) AS BIGINT) FROM deliveries WHERE `+where, args...).Scan(&n)
	return n, s.wrap(err)
}

// CountStates counts deliveries by phase, run status and whether their
// pending phase is queued.
func (s *Store) CountStates(ctx context.Context) (map[StateCount]int64, error) {
	rows, err := s.query(ctx, `SELECT phase, run_status, queued, CAST(COUNT(*) AS BIGINT) FROM deliveries GROUP BY phase, run_status, queued`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[StateCount]int64{}
	for rows.Next() {
		var p, st string
		var q, n int64
		if err := rows.Scan(&p, &st, &q, &n); err != nil {
			return nil, err
		}
		out[StateCount{Phase: baton.Phase(p), Status: baton.RunStatus(st), Queued: q != 0}] += n
	}
	return out, s.wrap(rows.Err())
}

// StateCount is a state deliveries are counted by.
type StateCount struct {
	Phase  baton.Phase
	Status baton.RunStatus
	Queued bool
}

// deliveryWhere is the WHERE clause of f and its arguments.
func deliveryWhere(f baton.DeliveryFilter) (string, []any) {
	q := `1 = 1`
	var args []any
	if f.Phase != "" {
		q += ` AND phase = ?`
		args = append(args, string(f.Phase))
	}
	if f.RunStatus != "" {
		q += ` AND run_status = ?`
		args = append(args, string(f.RunStatus))
	}
	switch {
	case f.Open && !f.Closed:
		q += ` AND phase <> 'close'`
	case f.Closed && !f.Open:
		q += ` AND phase = 'close'`
	}
	if f.Waiting {
		// Delivery.WaitsForPerson, as SQL.
		q += ` AND phase <> 'close' AND (run_status IN ('succeeded', 'failed', 'blocked') OR run_status = 'pending' AND queued = 0 AND phase <> 'intake')`
	}
	if f.Search != "" {
		like := "%" + likeEscape(strings.ToLower(f.Search)) + "%"
		q += ` AND (LOWER(id) LIKE ? ESCAPE '\' OR LOWER(summary) LIKE ? ESCAPE '\' OR LOWER(repository) LIKE ? ESCAPE '\')`
		args = append(args, like, like, like)
	}
	if f.BeforeSeq > 0 {
		q += ` AND seq < ?`
		args = append(args, f.BeforeSeq)
	}
	if f.AfterSeq > 0 {
		q += ` AND seq > ?`
		args = append(args, f.AfterSeq)
	}
	return q, args
}

// likeEscape escapes LIKE's wildcards, with backslash as ESCAPE.
func likeEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `%`, `\%`)
	return strings.ReplaceAll(s, `_`, `\_`)
}

// CountDeliveries counts deliveries by phase and run status.
func (s *Store) CountDeliveries(ctx context.Context) (map[[2]string]int64, error) {
	rows, err := s.query(ctx, `SELECT phase, run_status, CAST(COUNT(*) AS BIGINT) FROM deliveries GROUP BY phase, run_status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]int64{}
	for rows.Next() {
		var p, st string
		var n int64
		if err := rows.Scan(&p, &st, &n); err != nil {
			return nil, err
		}
		out[[2]string{p, st}] = n
	}
	return out, s.wrap(rows.Err())
}

// AgentTotals are the sums over all agent runs of one agent.
type AgentTotals struct {
	Agent                     string
	Runs                      int64
	CostUSD                   float64
	InputTokens, OutputTokens int64
}

// SumAgentRuns sums cost and tokens of every agent run, per agent.
func (s *Store) SumAgentRuns(ctx context.Context) ([]AgentTotals, error) {
	rows, err := s.query(ctx, `SELECT agent, CAST(COUNT(*) AS BIGINT), COALESCE(SUM(cost_usd), 0), CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT)
		FROM agent_runs GROUP BY agent ORDER BY agent`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AgentTotals
	for rows.Next() {
		var a AgentTotals
		if err := rows.Scan(&a.Agent, &a.Runs, &a.CostUSD, &a.InputTokens, &a.OutputTokens); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, s.wrap(rows.Err())
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int64
	return s.wrap(s.row(ctx, `SELECT 1`).Scan(&n))
}

// FindStaleRunning lists running deliveries whose heartbeat is older
// than before.
func (s *Store) FindStaleRunning(ctx context.Context, before time.Time) ([]*baton.Delivery, error) {
	return s.list(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE run_status = 'running' AND heartbeat_at < ? ORDER BY seq`, fmtTime(before))
}

func (s *Store) list(ctx context.Context, q string, args ...any) ([]*baton.Delivery, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*baton.Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, s.wrap(rows.Err())
}

func scanDelivery(r Row) (*baton.Delivery, error) {
	var (
		d                                                      baton.Delivery
		forge, phase, status, endpoint, cps, refs, cfg, hb, ca string
		ua, stall                                              string
		queued, rounds, lost, canceled                         int64
	)
	err := r.Scan(&d.ID, &d.Seq, &d.Summary, &d.Repository, &forge, &phase, &status, &endpoint, &cps, &refs, &cfg,
		&d.Error, &queued, &d.Attempt, &rounds, &lost, &d.Version, &d.Owner, &hb, &ca, &ua, &canceled, &stall)
	if err != nil {
		return nil, err
	}
	d.Forge, d.Phase, d.RunStatus, d.Endpoint = baton.Forge(forge), baton.Phase(phase), baton.RunStatus(status), baton.Phase(endpoint)
	d.Queued, d.Rounds, d.Lost, d.Canceled = queued != 0, int(rounds), int(lost), canceled != 0
	d.Checkpoints = []baton.Phase{}
	if cps != "" {
		for _, p := range strings.Split(cps, ",") {
			d.Checkpoints = append(d.Checkpoints, baton.Phase(p))
		}
	}
	if err := json.Unmarshal([]byte(refs), &d.Refs); err != nil {
		return nil, fmt.Errorf("delivery %s: decode refs: %w", d.ID, err)
	}
	if err := json.Unmarshal([]byte(cfg), &d.Config); err != nil {
		return nil, fmt.Errorf("delivery %s: decode config: %w", d.ID, err)
	}
	if err := json.Unmarshal([]byte(stall), &d.Stall); err != nil {
		return nil, fmt.Errorf("delivery %s: decode stall: %w", d.ID, err)
	}
	if d.HeartbeatAt, err = parseTime(hb); err != nil {
		return nil, err
	}
	if d.CreatedAt, err = parseTime(ca); err != nil {
		return nil, err
	}
	if d.UpdatedAt, err = parseTime(ua); err != nil {
		return nil, err
	}
	return &d, nil
}

func nonNil(refs []baton.Ref) []baton.Ref {
	if refs == nil {
		return []baton.Ref{}
	}
	return refs
}

// UpdateDelivery writes d's mutable fields if the stored version is
// still d.Version, and increments d.Version. Returns NotFound, or
// Conflict when someone else changed the delivery first.
func (s *Store) UpdateDelivery(ctx context.Context, d *baton.Delivery) error {
	refs, err := json.Marshal(nonNil(d.Refs))
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(d.Config)
	if err != nil {
		return err
	}
	stall, err := json.Marshal(d.Stall)
	if err != nil {
		return err
	}
	n, err := s.exec(ctx, `UPDATE deliveries SET phase = ?, run_status = ?, refs = ?, error = ?, queued = ?, attempt = ?,
		rounds = ?, lost = ?, owner = ?, heartbeat_at = ?, updated_at = ?, config = ?, canceled = ?, stall = ?, version = version + 1
		WHERE id = ? AND version = ?`,
		string(d.Phase), string(d.RunStatus), string(refs), d.Error, b2i(d.Queued), d.Attempt, d.Rounds, d.Lost,
		d.Owner, fmtTime(d.HeartbeatAt), fmtTime(d.UpdatedAt), string(cfg), b2i(d.Canceled), string(stall), d.ID, d.Version)
	if err != nil {
		return fmt.Errorf("update delivery %s: %w", d.ID, err)
	}
	if n == 0 {
		if _, err := s.FindDeliveryByID(ctx, d.ID); err != nil {
			return err
		}
		return baton.Errorf(baton.Conflict, "delivery %s changed while this change was being made: look again with `baton delivery show %s`", d.ID, d.ID)
	}
	d.Version++
	return nil
}

// LockDelivery takes the delivery's row for the rest of the transaction
// the store is bound to, as a change to it would, without changing it:
// a decision that reads the delivery and writes elsewhere (feedback left
// to wait) is then ordered with every change of the delivery, never
// beside one. NotFound when there is no such delivery.
func (s *Store) LockDelivery(ctx context.Context, id string) error {
	n, err := s.exec(ctx, `UPDATE deliveries SET version = version WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("lock delivery %s: %w", id, err)
	}
	if n == 0 {
		return baton.Errorf(baton.NotFound, "no delivery %s", id)
	}
	return nil
}

// Heartbeat records that owner still runs attempt. Returns Conflict
// when the delivery is no longer running that attempt.
func (s *Store) Heartbeat(ctx context.Context, id string, attempt int64, at time.Time) error {
	n, err := s.exec(ctx, `UPDATE deliveries SET heartbeat_at = ? WHERE id = ? AND attempt = ? AND run_status = 'running'`, fmtTime(at), id, attempt)
	if err != nil {
		return err
	}
	if n == 0 {
		return baton.Errorf(baton.Conflict, "delivery %s is no longer running attempt %d", id, attempt)
	}
	return nil
}

// AppendPhaseLog ends the delivery's open entry at e.StartedAt and
// appends e (filling e.ID).
func (s *Store) AppendPhaseLog(ctx context.Context, deliveryID string, e *baton.PhaseLogEntry) error {
	if _, err := s.exec(ctx, `UPDATE phase_log SET ended_at = ? WHERE delivery_id = ? AND ended_at = ''`, fmtTime(e.StartedAt), deliveryID); err != nil {
		return fmt.Errorf("end open phase log entry of %s: %w", deliveryID, err)
	}
	err := s.row(ctx, `INSERT INTO phase_log (delivery_id, phase, status, executor, verdict, actor, action, note, decision, reason, waits, attempt, started_at, ended_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		deliveryID, string(e.Phase), string(e.Status), string(e.Executor), string(e.Verdict), e.Actor, e.Action, e.Note, e.Decision, e.Reason, b2i(e.Waits), e.Attempt,
		fmtTime(e.StartedAt), fmtTime(e.EndedAt)).Scan(&e.ID)
	if err != nil {
		return fmt.Errorf("append phase log of %s: %w", deliveryID, s.wrap(err))
	}
	return nil
}

// PhaseLog returns the entries oldest first.
func (s *Store) PhaseLog(ctx context.Context, deliveryID string) ([]baton.PhaseLogEntry, error) {
	logs, err := s.phaseLogs(ctx, `delivery_id = ?`, deliveryID)
	return logs[deliveryID], err
}

// phaseLogs reads the phase log entries where says, by delivery, each
// oldest first.
func (s *Store) phaseLogs(ctx context.Context, where string, args ...any) (map[string][]baton.PhaseLogEntry, error) {
	rows, err := s.query(ctx, `SELECT delivery_id, id, phase, status, executor, verdict, actor, action, note, decision, reason, waits, attempt, started_at, ended_at
		FROM phase_log WHERE `+where+` ORDER BY delivery_id, id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]baton.PhaseLogEntry{}
	for rows.Next() {
		var (
			e                                            baton.PhaseLogEntry
			id, phase, status, executor, verdict, sa, ea string
			waits                                        int64
		)
		if err := rows.Scan(&id, &e.ID, &phase, &status, &executor, &verdict, &e.Actor, &e.Action, &e.Note, &e.Decision, &e.Reason, &waits, &e.Attempt, &sa, &ea); err != nil {
			return nil, err
		}
		e.Waits = waits != 0
		e.Phase, e.Status, e.Executor, e.Verdict = baton.Phase(phase), baton.RunStatus(status), baton.Executor(executor), baton.Verdict(verdict)
		if e.StartedAt, err = parseTime(sa); err != nil {
			return nil, err
		}
		if e.EndedAt, err = parseTime(ea); err != nil {
			return nil, err
		}
		out[id] = append(out[id], e)
	}
	return out, s.wrap(rows.Err())
}

// DeliveryRecord is a delivery with its phase log and what its agent
// runs spent: what figures over many deliveries are made of.
type DeliveryRecord struct {
	Delivery                  *baton.Delivery
	Log                       []baton.PhaseLogEntry
	CostUSD                   float64
	InputTokens, OutputTokens int64
}

// DeliveriesCreated reads every delivery created in [since, until) (a
// zero until is no end), oldest first, with its phase log and its agent
// runs' sums: three queries, whatever the number.
func (s *Store) DeliveriesCreated(ctx context.Context, since, until time.Time) ([]DeliveryRecord, error) {
	in := `created_at >= ?`
	args := []any{fmtTime(since)}
	if !until.IsZero() {
		in += ` AND created_at < ?`
		args = append(args, fmtTime(until))
	}
	ds, err := s.list(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE `+in+` ORDER BY seq`, args...)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	logs, err := s.phaseLogs(ctx, `delivery_id IN (SELECT id FROM deliveries WHERE `+in+`)`, args...)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT delivery_id, COALESCE(SUM(cost_usd), 0), CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT)
		FROM agent_runs WHERE delivery_id IN (SELECT id FROM deliveries WHERE `+in+`) GROUP BY delivery_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type spent struct {
		cost    float64
		in, out int64
	}
	runs := map[string]spent{}
	for rows.Next() {
		var id string
		var sp spent
		if err := rows.Scan(&id, &sp.cost, &sp.in, &sp.out); err != nil {
			return nil, err
		}
		runs[id] = sp
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	out := make([]DeliveryRecord, len(ds))
	for i, d := range ds {
		sp := runs[d.ID]
		out[i] = DeliveryRecord{Delivery: d, Log: logs[d.ID], CostUSD: sp.cost, InputTokens: sp.in, OutputTokens: sp.out}
	}
	return out, nil
}

const runCols = `id, delivery_id, n, phase, attempt, agent, status, prompt, system_prompt, final_message, model, session_id,
	cost_usd, input_tokens, output_tokens, duration_ns, exit_code, error, log_dir, started_at, ended_at`

// CreateAgentRun inserts r as running, filling ID and N. Returns
// Conflict when another run of the delivery is running.
func (s *Store) CreateAgentRun(ctx context.Context, r *baton.AgentRun) error {
	r.Status = baton.RunRunning
	err := s.row(ctx, `INSERT INTO agent_runs (delivery_id, n, phase, attempt, agent, status, prompt, system_prompt, log_dir, started_at)
		SELECT ?, COALESCE(MAX(n), 0) + 1, ?, CAST(? AS BIGINT), ?, ?, ?, ?, ?, ? FROM agent_runs WHERE delivery_id = ?
		RETURNING id, n`,
		r.DeliveryID, string(r.Phase), r.Attempt, r.Agent, string(r.Status), r.Prompt, r.SystemPrompt, r.LogDir, fmtTime(r.StartedAt), r.DeliveryID).Scan(&r.ID, &r.N)
	if err := s.wrap(err); err != nil {
		if baton.ErrorCode(err) == baton.Conflict {
			return baton.WrapError(baton.Conflict, err, "delivery %s already has a running agent run", r.DeliveryID)
		}
		return fmt.Errorf("insert agent run of %s: %w", r.DeliveryID, err)
	}
	return nil
}

// FinishAgentRun writes r's results. A run someone else already ended
// (canceled by a person, failed as lost by the reconciler) keeps that
// status and reason; its results are still recorded. Returns NotFound.
func (s *Store) FinishAgentRun(ctx context.Context, r *baton.AgentRun) error {
	n, err := s.exec(ctx, `UPDATE agent_runs SET
		status = CASE WHEN status <> 'running' THEN status ELSE ? END,
		error = CASE WHEN status <> 'running' AND error <> '' THEN error ELSE ? END,
		final_message = ?, model = ?, session_id = ?, cost_usd = ?, input_tokens = ?, output_tokens = ?,
		duration_ns = ?, exit_code = ?, log_dir = ?, ended_at = ?
		WHERE id = ?`,
		string(r.Status), r.Error, r.FinalMessage, r.Model, r.SessionID, r.CostUSD, r.InputTokens, r.OutputTokens,
		int64(r.Duration), r.ExitCode, r.LogDir, fmtTime(r.EndedAt), r.ID)
	if err != nil {
		return fmt.Errorf("finish agent run %d: %w", r.ID, err)
	}
	if n == 0 {
		return baton.Errorf(baton.NotFound, "no agent run %d", r.ID)
	}
	return nil
}

// EndRunningAgentRuns marks the delivery's running runs with status
// and reason (cancel, lost worker) and returns how many it marked.
func (s *Store) EndRunningAgentRuns(ctx context.Context, deliveryID string, status baton.AgentRunStatus, reason string, at time.Time) (int, error) {
	n, err := s.exec(ctx, `UPDATE agent_runs SET status = ?, error = ?, ended_at = ? WHERE delivery_id = ? AND status = 'running'`,
		string(status), reason, fmtTime(at), deliveryID)
	return int(n), err
}

// AgentRuns lists a delivery's runs, oldest first.
func (s *Store) AgentRuns(ctx context.Context, deliveryID string) ([]baton.AgentRun, error) {
	rows, err := s.query(ctx, `SELECT `+runCols+` FROM agent_runs WHERE delivery_id = ? ORDER BY n`, deliveryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []baton.AgentRun
	for rows.Next() {
		var (
			r                     baton.AgentRun
			phase, status, sa, ea string
			n, exit               int64
			dur                   int64
		)
		if err := rows.Scan(&r.ID, &r.DeliveryID, &n, &phase, &r.Attempt, &r.Agent, &status, &r.Prompt, &r.SystemPrompt,
			&r.FinalMessage, &r.Model, &r.SessionID, &r.CostUSD, &r.InputTokens, &r.OutputTokens, &dur, &exit, &r.Error,
			&r.LogDir, &sa, &ea); err != nil {
			return nil, err
		}
		r.N, r.Phase, r.Status, r.Duration, r.ExitCode = int(n), baton.Phase(phase), baton.AgentRunStatus(status), time.Duration(dur), int(exit)
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

// CreateReviewNote inserts n, filling ID.
func (s *Store) CreateReviewNote(ctx context.Context, n *baton.ReviewNote) error {
	err := s.row(ctx, `INSERT INTO review_notes (delivery_id, verdict, summary, feedback, author, url, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		n.DeliveryID, string(n.Verdict), n.Summary, n.Feedback, n.Author, n.URL, fmtTime(n.CreatedAt)).Scan(&n.ID)
	if err != nil {
		return fmt.Errorf("insert review note of %s: %w", n.DeliveryID, s.wrap(err))
	}
	return nil
}

// SetReviewNoteURL records where a note can be read.
func (s *Store) SetReviewNoteURL(ctx context.Context, id int64, url string) error {
	_, err := s.exec(ctx, `UPDATE review_notes SET url = ? WHERE id = ?`, url, id)
	return err
}

// ReviewNotes lists a delivery's notes, oldest first.
func (s *Store) ReviewNotes(ctx context.Context, deliveryID string) ([]baton.ReviewNote, error) {
	rows, err := s.query(ctx, `SELECT id, delivery_id, verdict, summary, feedback, author, url, created_at
		FROM review_notes WHERE delivery_id = ? ORDER BY id`, deliveryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []baton.ReviewNote
	for rows.Next() {
		var (
			n           baton.ReviewNote
			verdict, ca string
		)
		if err := rows.Scan(&n.ID, &n.DeliveryID, &verdict, &n.Summary, &n.Feedback, &n.Author, &n.URL, &ca); err != nil {
			return nil, err
		}
		n.Verdict = baton.Verdict(verdict)
		if n.CreatedAt, err = parseTime(ca); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, s.wrap(rows.Err())
}

// LastUpdated is when any delivery last changed (zero when there are
// none).
func (s *Store) LastUpdated(ctx context.Context) (time.Time, error) {
	var t string
	if err := s.row(ctx, `SELECT COALESCE(MAX(updated_at), '') FROM deliveries`).Scan(&t); err != nil {
		return time.Time{}, s.wrap(err)
	}
	if t == "" {
		return time.Time{}, nil
	}
	return parseTime(t)
}
