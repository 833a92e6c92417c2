package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

// rawDB opens a fresh database of dialect d as database/sql, unmigrated.
func rawDB(t *testing.T, d sqlstore.Dialect) *sql.DB {
	t.Helper()
	dsn := sqlstoretest.DSN(t, d)
	if d == sqlstore.SQLite {
		db, err := sqlstore.OpenSQLite(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	pool, err := sqlstore.OpenPostgres(t.Context(), dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close(); pool.Close() })
	return db
}

// A phase log written before entries carried their decisions, reasons and
// waits reads as it was meant after the migration: older versions wrote
// "started by approve" and "checkpoint: waiting for approve" in notes, and
// people's reasons inside the machine's prose.
func TestPhaseLogOfOlderVersionsReadsByFields(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := rawDB(t, d)
			if err := sqlstore.MigrateTo(ctx, d, db, 4); err != nil {
				t.Fatal(err)
			}
			q := sqlstore.SQL(db)
			st := sqlstore.New(d, q)
			insertOldDelivery(t, d, q, "oldlog000001", 1, baton.PhaseClose, baton.StatusFailed)
			type old struct {
				s                   int
				phase               baton.Phase
				status              baton.RunStatus
				action, actor, note string
			}
			rows := []old{
				{0, baton.PhaseIntake, baton.StatusSucceeded, "create", "alice", "created"},
				{0, baton.PhasePlan, baton.StatusPending, "create", "alice", ""},
				{1, baton.PhasePlan, baton.StatusRunning, "run", "worker:x", ""},
				{11, baton.PhasePlan, baton.StatusSucceeded, "forward", "worker:x", ""},
				{71, baton.PhaseImplement, baton.StatusPending, "approve", "alice", "approved"},
				{72, baton.PhaseImplement, baton.StatusRunning, "run", "worker:x", ""},
				{80, baton.PhaseImplement, baton.StatusFailed, "cancel", "bob", "canceled by bob: wrong approach"},
				{90, baton.PhaseImplement, baton.StatusPending, "retry", "bob", "try the other file"},
				{91, baton.PhaseImplement, baton.StatusRunning, "run", "worker:x", ""},
				{99, baton.PhaseImplement, baton.StatusSucceeded, "forward", "worker:x", "1 commit"},
				{99, baton.PhaseDeploy, baton.StatusPending, "forward", "worker:x", "checkpoint: waiting for approve"},
				{159, baton.PhaseDeploy, baton.StatusPending, "approve", "alice", "started by approve"},
				{160, baton.PhaseDeploy, baton.StatusRunning, "run", "worker:x", ""},
				{170, baton.PhaseDeploy, baton.StatusFailed, "fail", "worker:x", "merge refused"},
				{200, baton.PhaseClose, baton.StatusFailed, "close", "intake:octo/app", "closed by intake:octo/app at deploy/failed: issue #3 was closed"},
			}
			for i, r := range rows {
				end := ""
				if i+1 < len(rows) {
					end = sqlstore.FmtTime(t0.Add(time.Duration(rows[i+1].s) * time.Second))
				}
				if _, err := q.Exec(ctx, sqlstore.Rebind(d, `INSERT INTO phase_log (delivery_id, phase, status, executor, actor, action, note, started_at, ended_at)
					VALUES ('oldlog000001', ?, ?, 'agent', ?, ?, ?, ?, ?)`),
					string(r.phase), string(r.status), r.actor, r.action, r.note, sqlstore.FmtTime(t0.Add(time.Duration(r.s)*time.Second)), end); err != nil {
					t.Fatal(err)
				}
			}
			if err := sqlstore.Migrate(ctx, d, db); err != nil {
				t.Fatal(err)
			}
			log, err := st.PhaseLog(ctx, "oldlog000001")
			if err != nil {
				t.Fatal(err)
			}
			type fields struct {
				Decision, Reason string
				Waits            bool
			}
			var got []fields
			for _, e := range log {
				got = append(got, fields{e.Decision, e.Reason, e.Waits})
			}
			want := []fields{
				{}, {}, {}, {},
				{Decision: "approved"}, {},
				{Decision: "canceled", Reason: "wrong approach"},
				{Decision: "retried", Reason: "try the other file"}, {}, {},
				{Waits: true},
				{Decision: "started"}, {}, {},
				{Decision: "closed", Reason: "issue #3 was closed"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("migrated phase log fields (-want +got):\n%s", diff)
			}
			var words []string
			for _, e := range log[10:12] {
				words = append(words, delivery.PhaseWords(e))
			}
			if diff := cmp.Diff([]string{"Deploy is waiting for a person to start it.", "alice started deploy."}, words); diff != "" {
				t.Errorf("PhaseWords of the old checkpoint and its start (-want +got):\n%s", diff)
			}
			var decisions []string
			for _, s := range delivery.Timeline(log, t0.Add(300*time.Second)) {
				decisions = append(decisions, s.Phase+": "+s.Decision+" / "+s.Note)
			}
			wantSteps := []string{
				"plan: approved by alice / ",
				"implement: retried by bob: try the other file / canceled by bob: wrong approach",
				"implement:  / 1 commit",
				"deploy: closed by intake:octo/app: issue #3 was closed / merge refused",
				"close:  / closed by intake:octo/app: issue #3 was closed",
			}
			if diff := cmp.Diff(wantSteps, decisions); diff != "" {
				t.Errorf("Timeline of the old log (-want +got):\n%s", diff)
			}
		})
	}
}

