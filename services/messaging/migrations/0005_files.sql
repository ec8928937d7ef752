-- +goose Up
SET lock_timeout = '5s';

-- Uploaded files (POST /files/): the token is the unguessable part of the
-- public link, the storage key where the bytes are (adapters/storage). A row
-- is written only after the bytes are stored, so a row always has its bytes.
CREATE TABLE files (
    token       text        PRIMARY KEY,
    company_id  bigint      NOT NULL,
    name        text        NOT NULL,
    size        bigint      NOT NULL,
    mime_type   text        NOT NULL,
    storage_key text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX files_company ON files (company_id, created_at);

-- +goose Down
DROP TABLE files;
