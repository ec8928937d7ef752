-- +goose Up
SET lock_timeout = '5s';

-- Faster fuzzy `query` lists (issue 12, docs/contacts-search.md): a contact
-- matches when search LIKE '%q%' or word_similarity(q, search) >= 0.6,
-- and word_similarity on the whole search text (~5 µs) was most of a
-- search's time when thousands of contacts match. name_key is the part of
-- search before the emails and phones (the lower-cased name) when it ends
-- at a space, else all of search: a prefix of search that ends between
-- words, so its trigrams are the first trigrams of search and
-- q <% name_key implies q <% search (pg_trgm scans search's trigrams in
-- order and stops at the threshold). Names repeat, so each distinct
-- name_key is tested once per query in contact_name_keys, and the contacts
-- of the keys that match are found through contacts_name_key without
-- word_similarity on each of them.
ALTER TABLE contacts ADD COLUMN name_key text GENERATED ALWAYS AS (
    CASE WHEN substr(search, length(name) + 1, 1) = ' ' THEN left(search, length(name)) ELSE search END) STORED;
CREATE INDEX contacts_name_key ON contacts (name_key);

-- Search lists are custom plans, and estimating word_similarity's
-- selectivity runs it on every most-common value and histogram entry of
-- search: ~0.5 ms of planning per search at the default 100, ~0.1 ms at
-- 10. The plan's shape is fixed anyway (searchPlanner in the repository).
ALTER TABLE contacts ALTER COLUMN search SET STATISTICS 10;

-- Every name_key a company's contacts have had. Keys of deleted or renamed
-- contacts stay: such a key then matches no contact, and a key missing here
-- would only make its contacts slower to find (they still match through
-- search), never lose them.
-- The key leads the primary key: with company_id first, the planner read
-- all the company's keys through it and tested each (3-4 ms per search at
-- 2,000 keys, before the table's first ANALYZE) instead of using the
-- trigram index.
CREATE TABLE contact_name_keys (
    company_id bigint NOT NULL,
    name_key   text NOT NULL,
    PRIMARY KEY (name_key, company_id)
);
-- fastupdate off: keys are added rarely, and with the pending list a bulk
-- load left every new key unindexed until the next vacuum, each lookup
-- testing all of them (3-5 ms instead of 0.2-0.5 ms at 2,000 keys).
CREATE INDEX contact_name_keys_search ON contact_name_keys USING gin (name_key gin_trgm_ops)
    WITH (fastupdate = off);

-- Statement triggers, so a COPY of many contacts adds its keys in one insert
-- (in key order: concurrent inserts of the same new keys wait for each other
-- in one order, never in a cycle).
-- +goose StatementBegin
CREATE FUNCTION contacts_add_name_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_name_keys (company_id, name_key)
    SELECT DISTINCT company_id, name_key FROM new_contacts ORDER BY name_key, company_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER contacts_name_keys_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_name_keys();
CREATE TRIGGER contacts_name_keys_update AFTER UPDATE ON contacts
    REFERENCING NEW TABLE AS new_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_name_keys();

INSERT INTO contact_name_keys (company_id, name_key)
SELECT DISTINCT company_id, name_key FROM contacts
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TRIGGER contacts_name_keys_update ON contacts;
DROP TRIGGER contacts_name_keys_insert ON contacts;
DROP FUNCTION contacts_add_name_keys();
DROP TABLE contact_name_keys;
ALTER TABLE contacts ALTER COLUMN search SET STATISTICS -1;
ALTER TABLE contacts DROP COLUMN name_key;
