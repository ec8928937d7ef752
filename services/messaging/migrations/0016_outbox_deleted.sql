-- +goose Up
SET lock_timeout = '5s';

-- The outbox relay (pkg/outbox) now deletes what it publishes. Rows earlier
-- releases marked published instead have nothing left to do: they only
-- made the table grow.
DELETE FROM outbox WHERE published_at IS NOT NULL;

-- seq is the key: the relay reads and deletes by it, and no statement
-- looks a message up by its id, so the id's index (a random uuid, a
-- random page of its tree for every event written) was pure cost. The id
-- stays a column: receivers deduplicate by it.
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey, DROP CONSTRAINT outbox_seq_key,
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (seq);

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey,
    ADD CONSTRAINT outbox_seq_key UNIQUE (seq),
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);
