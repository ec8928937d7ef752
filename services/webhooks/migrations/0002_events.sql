-- +goose Up

-- Events taken in from the services' outboxes (idempotent by their id),
-- with what the delivery engine orders by: the connection, and the chat for
-- message events (one chat's first attempts go in order).
CREATE TABLE events (
    id            uuid        PRIMARY KEY,
    company_id    bigint      NOT NULL,
    connection_id bigint      NOT NULL,
    chat_id       bigint,
    event_type    text        NOT NULL,
    payload       jsonb       NOT NULL,
    occurred_at   timestamptz NOT NULL,
    received_at   timestamptz NOT NULL DEFAULT now(),
    seq           bigint      GENERATED ALWAYS AS IDENTITY UNIQUE
);

-- One planned delivery per event and subscription that existed when the
-- event was taken in; the delivery engine works through them.
CREATE TABLE deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id        uuid        NOT NULL REFERENCES events (id),
    subscription_id uuid        NOT NULL,
    url             text        NOT NULL,
    status          text        NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'succeeded', 'failed', 'dropped')),
    attempt         integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, subscription_id)
);
CREATE INDEX deliveries_pending ON deliveries (next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP TABLE deliveries;
DROP TABLE events;
