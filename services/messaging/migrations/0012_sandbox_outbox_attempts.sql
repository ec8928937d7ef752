-- +goose Up
SET lock_timeout = '5s';

-- The sandbox's outbox is every send attempt as the messenger received
-- it: a message sent twice (a worker that crashed after the send, a lease
-- that ran out) is two rows with their own seq and source_message_id, as
-- a real messenger would deliver two copies. It was unique per message,
-- which folded a duplicate into the first row and hid it from tests.
ALTER TABLE sandbox_outbox DROP CONSTRAINT sandbox_outbox_message_id_key;

-- +goose Down
SET lock_timeout = '5s';
-- Uniqueness again keeps the first attempt of each message.
DELETE FROM sandbox_outbox dup USING sandbox_outbox kept
    WHERE dup.message_id = kept.message_id AND dup.seq > kept.seq;
ALTER TABLE sandbox_outbox ADD CONSTRAINT sandbox_outbox_message_id_key UNIQUE (message_id);
