-- +goose Up

-- The business templates of waba connections: the platform's copy of what
-- the provider holds, so lists and sends never call the provider.
CREATE TABLE waba_templates (
    connection_id   bigint NOT NULL,
    name            text NOT NULL,
    company_id      bigint NOT NULL,
    custom_name     text NOT NULL,
    locale          text NOT NULL,
    category        text NOT NULL,
    status          text NOT NULL,
    rejected_reason text NOT NULL DEFAULT '',
    components      jsonb NOT NULL,
    examples        jsonb NOT NULL,
    auto            boolean NOT NULL DEFAULT false,
    -- What the list shows, derived from components when they are written,
    -- so listing decodes no components.
    body_params_count integer NOT NULL,
    header_format   text,
    buttons         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (connection_id, name)
);

CREATE INDEX waba_templates_company ON waba_templates (company_id, created_at DESC);

-- One auto template per connection (waba_auto_templates_enabled).
CREATE UNIQUE INDEX waba_templates_auto ON waba_templates (connection_id) WHERE auto;

-- What the messenger needs to send a waba_template message: the template
-- and its values (content holds the template as the API shows it).
ALTER TABLE messages ADD COLUMN template jsonb;

-- +goose Down
ALTER TABLE messages DROP COLUMN template;
DROP TABLE waba_templates;
