-- +goose Up
SET lock_timeout = '5s';

-- A partner company's two codes: promo_code (kind partner) makes
-- partner-type clients, referral_promo_code (kind referral) referrals.
-- Stored upper case and matched as upper(input); never changed. Partner
-- companies created before this migration get theirs at identity's start
-- (app.Service.EnsurePromoCodes), from the same generator as new ones.
CREATE TABLE promo_codes (
    code       text   PRIMARY KEY CHECK (code = upper(code)),
    company_id bigint NOT NULL REFERENCES companies (id),
    kind       text   NOT NULL CHECK (kind IN ('partner', 'referral')),
    UNIQUE (company_id, kind)
);

-- Which partner a company is a client of (a company is one partner's
-- client at most, from its creation on).
CREATE TABLE partner_clients (
    company_id         bigint      PRIMARY KEY REFERENCES companies (id),
    partner_company_id bigint      NOT NULL REFERENCES companies (id),
    client_type        text        NOT NULL CHECK (client_type IN ('partner', 'referral')),
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (company_id <> partner_company_id)
);
-- A partner's clients, and those of one UTC day (the daily cap).
CREATE INDEX partner_clients_partner_idx ON partner_clients (partner_company_id, created_at);

-- bcrypt hash of the user's password; NULL for users who have none (owners
-- the operator created).
ALTER TABLE users ADD COLUMN password_hash text;

-- pkg/mail's outbox (its package comment has the reference DDL).
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
ALTER TABLE users DROP COLUMN password_hash;
DROP TABLE partner_clients;
DROP TABLE promo_codes;
