-- +goose Up
-- A person's messages to the agent running a delivery's phase (baton
-- delivery say). A message is stored in the transaction that queues its
-- job, and waits (delivered_at '') until the runner gives it to the agent
-- or its run ends without it; outcome says which.
CREATE TABLE messages (
    id           BIGSERIAL PRIMARY KEY,
    delivery_id  TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    phase        TEXT NOT NULL,
    attempt      BIGINT NOT NULL,
    actor        TEXT NOT NULL,
    text         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    delivered_at TEXT NOT NULL DEFAULT '',
    outcome      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX messages_delivery ON messages (delivery_id, delivered_at, id);

-- +goose Down
DROP TABLE messages;
