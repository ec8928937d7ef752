-- +goose Up
SET lock_timeout = '5s';

-- A succeeded delivery is deleted by the statement that records its
-- success, not rewritten (docs/webhooks.md "What each row costs"): its
-- recorded version was a new row version and a primary key entry (the
-- other indexes are partial on pending), 6 of the 12 buffers of recording
-- a result, and a dead version every later reader of its pages passed.
-- Its row in the deliveries log carries what the list and a redelivery
-- read of it once it is gone: its event, and its lane and order (a
-- redelivery goes in the event's lane and order). Rows of deliveries that
-- still exist (waiting, failed, dropped) leave them NULL: the delivery
-- has them.
--
-- Columns without a default: added in the catalog alone, nothing is
-- rewritten; the ACCESS EXCLUSIVE lock is held for that moment only (and
-- waited for at most lock_timeout).
ALTER TABLE delivery_log
    ADD COLUMN event_id uuid,
    ADD COLUMN lane     bigint,
    ADD COLUMN seq      bigint;

-- +goose Down
SET lock_timeout = '5s';
ALTER TABLE delivery_log DROP COLUMN seq, DROP COLUMN lane, DROP COLUMN event_id;
