-- +goose Up

-- The messenger side in test mode (adapters/sandbox): how each connection's
-- messenger answers sends, what it received, and the receipts it will send.
CREATE TABLE sandbox_behaviours (
    connection_id bigint PRIMARY KEY,
    outbound      text   NOT NULL,
    error_type    text,
    error_text    text
);

CREATE TABLE sandbox_outbox (
    seq               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    connection_id     bigint      NOT NULL,
    -- the platform's message: a send repeated after a crash is received once
    message_id        uuid        NOT NULL UNIQUE,
    source_message_id text        NOT NULL,
    source_chat_id    text        NOT NULL,
    message_type      text        NOT NULL,
    content           jsonb       NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_outbox_connection ON sandbox_outbox (connection_id, seq);

CREATE TABLE sandbox_receipts (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    connection_id     bigint      NOT NULL,
    source_message_id text        NOT NULL,
    status            text        NOT NULL,
    due_at            timestamptz NOT NULL
);
CREATE INDEX sandbox_receipts_due ON sandbox_receipts (due_at);

-- +goose Down
DROP TABLE sandbox_receipts;
DROP TABLE sandbox_outbox;
DROP TABLE sandbox_behaviours;
