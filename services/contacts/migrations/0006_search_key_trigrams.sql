-- +goose Up
SET lock_timeout = '5s';

-- Searches that visit their matches in name-key order (issue 32,
-- docs/contacts-search.md "Seventh pass"). A part of a name or a typo
-- whose last name alone matches counts 2,000-4,400 contacts, and through
-- the trigram index of contacts each is a visit to its own heap page
-- (~1,200 of the table's 1,844 pages). The same contacts in
-- (company_id, name_key) order are a few dozen pages of this index, read
-- index-only: it carries every column a search filters, orders and returns.
--
-- Contact writes wait while this migration runs: the index is built in
-- its transaction (not CONCURRENTLY: goose runs each file in one) and the
-- triggers below are created before the backfill, so that no contact
-- written meanwhile is missed. Seconds at 100,000 contacts (18 s on a
-- loaded 2-core machine); a database of millions of contacts should take
-- it in a maintenance window (docs/deploy.md).
CREATE INDEX contacts_search_keys ON contacts (company_id, name_key)
    INCLUDE (id, is_group, created_at, updated_at, name, search);

-- The trigrams each name key's contacts have (their search texts with
-- digits made spaces: a query with a digit is not searched by key), so a
-- search finds without reading any contact which keys may have a match:
-- a contact holds the query (LIKE) only if it has the query's trigrams
-- that do not touch its ends, and reaches word_similarity 0.6 only if it
-- has 60% of the query's trigrams (the test the trigram GIN index makes
-- before its recheck); its trigrams are among its key's here. Rows are
-- only added: a trigram of a contact since renamed or deleted only makes
-- its key one more candidate, tested contact by contact in the search.
-- Digits are made spaces rather than taken out, which keeps every trigram
-- without a digit (it lies in a run of letters that stays as it was).
CREATE TABLE contact_key_trigrams (
    company_id bigint NOT NULL,
    trigram    text NOT NULL,
    name_key   text NOT NULL,
    PRIMARY KEY (company_id, trigram, name_key)
);

-- Statement triggers, as for contact_name_keys (0002): a COPY adds its
-- rows in one insert, in key order (concurrent writers of the same new
-- rows wait for each other in one order, never in a cycle). An update adds
-- the trigrams of the contacts whose search text changed.
-- +goose StatementBegin
CREATE FUNCTION contacts_add_key_trigrams() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO contact_key_trigrams (company_id, trigram, name_key)
        SELECT DISTINCT n.company_id, t.trigram, n.name_key
        FROM new_contacts n
        JOIN old_contacts o ON o.id = n.id AND o.search IS DISTINCT FROM n.search,
        LATERAL unnest(show_trgm(regexp_replace(n.search, '[0-9]', ' ', 'g'))) AS t(trigram)
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO contact_key_trigrams (company_id, trigram, name_key)
        SELECT DISTINCT n.company_id, t.trigram, n.name_key
        FROM new_contacts n,
        LATERAL unnest(show_trgm(regexp_replace(n.search, '[0-9]', ' ', 'g'))) AS t(trigram)
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER contacts_key_trigrams_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_key_trigrams();
CREATE TRIGGER contacts_key_trigrams_update AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_contacts NEW TABLE AS new_contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_key_trigrams();

INSERT INTO contact_key_trigrams (company_id, trigram, name_key)
SELECT DISTINCT c.company_id, t.trigram, c.name_key
FROM contacts c, LATERAL unnest(show_trgm(regexp_replace(c.search, '[0-9]', ' ', 'g'))) AS t(trigram)
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TRIGGER contacts_key_trigrams_update ON contacts;
DROP TRIGGER contacts_key_trigrams_insert ON contacts;
DROP FUNCTION contacts_add_key_trigrams();
DROP TABLE contact_key_trigrams;
DROP INDEX contacts_search_keys;
