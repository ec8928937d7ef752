-- +goose Up
SET lock_timeout = '5s';

-- What companies set on their waba connections (spec 2.11): the business
-- profile (each update replaces it) and the start messages.
CREATE TABLE waba_settings (
    connection_id       bigint      PRIMARY KEY REFERENCES connections (id) ON DELETE CASCADE,
    company_id          bigint      NOT NULL,
    about               text,
    address             text,
    description         text,
    email               text,
    profile_picture_url text,
    vertical            text,
    websites            text[]      NOT NULL DEFAULT '{}',
    username            text,
    ice_breakers        text[]      NOT NULL DEFAULT '{}',
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Test mode: the messenger accounts the sandbox knows (POST
-- /sandbox/v1/accounts). A phone never registered is an account without a
-- two-step password.
CREATE TABLE sandbox_accounts (
    messenger     text        NOT NULL,
    -- E.164.
    phone         text        NOT NULL,
    user_id       text        NOT NULL,
    username      text,
    name          text,
    -- SHA-256 of the two-step password; null when the account has none.
    password_hash bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (messenger, phone)
);

-- Test mode: the WABA usernames the business platform has given out, one
-- per connection.
CREATE TABLE sandbox_waba_usernames (
    connection_id bigint PRIMARY KEY,
    username      text   NOT NULL UNIQUE
);

-- Test mode: the login codes the messenger "sent", by session, and the QR
-- logins accounts scanned, by the link the QR encodes.
CREATE TABLE sandbox_login_codes (
    session_id text        PRIMARY KEY,
    messenger  text        NOT NULL,
    phone      text        NOT NULL,
    code       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE sandbox_qr_scans (
    qr_url     text        PRIMARY KEY,
    messenger  text        NOT NULL,
    phone      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE sandbox_qr_scans;
DROP TABLE sandbox_login_codes;
DROP TABLE sandbox_waba_usernames;
DROP TABLE sandbox_accounts;
DROP TABLE waba_settings;
