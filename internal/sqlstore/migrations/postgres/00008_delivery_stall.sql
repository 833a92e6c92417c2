-- +goose Up
-- What the stall rule remembers of a delivery's rounds (baton.Stall, as
-- JSON): how many in a row made no progress, and the work trees, check and
-- feedback progress is measured against.
ALTER TABLE deliveries ADD COLUMN stall TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE deliveries DROP COLUMN stall;
