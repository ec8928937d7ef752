-- +goose Up

-- The delivery engine (design/webhooks.md "Delivery rules"; docs/webhooks.md).
--
-- A delivery is on the ordered path ("first") until its first attempt is
-- made: those of one subscription and lane (the chat, or 0 for events of
-- the connection itself) go one at a time in event order (seq). A failed
-- first attempt, a redelivery and a ping go on the retry path, which has
-- no order and is claimed by next_attempt_at.
--
-- A claim is a lease: claimed_until in the future and claim_token naming
-- the holder, so a replica killed mid-attempt leaves a row that another
-- takes again when the lease runs out, and a holder that outlived its
-- lease cannot record over the new holder's result.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_subscription_id_key;
ALTER TABLE deliveries
    ADD COLUMN lane            bigint      NOT NULL DEFAULT 0,
    ADD COLUMN seq             bigint      NOT NULL DEFAULT 0,
    ADD COLUMN first           boolean     NOT NULL DEFAULT true,
    -- Failed attempts that count against the retry schedule (a failed
    -- probe to a paused URL does not).
    ADD COLUMN failures        integer     NOT NULL DEFAULT 0,
    ADD COLUMN claimed_until   timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN claim_token     uuid,
    -- The last attempt: what the deliveries log shows.
    ADD COLUMN response_status integer,
    ADD COLUMN error           text,
    ADD COLUMN duration_ms     integer,
    ADD COLUMN attempted_at    timestamptz,
    -- When it left pending: the log keeps it for the retention after.
    ADD COLUMN finished_at     timestamptz;
UPDATE deliveries d SET lane = coalesce(e.chat_id, 0), seq = e.seq FROM events e WHERE e.id = d.event_id;
-- The foreign key's checks and the purge of events without deliveries.
CREATE INDEX deliveries_event ON deliveries (event_id);

-- The indexes below are shaped so that each statement of the engine has
-- exactly one that fits it. Partial indexes sharing a predicate such as
-- status = 'pending' are all estimated from the same statistics, which
-- after a quiet period say "almost nothing pends"; the planner then sees
-- them as equally tiny and may walk the whole backlog through the wrong
-- one for every batch (proctest.TestBacklogAfterQuietPeriod).
DROP INDEX deliveries_pending;
-- A lane's next deliveries in order (Queue.Record's chain, the lane-head
-- test): equality on everything but seq.
CREATE INDEX deliveries_lane ON deliveries (subscription_id, lane, status, first, seq);
-- Heads in event order (ClaimFirst). claim_token IS NULL keeps the chain
-- (which does not say it) off this index, and claimed rows out of it; a
-- lapsed lease's token is cleared (Queue.ReleaseLapsed) to bring its row
-- back.
CREATE INDEX deliveries_first ON deliveries (seq) WHERE status = 'pending' AND first AND claim_token IS NULL;
-- The retry path, by due time.
CREATE INDEX deliveries_retry ON deliveries (next_attempt_at) WHERE status = 'pending' AND NOT first;
-- Leases to check for lapse. Not "claim_token IS NOT NULL": every
-- statement matching a token implies that, and would be drawn here.
CREATE INDEX deliveries_claimed ON deliveries (claimed_until) WHERE claimed_until > '-infinity';
-- The probe of a paused URL: its oldest waiting delivery.
CREATE INDEX deliveries_url ON deliveries (url, status, seq);
-- The deliveries log of a subscription, newest first.
CREATE INDEX deliveries_log ON deliveries (subscription_id, id DESC);
-- Retention of finished rows.
CREATE INDEX deliveries_finished ON deliveries (finished_at) WHERE status <> 'pending';

-- The JSON as sent, byte for byte (jsonb would re-space it).
ALTER TABLE events ALTER COLUMN payload TYPE json;
CREATE INDEX events_received ON events (received_at);

-- The health of each target URL, shared by every subscription using it.
-- failures counts consecutive failed attempts; at the configured number
-- the URL pauses: only a probe (its oldest waiting delivery) goes, at
-- probe_at, the step growing while it fails; a success resumes it.
CREATE TABLE targets (
    url           text        PRIMARY KEY,
    failures      integer     NOT NULL DEFAULT 0,
    paused        boolean     NOT NULL DEFAULT false,
    probe_step    integer     NOT NULL DEFAULT 0,
    probe_at      timestamptz NOT NULL DEFAULT '-infinity',
    paused_at     timestamptz
);

-- +goose Down
DROP TABLE targets;
DROP INDEX events_received;
ALTER TABLE events ALTER COLUMN payload TYPE jsonb;
DROP INDEX deliveries_finished;
DROP INDEX deliveries_log;
DROP INDEX deliveries_claimed;
DROP INDEX deliveries_url;
DROP INDEX deliveries_retry;
DROP INDEX deliveries_first;
DROP INDEX deliveries_lane;
CREATE INDEX deliveries_pending ON deliveries (next_attempt_at) WHERE status = 'pending';
DROP INDEX deliveries_event;
ALTER TABLE deliveries
    DROP COLUMN finished_at, DROP COLUMN attempted_at, DROP COLUMN duration_ms, DROP COLUMN error, DROP COLUMN response_status,
    DROP COLUMN claim_token, DROP COLUMN claimed_until, DROP COLUMN failures, DROP COLUMN first,
    DROP COLUMN seq, DROP COLUMN lane;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_subscription_id_key UNIQUE (event_id, subscription_id);
