-- +goose Up
SET lock_timeout = '5s';

-- The inbox (GET /messaging/chats/with_contacts/): a company's contacts by
-- their latest message, newest first, paged by a keyset cursor on
-- (last activity, contact_id). A contact's place is its newest chat's
-- last_message_at, which every inbound and outbound message sets in its
-- chat's row-locked transaction, so the inbox needs no table of its own.
--
-- chats_inbox is the walk: the company's chats with messages, in the
-- page's order; a page reads it from the cursor down and stops once it has
-- `limit` contacts. A chat that is not its contact's newest is skipped by
-- probing chats_contact_activity (the anti-join "no newer chat of the same
-- contact"), which also gives a page's contacts all their chats.
-- chats_inbox_unanswered is the same walk over unanswered chats only
-- (unanswered_only=true), so a company with few unanswered chats does not
-- read past all the answered ones. Chats without messages (never written
-- to, or created by POST /messaging/chats/ and left) and chats not yet bound
-- to a contact are in none of them: they are not in the inbox.
CREATE INDEX chats_inbox ON chats (company_id, last_message_at DESC, contact_id DESC)
    WHERE last_message_at IS NOT NULL AND contact_id IS NOT NULL;
CREATE INDEX chats_inbox_unanswered ON chats (company_id, last_message_at DESC, contact_id DESC)
    WHERE last_message_at IS NOT NULL AND contact_id IS NOT NULL AND unanswered_count > 0;
CREATE INDEX chats_contact_activity ON chats (company_id, contact_id, last_message_at DESC, id DESC)
    WHERE last_message_at IS NOT NULL AND contact_id IS NOT NULL;

-- +goose Down
DROP INDEX chats_contact_activity;
DROP INDEX chats_inbox_unanswered;
DROP INDEX chats_inbox;
