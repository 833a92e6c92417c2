-- +goose Up
-- A delivery's set-ups: each a step of its own before the phase it made
-- ready (its commands, how it ended, the end of its output), written
-- when it ends. A skipped one (nothing it depends on changed) is a row
-- too, so the timeline says why no set-up ran.
CREATE TABLE setup_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    phase       TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    status      TEXT NOT NULL,
    commands    TEXT NOT NULL,
    ran         INTEGER NOT NULL DEFAULT 0,
    exit_code   INTEGER NOT NULL DEFAULT 0,
    output      TEXT NOT NULL DEFAULT '',
    log         TEXT NOT NULL DEFAULT '',
    note        TEXT NOT NULL DEFAULT '',
    started_at  TEXT NOT NULL,
    ended_at    TEXT NOT NULL,
    UNIQUE (delivery_id, n)
);

-- +goose Down
DROP TABLE setup_runs;
