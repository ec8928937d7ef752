-- +goose Up

-- Webhook subscriptions (spec 2.9): a URL that receives the events of the
-- given kinds of one connection. The secret signs every request to it, so
-- it is kept as issued (HMAC needs it; it is shown once, at creation).
CREATE TABLE subscriptions (
    id            uuid        PRIMARY KEY,
    company_id    bigint      NOT NULL,
    connection_id bigint      NOT NULL,
    url           text        NOT NULL,
    events        text[]      NOT NULL CHECK (cardinality(events) > 0),
    secret        text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
-- The list (oldest first) and the subscriptions an event goes to.
CREATE INDEX subscriptions_company ON subscriptions (company_id, created_at, id);
CREATE INDEX subscriptions_connection ON subscriptions (connection_id);

-- +goose Down
DROP TABLE subscriptions;
