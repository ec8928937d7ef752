-- +goose Up
SET lock_timeout = '5s';

-- A contact's details (phones, emails, tags, notes, chats) kept as one JSON
-- object of five lists, in the order and with the fields the repository
-- reads (storedDetails in adapters/postgres), so a contact read touches two
-- tables instead of six (issue 12: reading the five child tables, even
-- empty ones, doubled PostgreSQL's work per contact read). Triggers on the
-- child tables keep it exact: every write to them, the cascades of a tag's
-- delete included, refreshes the contacts it touched in the same
-- transaction. A contact without a row here has no details.
--
-- Its own table, not a column of contacts: a refresh then writes one
-- narrow row with one index, where a new version of the contacts row would
-- be written into all of contacts' indexes (the trigram GIN among them)
-- and a bulk load of phones would leave contacts twice its size.
CREATE TABLE contact_details (
    contact_id bigint PRIMARY KEY REFERENCES contacts (id) ON DELETE CASCADE,
    details    json NOT NULL
);

-- contact_details_of is the details of a contact as its tables hold them.
-- +goose StatementBegin
CREATE FUNCTION contact_details_of(contact bigint) RETURNS json LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'phones', coalesce((SELECT json_agg(json_build_object('type', p.type, 'phone', p.phone) ORDER BY p.position)
            FROM contact_phones p WHERE p.contact_id = contact), '[]'),
        'emails', coalesce((SELECT json_agg(json_build_object('type', e.type, 'email', e.email) ORDER BY e.position)
            FROM contact_emails e WHERE e.contact_id = contact), '[]'),
        'tags', coalesce((SELECT json_agg(t.tag_id ORDER BY t.tag_id)
            FROM contact_tags t WHERE t.contact_id = contact), '[]'),
        'notes', coalesce((SELECT json_agg(json_build_object('id', n.id, 'contact_id', n.contact_id, 'type', n.type,
                'text', n.text, 'created_by', n.created_by, 'updated_by', n.updated_by,
                'created_at', n.created_at, 'updated_at', n.updated_at) ORDER BY n.updated_at DESC, n.id DESC)
            FROM notes n WHERE n.contact_id = contact), '[]'),
        'chats', coalesce((SELECT json_agg(json_build_object('company_id', ch.company_id, 'connection_id', ch.connection_id,
                'connection_type', ch.connection_type, 'chat_id', ch.chat_id, 'source_chat_id', ch.source_chat_id,
                'phone', ch.phone, 'username', ch.username, 'messenger_user_id', ch.messenger_user_id, 'name', ch.name,
                'profile_link', ch.profile_link, 'is_group', ch.is_group) ORDER BY ch.created_at, ch.chat_id)
            FROM contact_chats ch WHERE ch.contact_id = contact), '[]'))
$$;
-- +goose StatementEnd

-- refresh_contact_details recomputes the details of the given contacts.
-- It locks their rows first (in id order, so concurrent refreshes never
-- wait in a cycle; FOR NO KEY UPDATE, which the foreign key checks of
-- child rows being written do not wait for) and computes in a second
-- statement: under READ COMMITTED each statement of a function takes a
-- fresh snapshot, so a concurrent writer of the same contact, which held
-- the lock, has committed by then and its rows are in the result.
-- Computing in the locking statement would use a snapshot taken before
-- the wait and drop that writer's rows. Contacts deleted meanwhile (a
-- cascade) are skipped.
-- +goose StatementBegin
CREATE FUNCTION refresh_contact_details(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM contacts WHERE id = ANY(ids) ORDER BY id FOR NO KEY UPDATE;
    INSERT INTO contact_details (contact_id, details)
    SELECT id, contact_details_of(id) FROM contacts WHERE id = ANY(ids)
    ON CONFLICT (contact_id) DO UPDATE SET details = excluded.details;
END
$$;
-- +goose StatementEnd

-- Statement triggers with transition tables: one refresh per statement
-- and contact, however many child rows the statement wrote.
-- +goose StatementBegin
CREATE FUNCTION contact_details_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(SELECT DISTINCT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION contact_details_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(SELECT DISTINCT contact_id FROM old_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION contact_details_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(
        SELECT contact_id FROM old_rows UNION SELECT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER contact_phones_details_insert AFTER INSERT ON contact_phones
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_inserted();
CREATE TRIGGER contact_phones_details_update AFTER UPDATE ON contact_phones
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_updated();
CREATE TRIGGER contact_phones_details_delete AFTER DELETE ON contact_phones
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_deleted();

CREATE TRIGGER contact_emails_details_insert AFTER INSERT ON contact_emails
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_inserted();
CREATE TRIGGER contact_emails_details_update AFTER UPDATE ON contact_emails
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_updated();
CREATE TRIGGER contact_emails_details_delete AFTER DELETE ON contact_emails
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_deleted();

CREATE TRIGGER contact_tags_details_insert AFTER INSERT ON contact_tags
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_inserted();
CREATE TRIGGER contact_tags_details_update AFTER UPDATE ON contact_tags
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_updated();
CREATE TRIGGER contact_tags_details_delete AFTER DELETE ON contact_tags
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_deleted();

CREATE TRIGGER notes_details_insert AFTER INSERT ON notes
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_inserted();
CREATE TRIGGER notes_details_update AFTER UPDATE ON notes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_updated();
CREATE TRIGGER notes_details_delete AFTER DELETE ON notes
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_deleted();

CREATE TRIGGER contact_chats_details_insert AFTER INSERT ON contact_chats
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_inserted();
CREATE TRIGGER contact_chats_details_update AFTER UPDATE ON contact_chats
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_updated();
CREATE TRIGGER contact_chats_details_delete AFTER DELETE ON contact_chats
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_details_deleted();

-- Existing contacts: those with any detail.
INSERT INTO contact_details (contact_id, details)
SELECT c.id, contact_details_of(c.id) FROM contacts c
WHERE EXISTS (SELECT FROM contact_phones p WHERE p.contact_id = c.id)
   OR EXISTS (SELECT FROM contact_emails e WHERE e.contact_id = c.id)
   OR EXISTS (SELECT FROM contact_tags t WHERE t.contact_id = c.id)
   OR EXISTS (SELECT FROM notes n WHERE n.contact_id = c.id)
   OR EXISTS (SELECT FROM contact_chats ch WHERE ch.contact_id = c.id);

-- +goose Down
DROP TRIGGER contact_chats_details_delete ON contact_chats;
DROP TRIGGER contact_chats_details_update ON contact_chats;
DROP TRIGGER contact_chats_details_insert ON contact_chats;
DROP TRIGGER notes_details_delete ON notes;
DROP TRIGGER notes_details_update ON notes;
DROP TRIGGER notes_details_insert ON notes;
DROP TRIGGER contact_tags_details_delete ON contact_tags;
DROP TRIGGER contact_tags_details_update ON contact_tags;
DROP TRIGGER contact_tags_details_insert ON contact_tags;
DROP TRIGGER contact_emails_details_delete ON contact_emails;
DROP TRIGGER contact_emails_details_update ON contact_emails;
DROP TRIGGER contact_emails_details_insert ON contact_emails;
DROP TRIGGER contact_phones_details_delete ON contact_phones;
DROP TRIGGER contact_phones_details_update ON contact_phones;
DROP TRIGGER contact_phones_details_insert ON contact_phones;
DROP FUNCTION contact_details_updated();
DROP FUNCTION contact_details_deleted();
DROP FUNCTION contact_details_inserted();
DROP FUNCTION refresh_contact_details(bigint[]);
DROP FUNCTION contact_details_of(bigint);
DROP TABLE contact_details;
