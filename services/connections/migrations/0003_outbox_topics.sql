-- +goose Up
SET lock_timeout = '5s';

-- The outbox (pkg/outbox) carries messages for more than one destination,
-- each relayed in its own order: "webhooks" (the spec-6 events, every row
-- so far) and "identity" (a company's first connection, for the card's
-- had_connections).
ALTER TABLE outbox ADD COLUMN topic text NOT NULL DEFAULT 'webhooks';
ALTER TABLE outbox ALTER COLUMN topic DROP DEFAULT;
DROP INDEX outbox_unpublished_idx;
CREATE INDEX outbox_unpublished_idx ON outbox (topic, seq) WHERE published_at IS NULL;

-- Companies that had connections before identity was told of any.
INSERT INTO outbox (topic, company_id, event_type, payload)
SELECT 'identity', company_id, 'companies.had_connections', jsonb_build_object('company_id', company_id)
FROM connections GROUP BY company_id ORDER BY company_id;

-- +goose Down
DELETE FROM outbox WHERE topic <> 'webhooks';
DROP INDEX outbox_unpublished_idx;
ALTER TABLE outbox DROP COLUMN topic;
CREATE INDEX outbox_unpublished_idx ON outbox (seq) WHERE published_at IS NULL;
