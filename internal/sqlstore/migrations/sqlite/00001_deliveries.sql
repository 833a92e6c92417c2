-- +goose Up
-- Times are UTC text, "2006-01-02T15:04:05.000000Z" (sortable; '' when unset),
-- so the same queries serve SQLite and PostgreSQL.
CREATE TABLE deliveries (
    id           TEXT PRIMARY KEY,
    seq          INTEGER NOT NULL UNIQUE,
    summary      TEXT NOT NULL,
    repository   TEXT NOT NULL,
    forge        TEXT NOT NULL,
    phase        TEXT NOT NULL,
    run_status   TEXT NOT NULL,
    endpoint     TEXT NOT NULL,
    checkpoints  TEXT NOT NULL,
    refs         TEXT NOT NULL,
    config       TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    queued       INTEGER NOT NULL DEFAULT 0,
    attempt      INTEGER NOT NULL DEFAULT 0,
    rounds       INTEGER NOT NULL DEFAULT 0,
    lost         INTEGER NOT NULL DEFAULT 0,
    version      INTEGER NOT NULL DEFAULT 1,
    owner        TEXT NOT NULL DEFAULT '',
    heartbeat_at TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX deliveries_status ON deliveries (run_status, heartbeat_at);
CREATE INDEX deliveries_phase ON deliveries (phase);

CREATE TABLE phase_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    phase       TEXT NOT NULL,
    status      TEXT NOT NULL,
    executor    TEXT NOT NULL,
    verdict     TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    note        TEXT NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL DEFAULT 0,
    started_at  TEXT NOT NULL,
    ended_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX phase_log_delivery ON phase_log (delivery_id, id);

CREATE TABLE agent_runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    n             INTEGER NOT NULL,
    phase         TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    agent         TEXT NOT NULL,
    status        TEXT NOT NULL,
    prompt        TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    final_message TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    session_id    TEXT NOT NULL DEFAULT '',
    cost_usd      REAL NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ns   INTEGER NOT NULL DEFAULT 0,
    exit_code     INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    log_dir       TEXT NOT NULL DEFAULT '',
    started_at    TEXT NOT NULL,
    ended_at      TEXT NOT NULL DEFAULT '',
    UNIQUE (delivery_id, n)
);
-- One run at a time per delivery, enforced by the database.
CREATE UNIQUE INDEX agent_runs_one_running ON agent_runs (delivery_id) WHERE status = 'running';

CREATE TABLE review_notes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    verdict     TEXT NOT NULL,
    summary     TEXT NOT NULL,
    feedback    TEXT NOT NULL,
    author      TEXT NOT NULL,
    url         TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL
);
CREATE INDEX review_notes_delivery ON review_notes (delivery_id, id);

-- +goose Down
DROP TABLE review_notes;
DROP TABLE agent_runs;
DROP TABLE phase_log;
DROP TABLE deliveries;
