-- +goose Up

-- Claims as heap-only (HOT) updates. A claim sets claimed_until and
-- claim_token; while an index named either column (deliveries_claimed,
-- and deliveries_first's predicate), every claim wrote a new entry into
-- each of the nine indexes of deliveries, as much work as storing the
-- delivery. With no index on them, and room left on each page for the
-- claimed version (fillfactor), a claim rewrites the row in place.
--
-- ClaimFirst and the retry path skip a held row by its claimed_until
-- instead, so a lapsed lease is claimable again with nothing to clear.
--
-- "seq > 0" (always true: seq is the events' identity) fences the head
-- index off every statement but ClaimFirst, the one that says it. Without
-- it, the chain and the lane-head test, which imply the rest of the
-- predicate, were planned through this index after a quiet period (the
-- statistics then say it holds one row) and read the whole backlog per
-- batch: 474 entries per delivery in proctest.TestBacklogAfterQuietPeriod.
DROP INDEX deliveries_claimed;
DROP INDEX deliveries_first;
CREATE INDEX deliveries_first ON deliveries (seq) WHERE status = 'pending' AND first AND seq > 0;
ALTER TABLE deliveries SET (fillfactor = 70);

-- +goose Down
ALTER TABLE deliveries RESET (fillfactor);
DROP INDEX deliveries_first;
CREATE INDEX deliveries_first ON deliveries (seq) WHERE status = 'pending' AND first AND claim_token IS NULL;
CREATE INDEX deliveries_claimed ON deliveries (claimed_until) WHERE claimed_until > '-infinity';
