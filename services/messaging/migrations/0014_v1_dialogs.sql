-- +goose Up
SET lock_timeout = '5s';

-- The v1 dialogs list: a connection's chats, latest message first (a chat
-- without one by its creation), ties by id; a page reads the index in
-- order and stops after it.
CREATE INDEX chats_v1_dialogs ON chats (connection_id, (coalesce(last_message_at, created_at)) DESC, id DESC);

-- +goose Down
SET lock_timeout = '5s';
DROP INDEX chats_v1_dialogs;
