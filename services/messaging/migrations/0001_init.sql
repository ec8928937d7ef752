-- +goose Up

-- A chat is a conversation with a person or group on one connection. The
-- messenger's id of it (source_chat_id) is unique per connection: the same
-- person again is the same chat.
CREATE TABLE chats (
    id                bigserial PRIMARY KEY,
    company_id        bigint      NOT NULL,
    connection_id     bigint      NOT NULL,
    connection_type   text        NOT NULL,
    source_chat_id    text        NOT NULL,
    -- null only until contacts has bound the chat
    contact_id        bigint,
    name              text        NOT NULL DEFAULT '',
    is_group          boolean     NOT NULL DEFAULT false,
    avatar_url        text,
    profile_link      text,
    -- digits only
    phone             text,
    username          text,
    messenger_user_id text,
    unanswered_count  integer     NOT NULL DEFAULT 0 CHECK (unanswered_count >= 0),
    -- the person's last message: opens a business chat's dialog session
    last_inbound_at   timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_message_at   timestamptz,
    UNIQUE (connection_id, source_chat_id)
);
CREATE INDEX chats_company_id ON chats (company_id, id);

-- Blocked chats of a connection (spec 2.3, 4.1). A chat's blacklist item is
-- found by (connection_id, source_chat_id), so a phone blocked before its
-- chat exists blocks that chat too.
CREATE TABLE blacklist_items (
    id             bigserial PRIMARY KEY,
    company_id     bigint      NOT NULL,
    connection_id  bigint      NOT NULL,
    source_chat_id text        NOT NULL,
    chat_name      text        NOT NULL DEFAULT '',
    phone          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (connection_id, source_chat_id)
);

-- +goose Down
DROP TABLE blacklist_items;
DROP TABLE chats;
