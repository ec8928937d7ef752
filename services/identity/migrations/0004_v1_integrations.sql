-- +goose Up
SET lock_timeout = '5s';

-- Webhook integrations (the v1 management API): the URL their events go
-- to (null until one passed the check) and the secret that signs them,
-- kept as issued (HMAC needs it; it is shown once, at creation).
ALTER TABLE integrations
    ADD COLUMN webhook_url text,
    ADD COLUMN secret      text;

-- The connections bound to a webhook integration: their events go to it.
-- Connections are the connections service's; the id is checked there when
-- bound.
CREATE TABLE integration_connections (
    integration_id bigint      NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    company_id     bigint      NOT NULL,
    connection_id  bigint      NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (integration_id, connection_id)
);
-- A connection's integrations (v2 connections show them; fan-out).
CREATE INDEX integration_connections_connection ON integration_connections (company_id, connection_id, integration_id);

-- +goose Down
DROP TABLE integration_connections;
ALTER TABLE integrations DROP COLUMN secret, DROP COLUMN webhook_url;
