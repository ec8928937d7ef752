-- +goose Up
SET lock_timeout = '5s';

-- Where each delivery's event row was written (its ctid), so a claim reads
-- the payload from that page instead of descending events' primary key: one
-- buffer per delivery claimed instead of three (docs/webhooks.md "What each
-- row costs"). A hint, never trusted alone: the claim checks the id on the
-- row it finds there, and looks the event up by its key when the row is
-- not there (a redelivery renews the event, which moves it; rows written
-- before this column, redeliveries and pings have none). No index, no
-- default: adding it rewrites nothing.
ALTER TABLE deliveries ADD COLUMN event_at tid;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE deliveries DROP COLUMN event_at;
