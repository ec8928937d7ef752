-- +goose Up
SET lock_timeout = '5s';

-- Every send and every inbound message inserts a message and, for a send,
-- its queue row, and each foreign key checked the row it names with a
-- statement of its own (a trigger, and a FOR KEY SHARE lock on the chat or
-- the message): about a seventh of the accepted send's statement. Neither
-- check can fail: a message is written with its chat's row locked in the
-- same statement or transaction (the chat read or updated there, never
-- given by the caller), a queue row with its message in the same statement
-- or transaction, and nothing deletes chats or messages.
ALTER TABLE messages DROP CONSTRAINT messages_chat_id_fkey;
ALTER TABLE outbound_sends DROP CONSTRAINT outbound_sends_message_id_fkey;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE outbound_sends ADD CONSTRAINT outbound_sends_message_id_fkey FOREIGN KEY (message_id) REFERENCES messages (id);
ALTER TABLE messages ADD CONSTRAINT messages_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES chats (id);
