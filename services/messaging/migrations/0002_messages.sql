-- +goose Up

-- Messages of chats, both directions. The list (one chat, newest first,
-- strictly before a time) reads messages_chat_created backwards and stops
-- after `limit` rows, whatever the chat's or company's size.
CREATE TABLE messages (
    id                         uuid        PRIMARY KEY,
    company_id                 bigint      NOT NULL,
    chat_id                    bigint      NOT NULL REFERENCES chats (id),
    connection_id              bigint      NOT NULL,
    direction                  text        NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    message_type               text        NOT NULL,
    -- the content object of its type, as the API shows it
    content                    jsonb       NOT NULL,
    -- {id, name, external_id, user_id, phone}, or null
    author                     jsonb,
    -- the messenger's id: given for inbound, learnt after an outbound send
    source_message_id          text,
    reply_to_message_id        uuid,
    reply_to_source_message_id text,
    created_at                 timestamptz NOT NULL,
    delivered_at               timestamptz,
    read_at                    timestamptz,
    error_at                   timestamptz,
    error_type                 text,
    error_text                 text
);
CREATE INDEX messages_chat_created ON messages (chat_id, created_at DESC, id DESC);
-- A messenger's message is stored once per connection (inbound ingest is
-- idempotent by it, and receipts find outbound messages by it).
CREATE UNIQUE INDEX messages_source ON messages (connection_id, source_message_id)
    WHERE source_message_id IS NOT NULL;

-- Outbound messages waiting for the messenger: the send worker takes them
-- (FOR UPDATE SKIP LOCKED) after the API has answered.
CREATE TABLE outbound_sends (
    message_id uuid        PRIMARY KEY REFERENCES messages (id),
    company_id bigint      NOT NULL,
    due_at     timestamptz NOT NULL,
    attempts   integer     NOT NULL DEFAULT 0
);
CREATE INDEX outbound_sends_due ON outbound_sends (due_at);

-- Idempotency-Key of POST /messaging/messages/: the first answer, replayed
-- for the same key and body within 24 hours.
CREATE TABLE send_idempotency (
    company_id   bigint      NOT NULL,
    key          text        NOT NULL,
    request_hash bytea       NOT NULL,
    -- the first answer (a SendMessageResponse, protobuf)
    response     bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (company_id, key)
);
CREATE INDEX send_idempotency_created ON send_idempotency (created_at);

-- Events of spec 6 for the webhooks service (pkg/outbox), written in the
-- transaction of the change they tell of.
CREATE TABLE outbox (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    seq          bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    topic        text        NOT NULL,
    company_id   bigint      NOT NULL,
    event_type   text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (topic, seq) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE outbox;
DROP TABLE send_idempotency;
DROP TABLE outbound_sends;
DROP TABLE messages;
