-- +goose Up
-- A chat's event lock: every transaction that queues an event of a chat
-- (an inbound message, a send's record, a receipt, an error) holds it until
-- it commits, so a chat's events take their outbox seq in commit order and
-- are relayed in it; a contact's binding holds it too, so an event never
-- commits with the chat's old contact after the new one. It is a
-- transaction-scoped advisory lock rather than the chat's row lock so that
-- accepting a send, which updates the chat's row and queues no event, never
-- waits for a group of records or receipts, nor they for it.
--
-- The two-key form (two int4: the id's high and low halves, the low one
-- shifted into int4's range) is used for chats only in this database, and
-- never meets the one-key (bigint) locks, which PostgreSQL keeps apart.
-- +goose StatementBegin
CREATE FUNCTION lock_chat_events(chat bigint) RETURNS void
LANGUAGE sql VOLATILE AS $$
  SELECT pg_advisory_xact_lock((chat >> 32)::int4, ((chat & 4294967295) - 2147483648)::int4)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION lock_chat_events(bigint);
