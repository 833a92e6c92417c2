-- +goose Up
-- A delivery says in a field of its own that its phase failed because a
-- person canceled it, so every list and board says "canceled" (a person's
-- choice), not "failed", without reading its phase log or its error text.
ALTER TABLE deliveries ADD COLUMN canceled BIGINT NOT NULL DEFAULT 0;

-- Deliveries canceled before: the last entry of their phase log is the cancel.
UPDATE deliveries SET canceled = 1
    WHERE run_status = 'failed' AND phase <> 'close'
    AND (SELECT action FROM phase_log WHERE phase_log.delivery_id = deliveries.id ORDER BY id DESC LIMIT 1) = 'cancel';

-- +goose Down
ALTER TABLE deliveries DROP COLUMN canceled;
