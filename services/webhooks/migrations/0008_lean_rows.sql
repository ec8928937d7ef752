-- +goose Up
SET lock_timeout = '5s';

-- Fewer index entries per event and per delivery (docs/webhooks.md
-- "Indexes and plans"). Each entry is a b-tree descent and a page dirtied
-- in the statement that writes the row; pg_stat_statements gave 31
-- buffers per event to the intake and 24 per delivery to recording a
-- result, most of them index entries.
--
-- A recorded success (or failure, or drop) leaves pending, and with it
-- every index that only a pending delivery needs: the lane's (its chain,
-- the lane-head test, a subscription's waiting rows moved or dropped) and
-- the URL's (a paused URL's probe). Partial on status = 'pending', the
-- finished version of a row writes no entry into either, and only the
-- primary key gets one: deliveries_event goes (below), and so does
-- deliveries_finished, the retention's way to finished deliveries by
-- finished_at. The retention now deletes finished deliveries taken in
-- twice the retention ago, from the oldest by primary key (the order of
-- intake; one waits at most the retention, so it is kept at least the
-- retention after it finished, as before). A failed first attempt stays
-- pending (on the retry path) and keeps its entries.
--
-- Each predicate also names its index's first column as NOT NULL (always
-- true: both columns are NOT NULL). That fences each index off every
-- statement but those it is for, as "seq > 0" does deliveries_first
-- (0004_hot_claims.sql): a statement can be planned through a partial
-- index only if its own conditions imply the predicate, and only one that
-- compares subscription_id (the lane's chain, the lane-head test, a
-- subscription's waiting rows) or url (the probe) with something implies
-- it. With status = 'pending' alone, every statement that says as much
-- (ClaimRetries, ClaimFirst, NextDue, the retention) could be planned
-- through either after a quiet period, when the statistics say each holds
-- one row. The lane-head test, which does compare subscription_id, is a
-- subquery for the same reason (Queue's laneHead): as an anti-join it was
-- planned as a scan of the whole lane index per candidate, 591 index
-- entries per delivery in proctest.TestBacklogAfterQuietPeriod.
DROP INDEX deliveries_lane;
CREATE INDEX deliveries_lane ON deliveries (subscription_id, lane, first, seq)
    WHERE status = 'pending' AND subscription_id IS NOT NULL;
DROP INDEX deliveries_url;
CREATE INDEX deliveries_url ON deliveries (url, seq) WHERE status = 'pending' AND url IS NOT NULL;
DROP INDEX deliveries_finished;

-- What tied deliveries to their events: the foreign key checked every
-- delivery taken in with a lookup and a row lock on its event (5 buffers
-- per event and about 14 µs of the intake's statement), and
-- deliveries_event, read only by the purge of events without deliveries
-- (and the key's checks), got an entry from every delivery taken in and
-- again from every result recorded.
--
-- Every delivery is written by a statement that has its event at hand
-- (the intake's inserts the event in the same statement, a ping in the
-- same transaction, a redelivery renews it), and the retention now keeps
-- an event by age alone: three times the retention after it was taken in
-- or last redelivered (received_at, which a redelivery renews). A
-- delivery made of it waits at most the retention and is kept the
-- retention after it finished, so every delivery of an event, and every
-- row the list shows of them, is gone a whole retention before the event
-- (Queue.Expire). The purge checks the age on the row it deletes, so a
-- redelivery renewing the event meanwhile keeps it (Repo.Redeliver).
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey;
DROP INDEX deliveries_event;

-- Nothing looks an event up by its seq (deliveries carry it), so its
-- uniqueness (an identity never repeats) was an index written per event
-- and read by nothing. The retention's scan by received_at needs no
-- b-tree: events are appended in received_at order (a redelivery's renewal
-- only widens the range of its block), so a block range index narrows the
-- scan as well, at almost no cost per event.
ALTER TABLE events DROP CONSTRAINT events_seq_key;
DROP INDEX events_received;
CREATE INDEX events_received ON events USING brin (received_at);

-- The paused URLs, read once per chain claim (Queue.Record) instead of a
-- lookup per delivery. Partial: a URL's failure counts do not change it,
-- so counting stays a heap-only update.
CREATE INDEX targets_paused ON targets (url) WHERE paused;

-- +goose Down
SET lock_timeout = '5s';
DROP INDEX targets_paused;
DROP INDEX events_received;
CREATE INDEX events_received ON events (received_at);
ALTER TABLE events ADD CONSTRAINT events_seq_key UNIQUE (seq);
-- Deliveries whose event went (none can be made: a claim reads the event)
-- would fail the key's check.
DELETE FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id);
CREATE INDEX deliveries_event ON deliveries (event_id);
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id);
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE status <> 'pending';
DROP INDEX deliveries_url;
CREATE INDEX deliveries_url ON deliveries (url, status, seq);
DROP INDEX deliveries_lane;
CREATE INDEX deliveries_lane ON deliveries (subscription_id, lane, status, first, seq);
