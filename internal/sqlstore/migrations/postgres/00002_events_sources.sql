-- +goose Up
-- A delivery's event log: phase changes and its agents' output, numbered
-- per delivery. last_event hands out the numbers: taking it locks the
-- delivery's row, so numbers follow commit order.
ALTER TABLE deliveries ADD COLUMN last_event BIGINT NOT NULL DEFAULT 0;

CREATE TABLE delivery_events (
    delivery_id TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    run_n       BIGINT NOT NULL DEFAULT 0,
    phase       TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL,
    at          TEXT NOT NULL,
    PRIMARY KEY (delivery_id, seq)
);

-- GitHub repositories whose labelled issues become deliveries.
CREATE TABLE sources (
    id               TEXT PRIMARY KEY,
    repo             TEXT NOT NULL UNIQUE,
    api_url          TEXT NOT NULL DEFAULT '',
    label            TEXT NOT NULL,
    endpoint         TEXT NOT NULL DEFAULT '',
    checkpoints      TEXT NOT NULL DEFAULT '',
    agent            TEXT NOT NULL DEFAULT '',
    paused           BIGINT NOT NULL DEFAULT 0,
    webhook_secret   TEXT NOT NULL DEFAULT '',
    listing          TEXT NOT NULL DEFAULT '',
    last_sync_at     TEXT NOT NULL DEFAULT '',
    last_ok_at       TEXT NOT NULL DEFAULT '',
    last_result      TEXT NOT NULL DEFAULT '',
    sync_error       TEXT NOT NULL DEFAULT '',
    rate_limit_reset TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);

-- The issues a source turned into deliveries.
CREATE TABLE source_issues (
    source_id   TEXT NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    number      BIGINT NOT NULL,
    delivery_id TEXT NOT NULL,
    open        BIGINT NOT NULL DEFAULT 1,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (source_id, number)
);

-- Server settings a person edits from the dashboard: one JSON document.
CREATE TABLE settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP TABLE source_issues;
DROP TABLE sources;
DROP TABLE delivery_events;
ALTER TABLE deliveries DROP COLUMN last_event;
