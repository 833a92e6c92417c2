-- +goose Up
-- A source's pull request drafts (auto, always, never; '' is auto), its
-- notification targets (JSON, set on the server only: webhook URLs, their
-- secrets, Slack incoming-webhook URLs), when a comment or review webhook
-- last arrived for it (the poller reads comments while none does), and up
-- to when the poller read its comments.
ALTER TABLE sources ADD COLUMN draft TEXT NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN notify TEXT NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN comment_webhook_at TEXT NOT NULL DEFAULT '';
ALTER TABLE sources ADD COLUMN comments_polled_at TEXT NOT NULL DEFAULT '';

-- Comments and reviews that mention baton, or request changes, on a
-- delivery's issue or pull request: each is acted on once, by whichever
-- server sees it first (webhook or poller). state is deferred (waiting
-- for the delivery's running or queued implement to end), applied or
-- ignored, with the reason.
CREATE TABLE feedback (
    repo        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    comment_id  INTEGER NOT NULL,
    delivery_id TEXT NOT NULL DEFAULT '',
    author      TEXT NOT NULL DEFAULT '',
    url         TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (repo, kind, comment_id)
);
CREATE INDEX feedback_state ON feedback (state, created_at);

-- Notifications of deliveries that wait for a person, failed or closed,
-- written in the transaction of the change and sent by a server's
-- notifier: done lists the targets that took it, attempts and next_at
-- pace the retries, claimed_until keeps two servers from sending one at
-- once.
CREATE TABLE notifications (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   TEXT NOT NULL,
    event         TEXT NOT NULL,
    body          TEXT NOT NULL,
    done          TEXT NOT NULL DEFAULT '',
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       TEXT NOT NULL,
    claimed_until TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL DEFAULT 'pending',
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL
);
CREATE INDEX notifications_due ON notifications (state, next_at);

-- +goose Down
DROP TABLE notifications;
DROP TABLE feedback;
ALTER TABLE sources DROP COLUMN comments_polled_at;
ALTER TABLE sources DROP COLUMN comment_webhook_at;
ALTER TABLE sources DROP COLUMN notify;
ALTER TABLE sources DROP COLUMN draft;
