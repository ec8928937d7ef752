-- +goose Up
SET lock_timeout = '5s';

-- The deliveries log keeps a row per attempt (docs/webhooks.md "The
-- deliveries log"). A delivery's row kept only its last attempt, so a
-- 500 followed by a 200 showed the 200 alone. delivery_log is appended to
-- by the statement that records the attempt's result on the delivery (and
-- by the retention when it gives a delivery up), so a state change and its
-- row commit together; rows are never updated.
--
-- status and next_attempt_at are the delivery's as the row left it: a
-- failed attempt that will be retried says pending and when the retry is
-- due. attempt is the attempt's number (1 for the first); the retention's
-- row repeats the number of attempts made (0 if none).
--
-- No primary key: the table is read only through delivery_log_list and
-- pruned by age, so a key would be one more index written with every
-- attempt and read by nothing. No foreign key to deliveries either (its
-- check would need an index here, and deleting deliveries would have to
-- look rows up): the list shows a row while its delivery exists, and rows
-- are pruned at twice the retention, by when every delivery they could
-- belong to is gone (it waits at most the retention, and is kept the
-- retention after it finished).
CREATE TABLE delivery_log (
    delivery_id     bigint      NOT NULL,
    subscription_id uuid        NOT NULL,
    attempt         integer     NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'dropped')),
    response_status integer,
    error           text,
    duration_ms     integer,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- A subscription's log, newest first; ties (one transaction records many
-- attempts) broken the same way the list orders them.
CREATE INDEX delivery_log_list ON delivery_log (subscription_id, created_at, delivery_id, attempt);
-- Retention: rows are appended in time order, so a block range index is
-- all the purge needs, at almost no cost per row.
CREATE INDEX delivery_log_created ON delivery_log USING brin (created_at);

-- The last attempt of what the deliveries hold now becomes its row.
INSERT INTO delivery_log (delivery_id, subscription_id, attempt, status, response_status, error, duration_ms,
                          next_attempt_at, created_at)
SELECT id, subscription_id, attempt, status, response_status, error, duration_ms,
       CASE WHEN status = 'pending' AND isfinite(next_attempt_at) THEN next_attempt_at END,
       coalesce(attempted_at, finished_at, created_at)
FROM deliveries WHERE attempt > 0 OR status <> 'pending';

-- Left in deliveries, the log lists only the deliveries still waiting for
-- their first attempt (a ping or a redelivery just queued, a chat's events
-- behind a paused URL); this index finds them in the list's order. Its
-- predicate changes only when an attempt is recorded, which rewrites the
-- row's index entries anyway, so claims stay heap-only updates
-- (0004_hot_claims.sql).
DROP INDEX deliveries_log;
CREATE INDEX deliveries_log ON deliveries (subscription_id, created_at, id) WHERE attempt = 0 AND status = 'pending';

-- The last attempt's details now live in the log alone: response_status,
-- error, duration_ms and attempted_at of deliveries are no longer written
-- or read. They stay until no replica of the version before runs (during
-- a rolling deploy its replicas still record into them, and would fail
-- without them); a later migration drops them. What such a replica
-- records meanwhile has no log row.

-- +goose Down
SET lock_timeout = '5s';
-- Each delivery's newest row back onto it.
UPDATE deliveries d SET response_status = l.response_status, error = l.error, duration_ms = l.duration_ms,
                        attempted_at = l.created_at
FROM (SELECT DISTINCT ON (delivery_id) * FROM delivery_log ORDER BY delivery_id, created_at DESC, attempt DESC) l
WHERE l.delivery_id = d.id;
DROP INDEX deliveries_log;
CREATE INDEX deliveries_log ON deliveries (subscription_id, id DESC);
DROP TABLE delivery_log;
