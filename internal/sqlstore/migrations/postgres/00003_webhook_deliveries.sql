-- +goose Up
-- GitHub webhook deliveries received in the last day, so a replay is
-- acted on once by every server sharing the database, across restarts.
-- A delivery is known by GitHub's X-GitHub-Delivery id and, as that
-- header is not signed, by the SHA-256 of its signed body too.
CREATE TABLE webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    body_sha256 TEXT NOT NULL UNIQUE,
    received_at TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_received_at ON webhook_deliveries (received_at);

-- +goose Down
DROP TABLE webhook_deliveries;
