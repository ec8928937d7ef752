-- +goose Up
SET lock_timeout = '5s';

-- One refresh of contact_details per write (issue 25). A contact write
-- touches up to six child statements (phones and emails cleared and
-- written, tags cleared and written, notes added), and each statement's
-- trigger rebuilt the contact's whole details, notes included: with 100
-- notes of 8 KB, ~10-15 ms each time. A write may now defer them: with
-- contacts.details_deferred 'on' (set_config local to its transaction)
-- the triggers only note the contacts they touched in
-- contacts.details_pending, and flush_contact_details(), which the write
-- calls after its last statement, refreshes each of them once, as the
-- last trigger would have. Outside such a write (a tag's delete cascading,
-- a chat bound, a note added) nothing changes: the trigger refreshes at
-- once.

-- note_contact_details refreshes the given contacts' details now, or, in
-- a write that defers them, notes them for flush_contact_details.
-- +goose StatementBegin
CREATE FUNCTION note_contact_details(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    IF current_setting('contacts.details_deferred', true) = 'on' THEN
        PERFORM set_config('contacts.details_pending',
            concat_ws(',', nullif(current_setting('contacts.details_pending', true), ''), array_to_string(ids, ',')), true);
        RETURN;
    END IF;
    PERFORM refresh_contact_details(ids);
END
$$;
-- +goose StatementEnd

-- flush_contact_details ends a deferring write: the triggers refresh at
-- once again, and every contact noted meanwhile is refreshed, once.
-- +goose StatementBegin
CREATE FUNCTION flush_contact_details() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    pending text := nullif(current_setting('contacts.details_pending', true), '');
BEGIN
    PERFORM set_config('contacts.details_deferred', 'off', true), set_config('contacts.details_pending', '', true);
    IF pending IS NOT NULL THEN
        PERFORM refresh_contact_details(ARRAY(SELECT DISTINCT id::bigint FROM unnest(string_to_array(pending, ',')) AS id));
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM note_contact_details(ARRAY(SELECT DISTINCT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM note_contact_details(ARRAY(SELECT DISTINCT contact_id FROM old_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM note_contact_details(ARRAY(
        SELECT contact_id FROM old_rows UNION SELECT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(SELECT DISTINCT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(SELECT DISTINCT contact_id FROM old_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION contact_details_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM refresh_contact_details(ARRAY(
        SELECT contact_id FROM old_rows UNION SELECT contact_id FROM new_rows));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP FUNCTION flush_contact_details();
DROP FUNCTION note_contact_details(bigint[]);
