-- +goose Up

-- v1 webhook integrations (the identity service's) as targets of the
-- delivery engine: the id their deliveries carry as subscription_id (lanes,
-- order) and the secret that signs them. Their URL and bindings stay
-- identity's, asked when an event is taken in; the secret of an
-- integration never changes, so this copy cannot differ from it.
CREATE TABLE integration_targets (
    id             uuid        PRIMARY KEY,
    company_id     bigint      NOT NULL,
    integration_id bigint      NOT NULL UNIQUE,
    secret         text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE integration_targets;
