-- +goose Up
SET lock_timeout = '5s';

-- Each company's name keys and their trigrams are kept in the contacts
-- service's memory (issue 32, docs/contacts-search.md "Fifteenth pass";
-- services/contacts/internal/adapters/postgres/keyindex.go), and each key
-- search first reads the rows added since the copy was last brought up to
-- date. `added` is the transaction that added a row. Transactions do not
-- commit in the order of their ids, so a reader does not take the highest
-- id it has seen as its mark: it takes its snapshot's xmin, below which
-- every transaction has ended (pg_snapshot_xmin), and its next reading asks
-- for every row added at or above it, some of them a second time.
--
-- The rows written before this migration are all the first load's: they
-- get 0. The column is added with a constant default (no rewrite of the
-- table) and the default made the writing transaction's id after.
ALTER TABLE contact_key_trigrams ADD COLUMN added xid8 NOT NULL DEFAULT '0';
ALTER TABLE contact_key_trigrams ALTER COLUMN added SET DEFAULT pg_current_xact_id();
CREATE INDEX contact_key_trigrams_added ON contact_key_trigrams (company_id, added);

-- +goose Down
DROP INDEX contact_key_trigrams_added;
ALTER TABLE contact_key_trigrams DROP COLUMN added;
