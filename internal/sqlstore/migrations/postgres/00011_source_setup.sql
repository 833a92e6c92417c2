-- +goose Up
-- A source's set-up for its deliveries (baton source set --setup), as a
-- JSON object: commands, files, egress_allow; '' when it names none.
ALTER TABLE sources ADD COLUMN setup TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sources DROP COLUMN setup;
