-- +goose NO TRANSACTION
-- +goose Up

-- A succeeded delivery's row by its id (Repo.Redeliver, and the list's
-- test that a row's delivery succeeded), for the deliveries deleted when
-- their success was recorded (0010_succeeded_gone.sql): only those rows
-- carry an event, so only they are indexed, one entry per delivery, not
-- per attempt. Built CONCURRENTLY (outside a transaction): on a large log
-- a plain CREATE INDEX would stop every recording (its SHARE lock blocks
-- inserts) for the whole scan of the table; this way writes go on, at the
-- price of two scans. The column is new, so the index starts empty.
CREATE INDEX CONCURRENTLY IF NOT EXISTS delivery_log_succeeded ON delivery_log (delivery_id) WHERE event_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS delivery_log_succeeded;
