-- +goose Up

-- A business (waba) chat's paid dialog: sends until then are covered; the
-- first send after it takes one dialog from the company's balance.
ALTER TABLE chats ADD COLUMN dialog_until timestamptz;

-- +goose Down
ALTER TABLE chats DROP COLUMN dialog_until;
