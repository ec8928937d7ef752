-- +goose Up

-- Who polls each telegram_bot connection's updates, and from where. One
-- replica holds a connection's lease at a time; next_offset is the first
-- update not yet stored, written only by the lease holder (a replica that
-- lost its lease can no longer move it), so a restart or a takeover neither
-- loses nor repeats an update. bot_id is the bot the offset counts for: a
-- connection given another bot's token starts that bot from 0.
CREATE TABLE telegram_polls (
    connection_id bigint PRIMARY KEY,
    company_id    bigint NOT NULL,
    bot_id        text NOT NULL,
    next_offset   bigint NOT NULL DEFAULT 0,
    owner         text NOT NULL,
    lease_until   timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE telegram_polls;
