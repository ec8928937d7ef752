-- +goose Up
SET lock_timeout = '5s';

-- The business (WABA) dialog balance of a company: dialogs it may still
-- open. A company without a row has 0 (billing learns of companies only
-- when something happens to them). The operator's corrections may make it
-- negative. Every change is one atomic statement on the row (an upsert
-- adding to it, an update taking one only while it is above 0), never a
-- read followed by a write.
CREATE TABLE waba_dialogs (
    company_id           bigint      PRIMARY KEY,
    waba_dialogs_balance bigint      NOT NULL,
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- One row per dialog taken by TakeWabaDialog, keyed by the caller's
-- idempotency key (a message uuid): the same key again answers this row and
-- takes nothing. A take that found no dialog leaves no row.
CREATE TABLE waba_dialog_takes (
    company_id           bigint      NOT NULL,
    idempotency_key      text        NOT NULL,
    -- The balance right after this take.
    waba_dialogs_balance bigint      NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (company_id, idempotency_key)
);
