-- +goose Up
SET lock_timeout = '5s';

-- Who linked a client: the partner creating it (POST /partners/clients/),
-- or the operator creating a company with a promo code. A partner's daily
-- cap counts only the clients it created itself: the operator's sign-ups
-- are not the partner's calls.
ALTER TABLE partner_clients ADD COLUMN created_by_partner boolean NOT NULL DEFAULT false;
