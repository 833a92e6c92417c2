-- +goose Up
-- Notices, comment feedback and webhooks are River jobs: River retries,
-- backs off and rescues them, so the columns that did it by hand go.

-- A notification is a notice in flight: its River job (baton.notice)
-- sends it to every target not in done, and deletes it once all took it
-- or it gave up. Rows already sent or given up were history only.
DELETE FROM notifications WHERE state <> 'pending';
DROP INDEX notifications_due;
ALTER TABLE notifications DROP COLUMN attempts;
ALTER TABLE notifications DROP COLUMN next_at;
ALTER TABLE notifications DROP COLUMN claimed_until;
ALTER TABLE notifications DROP COLUMN state;
ALTER TABLE notifications DROP COLUMN last_error;

-- A comment being acted on is queued for its River job (baton.feedback),
-- not claimed under a lease. Feedback that waits for its delivery is
-- found by delivery, by the change that frees it.
UPDATE feedback SET state = 'queued' WHERE state = 'claimed';
CREATE INDEX feedback_waiting ON feedback (delivery_id, state, created_at);

-- A webhook is recorded with its event and payload when it is verified,
-- and handled by its River job (baton.webhook), which keeps what became
-- of it and drops the payload.
ALTER TABLE webhook_deliveries ADD COLUMN event TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN payload TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN reason;
ALTER TABLE webhook_deliveries DROP COLUMN outcome;
ALTER TABLE webhook_deliveries DROP COLUMN payload;
ALTER TABLE webhook_deliveries DROP COLUMN event;
DROP INDEX feedback_waiting;
UPDATE feedback SET state = 'claimed' WHERE state = 'queued';
ALTER TABLE notifications ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE notifications ADD COLUMN next_at TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN claimed_until TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN state TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE notifications ADD COLUMN last_error TEXT NOT NULL DEFAULT '';
CREATE INDEX notifications_due ON notifications (state, next_at);
