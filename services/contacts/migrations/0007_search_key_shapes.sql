-- +goose Up
SET lock_timeout = '5s';

-- Where a name key's trigrams sit (issue 32, docs/contacts-search.md
-- "Ninth pass"). searchKeys counts, per name key, the query's trigrams
-- among its contacts' (contact_key_trigrams, 0006), which cannot tell a
-- key whose contacts hold them in one place from one whose contacts hold
-- them words apart: a typo in a first name (`maxxm popov`) shares 8 of its
-- 12 trigrams with every `X popov` key, `  m` and ` ma` coming from the
-- `mail` of their emails, and no run of a text holding both reaches the
-- threshold; 36-53 such keys to test sent 6.5% of the benchmark's typos
-- to the trigram index of contacts after the key count.
--
-- This table holds each key's distinct shapes of its contacts' search
-- texts: the text with every run of digits made one 0 and the trailing
-- phones (then ` 0` words) dropped. A shape keeps every trigram without a
-- digit of the texts it stands for, in their order, which is all that a
-- query without a digit can share with them, and all that decides whether
-- such a query can match (services/contacts/internal/adapters/postgres/
-- extent.go). Names and email addresses repeat their patterns: the
-- benchmark's 100,000 contacts have ~6 shapes a key (no email, or one of
-- five domains), 12,000 rows.
CREATE FUNCTION contact_search_shape(search text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN regexp_replace(regexp_replace(search, '[0-9]+', '0', 'g'), '( 0)+$', '');

CREATE TABLE contact_key_shapes (
    company_id bigint NOT NULL,
    name_key   text NOT NULL,
    shape      text NOT NULL,
    PRIMARY KEY (company_id, name_key, shape)
);

-- Statement triggers, as for contact_key_trigrams (0006): rows are only
-- added, in key order (concurrent writers of the same new row wait for
-- each other in one order), in the write's transaction. A shape of a
-- contact since renamed, rewritten or deleted stays and only keeps its key
-- a candidate.
-- +goose StatementBegin
CREATE FUNCTION contacts_add_key_shapes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO contact_key_shapes (company_id, name_key, shape)
        SELECT DISTINCT n.company_id, n.name_key, contact_search_shape(n.search)
        FROM new_contacts n
        JOIN old_contacts o ON o.id = n.id AND o.search IS DISTINCT FROM n.search
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO contact_key_shapes (company_id, name_key, shape)
        SELECT DISTINCT n.company_id, n.name_key, contact_search_shape(n.search)
        FROM new_contacts n
        ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER contacts_key_shapes_insert AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_contacts FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_key_shapes();
CREATE TRIGGER contacts_key_shapes_update AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_contacts NEW TABLE AS new_contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contacts_add_key_shapes();

-- The backfill: one pass over contacts. The triggers exist first and
-- contacts are locked against writes (CREATE TRIGGER's SHARE ROW EXCLUSIVE
-- lock) until this transaction commits, so no contact is missed; reads go
-- on. 100,000 contacts: ~1 s.
INSERT INTO contact_key_shapes (company_id, name_key, shape)
SELECT DISTINCT company_id, name_key, contact_search_shape(search) FROM contacts
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TRIGGER contacts_key_shapes_update ON contacts;
DROP TRIGGER contacts_key_shapes_insert ON contacts;
DROP FUNCTION contacts_add_key_shapes();
DROP TABLE contact_key_shapes;
DROP FUNCTION contact_search_shape(text);