// Migration 6 makes notices, comment feedback and webhooks River jobs: of
// the notifications written before, those in flight stay, with the
// targets that took them, and history goes; a comment claimed under a
// lease is queued for its job. delivery.Service.Requeue gives them jobs.
func TestJobsMigrationKeepsWhatIsInFlight(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := rawDB(t, d)
			if err := sqlstore.MigrateTo(ctx, d, db, 5); err != nil {
				t.Fatal(err)
			}
			q := sqlstore.SQL(db)
			at := sqlstore.FmtTime(t0)
			for _, n := range []struct{ state, done string }{{"pending", "webhook:abc"}, {"sent", ""}, {"failed", ""}} {
				if _, err := q.Exec(ctx, sqlstore.Rebind(d, `INSERT INTO notifications (delivery_id, event, body, done, attempts, next_at, state, created_at)
					VALUES ('d1', 'delivery.closed', '{}', ?, 2, ?, ?, ?)`), n.done, at, n.state, at); err != nil {
					t.Fatal(err)
				}
			}
			for i, state := range []string{"claimed", "deferred", "applied"} {
				if _, err := q.Exec(ctx, sqlstore.Rebind(d, `INSERT INTO feedback (repo, kind, comment_id, state, created_at, updated_at) VALUES ('octo/app', 'issue_comment', ?, ?, ?, ?)`),
					i+1, state, at, at); err != nil {
					t.Fatal(err)
				}
			}
			if err := sqlstore.Migrate(ctx, d, db); err != nil {
				t.Fatal(err)
			}
			st := sqlstore.New(d, q)
			ids, err := st.NotificationIDs(ctx, "")
			if err != nil || len(ids) != 1 {
				t.Fatalf("notifications after = %v, %v; want the pending one", ids, err)
			}
			if n, err := st.FindNotification(ctx, ids[0]); err != nil || len(n.Done) != 1 || n.Done[0] != "webhook:abc" {
				t.Errorf("the pending notification = %+v, %v; want it with the target that took it", n, err)
			}
			var states []string
			list, err := st.FeedbackOf(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range list {
				states = append(states, f.State)
			}
			if diff := cmp.Diff([]string{"queued", "deferred", "applied"}, states); diff != "" {
				t.Errorf("feedback states after (-want +got):\n%s", diff)
			}
		})
	}
}

// insertOldDelivery writes a delivery row as the first migrations made
// it (the store writes the columns of the newest).
func insertOldDelivery(t *testing.T, d sqlstore.Dialect, q sqlstore.Querier, id string, seq int, p baton.Phase, st baton.RunStatus) {
	t.Helper()
	if _, err := q.Exec(t.Context(), sqlstore.Rebind(d, `INSERT INTO deliveries (id, seq, summary, repository, forge, phase, run_status, endpoint,
		checkpoints, refs, config, error, queued, attempt, rounds, lost, version, owner, heartbeat_at, created_at, updated_at)
		VALUES (?, CAST(? AS BIGINT), 'Fix the login bug', '/src/app', 'local', ?, ?, 'observe', 'plan,deploy', '[]', '{"agent":"claude"}', '', 0, 2, 0, 0, 1, '', '', ?, ?)`),
		id, seq, string(p), string(st), sqlstore.FmtTime(t0), sqlstore.FmtTime(t0)); err != nil {
		t.Fatal(err)
	}
}

// A delivery canceled before deliveries said so in a field reads as
// canceled after the migration (its phase log's last entry is the
// cancel); one that failed by itself, or was canceled and then retried,
// does not.
func TestCanceledOfOlderVersions(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := rawDB(t, d)
			if err := sqlstore.MigrateTo(ctx, d, db, 6); err != nil {
				t.Fatal(err)
			}
			q := sqlstore.SQL(db)
			logs := map[string][]string{
				"canceled0001": {"run", "cancel"},
				"failed000001": {"run", "fail"},
				"retried00001": {"run", "cancel", "retry", "run", "fail"},
			}
			seq := 0
			for id, actions := range logs {
				seq++
				insertOldDelivery(t, d, q, id, seq, baton.PhaseImplement, baton.StatusFailed)
				for i, a := range actions {
					if _, err := q.Exec(ctx, sqlstore.Rebind(d, `INSERT INTO phase_log (delivery_id, phase, status, executor, actor, action, note, started_at)
						VALUES (?, 'implement', 'failed', 'agent', 'bob', ?, '', ?)`), id, a, sqlstore.FmtTime(t0.Add(time.Duration(i)*time.Second))); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := sqlstore.Migrate(ctx, d, db); err != nil {
				t.Fatal(err)
			}
			st := sqlstore.New(d, q)
			for id, want := range map[string]bool{"canceled0001": true, "failed000001": false, "retried00001": false} {
				got, err := st.FindDeliveryByID(ctx, id)
				if err != nil || got.Canceled != want {
					t.Errorf("%s after the migration: canceled %v, %v; want %v", id, got != nil && got.Canceled, err, want)
				}
			}
		})
	}
}
