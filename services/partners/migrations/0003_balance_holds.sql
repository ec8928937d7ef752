-- +goose Up
SET lock_timeout = '5s';

-- What a partner's invoices hold of its balance (partners.md "Rewards,
-- balance"). A stored partner invoice that may spend the balance first
-- reserves the whole available balance here (pending, under the
-- partner's lock, so two invoices or an invoice and a payout never spend
-- the same money), then billing stores the invoice with this id and the
-- hold becomes what the invoice used (held, its invoice_id set), from
-- billing's answer or its `new` event, whichever comes first. Released
-- when the invoice is expired or cancelled, or when billing says no
-- invoice was stored for it (the sweeper, for a pending hold past its
-- grace period). pending and held count against the balance.
CREATE TABLE balance_holds (
    id                 uuid          PRIMARY KEY,
    partner_company_id bigint        NOT NULL,
    company_id         bigint        NOT NULL,
    status             text          NOT NULL CHECK (status IN ('pending', 'held', 'released')),
    amount             numeric(14,2) NOT NULL CHECK (amount >= 0),
    invoice_id         bigint,
    created_at         timestamptz   NOT NULL,
    updated_at         timestamptz   NOT NULL DEFAULT now(),
    CHECK (status <> 'held' OR invoice_id IS NOT NULL)
);
CREATE INDEX balance_holds_partner_idx ON balance_holds (partner_company_id) WHERE status <> 'released';
-- The sweeper's queue.
CREATE INDEX balance_holds_pending_idx ON balance_holds (created_at) WHERE status = 'pending';

-- +goose Down
DROP TABLE balance_holds;
