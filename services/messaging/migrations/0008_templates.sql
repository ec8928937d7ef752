-- +goose Up
SET lock_timeout = '5s';

-- Account message templates (spec 2.11; design/messaging.md "Account
-- templates"). type is the stored type: a text with a file is kept as
-- image, video or document, judged once when the file is given. params is
-- the interactive structure of waba_interactive templates in its one shape
-- (domain.ParseInteractive), {} for the others. The list reads a company's
-- templates newest first: the index serves it without a sort.
CREATE TABLE templates (
    id         bigserial   PRIMARY KEY,
    company_id bigint      NOT NULL,
    type       text        NOT NULL CHECK (type IN ('text', 'image', 'video', 'document', 'waba_interactive')),
    name       text        NOT NULL,
    text       text        NOT NULL,
    file_url   text,
    params     jsonb       NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX templates_company ON templates (company_id, id DESC);

-- +goose Down
DROP TABLE templates;
