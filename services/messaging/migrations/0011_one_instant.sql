-- +goose Up
SET lock_timeout = '5s';

-- A business template's created_at and updated_at were two calls of
-- clock_timestamp(), which may read a microsecond apart: a template just
-- created showed updated_at after its created_at. now() is one instant
-- for the whole transaction, so a row inserted with both defaults gets the
-- same value twice (every insert of waba_templates is a statement of its
-- own, so that instant is the insert's). Updates still set updated_at
-- from clock_timestamp(): the moment of the change, after any wait for the
-- row's lock.
ALTER TABLE waba_templates
    ALTER COLUMN created_at SET DEFAULT now(),
    ALTER COLUMN updated_at SET DEFAULT now();

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE waba_templates
    ALTER COLUMN created_at SET DEFAULT clock_timestamp(),
    ALTER COLUMN updated_at SET DEFAULT clock_timestamp();
