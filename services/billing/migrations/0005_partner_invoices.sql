-- +goose Up
SET lock_timeout = '5s';

-- A partner's invoice for its client names the partner (its balance
-- pays part of it, its payments list shows it).
ALTER TABLE invoices ADD COLUMN partner_company_id bigint;

-- The partners service's holds of a partner's balance, one row per hold
-- id it sends with a stored partner invoice: a retry of the same hold
-- finds the invoice stored for it, and a hold the partners service gave
-- up (abandoned: it asked and no invoice was there) can store none. The
-- row lock orders a late store and the giving up.
CREATE TABLE partner_holds (
    hold_id    text        PRIMARY KEY,
    invoice_id bigint      UNIQUE REFERENCES invoices (id),
    abandoned  boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (NOT (abandoned AND invoice_id IS NOT NULL))
);

-- pkg/mail's outbox (its package comment has the reference DDL): partner
-- invoices mailed to partner_email.
CREATE TABLE mail_outbox (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_addr       text        NOT NULL,
    to_addrs        text[]      NOT NULL,
    subject         text        NOT NULL,
    body            text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    sent_at         timestamptz
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- +goose Down
DROP TABLE mail_outbox;
DROP TABLE partner_holds;
ALTER TABLE invoices DROP COLUMN partner_company_id;
