-- +goose Up
-- A phase log entry says what a person decided, the reason they gave and
-- whether its phase waits for a person to start it, in fields of their
-- own: readers never parse the note, which is prose for people.
ALTER TABLE phase_log ADD COLUMN decision TEXT NOT NULL DEFAULT '';
ALTER TABLE phase_log ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE phase_log ADD COLUMN waits BIGINT NOT NULL DEFAULT 0;

-- Entries written before: what their notes said, read once here. Notes
-- of older versions said "started by approve" and "checkpoint: waiting
-- for approve".
UPDATE phase_log SET waits = 1 WHERE status = 'pending' AND note LIKE '%checkpoint: waiting for%';
UPDATE phase_log SET decision = CASE
        WHEN action = 'approve' AND status = 'pending' AND note IN ('started', 'started by approve') THEN 'started'
        WHEN action = 'approve' THEN 'approved'
        WHEN action = 'reject' THEN 'rejected'
        WHEN action = 'retry' THEN 'retried'
        WHEN action = 'cancel' THEN 'canceled'
        ELSE 'closed'
    END
    WHERE action IN ('approve', 'reject', 'retry', 'cancel', 'close');
UPDATE phase_log SET reason = note WHERE action IN ('reject', 'retry');
UPDATE phase_log SET reason = substr(note, length('canceled by ' || actor || ': ') + 1)
    WHERE action = 'cancel' AND substr(note, 1, length('canceled by ' || actor || ': ')) = 'canceled by ' || actor || ': ';
UPDATE phase_log SET reason = substr(note, strpos(note, ': ') + 2)
    WHERE action = 'close' AND substr(note, 1, 10) = 'closed by ' AND strpos(note, ': ') > 0;

-- +goose Down
ALTER TABLE phase_log DROP COLUMN waits;
ALTER TABLE phase_log DROP COLUMN reason;
ALTER TABLE phase_log DROP COLUMN decision;
