-- +goose Up

-- telegram_bot buttons of an outbound message, handed to the messenger with
-- it (the API's message object does not show them).
ALTER TABLE messages ADD COLUMN markup jsonb;
ALTER TABLE sandbox_outbox ADD COLUMN markup jsonb;

-- +goose Down
ALTER TABLE sandbox_outbox DROP COLUMN markup;
ALTER TABLE messages DROP COLUMN markup;
