package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Queue is the deliveries table as the engine's queue: rows claimed with
// FOR UPDATE SKIP LOCKED and held by a lease (claimed_until, claim_token),
// so replicas never take the same row and a killed one's rows come back.
// docs/webhooks.md explains the choice over a queue library.
type Queue struct {
	db  *pgxpool.Pool
	log *slog.Logger
}

var _ app.Queue = (*Queue)(nil)

// NewQueue uses the pool of the webhooks database.
func NewQueue(db *pgxpool.Pool, log *slog.Logger) *Queue { return &Queue{db: db, log: log} }

// claimed sets the lease on the rows of the CTE "c" (their id, event_id
// and event_at) and returns them as attempts, signed with the secret of
// their subscription or of their v1 integration target (one primary-key
// lookup each; a delivery whose subscription is gone is not claimed), with
// their event's payload (eventOf). $2 is the lease in seconds.
const claimed = `
UPDATE deliveries d SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid()
FROM c CROSS JOIN LATERAL (` + eventOf + `) e
WHERE d.id = c.id
  AND (EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = d.subscription_id)
       OR EXISTS (SELECT 1 FROM integration_targets t WHERE t.id = d.subscription_id))
RETURNING d.id, d.event_id, d.subscription_id, d.url,
          coalesce((SELECT s.secret FROM subscriptions s WHERE s.id = d.subscription_id),
                   (SELECT t.secret FROM integration_targets t WHERE t.id = d.subscription_id)),
          e.payload::text, d.lane, d.seq, d.first, d.attempt, d.failures, d.claim_token, d.ctid::text, 0::bigint`

// eventOf is the payload of the event of the delivery c (its event_id and
// event_at), read where the intake wrote it (a tid scan: one buffer) and
// checked by its id there, else by the primary key (a descent: three
// buffers), when the event moved since (a redelivery renews it) or the
// delivery has no event_at (a redelivery, a ping, a row older than
// 0009_event_at.sql). The second branch runs only when the first finds
// nothing (the LIMIT stops the Append at its first row). No row when the
// event is gone: the delivery is not claimed, as with a join.
const eventOf = `SELECT ev.payload FROM events ev WHERE ev.ctid = c.event_at AND ev.id = c.event_id
	UNION ALL
	SELECT ev.payload FROM events ev WHERE ev.id = c.event_id
	LIMIT 1`

// notPaused is true for a delivery whose URL is not paused.
const notPaused = `NOT EXISTS (SELECT 1 FROM targets t WHERE t.url = d.url AND t.paused)`

// laneHead is true for a delivery of the ordered path that has no earlier
// one of its lane still waiting for a first attempt: it is its lane's
// oldest there.
//
// A subquery run per delivery, not NOT EXISTS: as an anti-join, after a
// quiet period (the statistics then say the lane index, partial on
// pending, holds one row) it was planned as a scan of the whole lane index
// once per candidate, with the lane compared in a join filter (196,000
// buffers for a claim of 64 over a backlog of 3,000). A subquery can only
// look its lane up, with the candidate's subscription and lane as the
// index's keys.
//
// It looks for the nearest earlier one (the lane index read backwards
// from the candidate), not the lane's oldest: most candidates that are no
// head are the rest of a run in flight (held by their head's claim), and
// the one right before them answers. Read from the lane's start, every
// one passed the index entries left by the lane's recorded deliveries
// (their rows rewritten, the entries not yet removed: a visit to the heap
// each) before reaching the head.
const laneHead = `(SELECT max(p.seq) FROM deliveries p
	WHERE p.subscription_id = d.subscription_id AND p.lane = d.lane AND p.status = 'pending' AND p.first AND p.seq < d.seq) IS NULL`

func scanAttempts(rows pgx.Rows, probe bool) ([]domain.Attempt, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Attempt, error) {
		a := domain.Attempt{Probe: probe}
		// The payload (text) straight into its []byte: one copy, not two.
		err := row.Scan(&a.ID, &a.EventID, &a.SubscriptionID, &a.URL, &a.Secret, &a.Payload, &a.Lane, &a.Seq,
			&a.First, &a.Attempts, &a.Failures, &a.Token, &a.Row, &a.Head)
		return a, err
	})
}

func secs(d time.Duration) float64 { return d.Seconds() }

// ClaimFirst implements app.Queue. A lane's second delivery is not a head
// while its first waits for (or is in) its first attempt, whoever holds
// it, so one lane never has two in flight in any replica. "seq > 0" is
// always true; it is what lets this statement, and no other, use the head
// index (migrations/0004_hot_claims.sql).
//
// It runs in a transaction that rules out sorting and bitmap scans, so its
// plan is the head index read in seq order, stopping at the n-th head.
// Heads are a lane's oldest and come early in that order; a bitmap scan
// of the whole index sorted afterwards (the plan the statistics chose in
// some runs of BenchmarkWebhooksFanout) tested every waiting delivery for
// being a head at every call: 35 buffers per delivery instead of 1 while
// a backlog drained.
//
// The lanes held by the caller are passed over first (a hashed test of
// each candidate's subscription and lane), before the test of a head.
func (q *Queue) ClaimFirst(ctx context.Context, n int, lease time.Duration, held ...app.Lane) ([]domain.Attempt, error) {
	subs, lanes := make([]string, len(held)), make([]int64, len(held))
	for i, l := range held {
		subs[i], lanes[i] = l.Subscription, l.Lane
	}
	var out []domain.Attempt
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	batch.Queue(`SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
		set_config('enable_sort', 'off', true)`)
	batch.Queue(`WITH c AS (
		SELECT d.id, d.event_id, d.event_at FROM deliveries d
		WHERE d.status = 'pending' AND d.first AND d.seq > 0 AND d.claimed_until < now()
		  AND (d.subscription_id, d.lane) NOT IN (SELECT u.s, u.l FROM unnest($3::uuid[], $4::bigint[]) AS u(s, l))
		  AND `+laneHead+` AND `+notPaused+`
		ORDER BY d.seq LIMIT $1
		FOR UPDATE OF d SKIP LOCKED)`+claimed, n, secs(lease), subs, lanes).Query(func(rows pgx.Rows) error {
		var err error
		out, err = scanAttempts(rows, false)
		return err
	})
	batch.Queue(`COMMIT`)
	if err := q.db.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("claim first attempts: %w", err)
	}
	return out, nil
}

// ClaimRetries implements app.Queue.
func (q *Queue) ClaimRetries(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error) {
	rows, err := q.db.Query(ctx, `WITH c AS (
		SELECT d.id, d.event_id, d.event_at FROM deliveries d
		WHERE d.status = 'pending' AND NOT d.first AND d.next_attempt_at <= now() AND d.claimed_until < now()
		  AND `+notPaused+`
		ORDER BY d.next_attempt_at LIMIT $1
		FOR UPDATE OF d SKIP LOCKED)`+claimed, n, secs(lease))
	if err != nil {
		return nil, fmt.Errorf("claim retries: %w", err)
	}
	out, err := scanAttempts(rows, false)
	if err != nil {
		return nil, fmt.Errorf("claim retries: %w", err)
	}
	return out, nil
}

// ClaimProbes implements app.Queue. The URL's probe time moves past the
// lease as it is taken, so no other replica probes it meanwhile; the
// result sets the next one. One statement, so one round trip: it runs at
// every claim round, nearly always to find no URL due, and as a
// transaction of its own (begin, the statement, commit) it was three,
// more than any other claim (BenchmarkWebhooksFanout: 84 rounds per
// 10,000 deliveries end to end).
func (q *Queue) ClaimProbes(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error) {
	// Each due URL's oldest waiting delivery: on the ordered path only a
	// lane's head (an older one of its lane may still be in flight).
	rows, err := q.db.Query(ctx, `WITH due AS (
			SELECT url FROM targets WHERE paused AND probe_at <= now() ORDER BY probe_at LIMIT $1 FOR UPDATE SKIP LOCKED),
		moved AS (
			UPDATE targets t SET probe_at = now() + make_interval(secs => $2) FROM due WHERE t.url = due.url
			RETURNING t.url),
		c AS (
			SELECT x.id, x.event_id, x.event_at FROM moved CROSS JOIN LATERAL (
				SELECT d.id, d.event_id, d.event_at FROM deliveries d
				WHERE d.url = moved.url AND d.status = 'pending' AND d.claimed_until < now() AND (NOT d.first OR `+laneHead+`)
				ORDER BY d.seq LIMIT 1
				FOR UPDATE OF d SKIP LOCKED) x)`+claimed, n, secs(lease))
	if err != nil {
		return nil, fmt.Errorf("claim probes: %w", err)
	}
	out, err := scanAttempts(rows, true)
	if err != nil {
		return nil, fmt.Errorf("claim probes: %w", err)
	}
	return out, nil
}

// Record implements app.Queue. The group's statements go to the server in
// one round trip (a pipeline in one transaction), each covering every
// batch of the group, with generic plans: the statements are the same
// every time, and re-planning them per call (what the plan cache chose for
// their LIMIT and array parameters) cost more CPU than running them.
//
// A generic plan is made once per connection and kept, from the table as
// it was then: made while deliveries held a few hundred rows (a start, a
// quiet period), it joined the group's rows to a sequential scan of the
// table, and kept doing so as the backlog grew, reading every row of
// deliveries twice per group (auto_explain in BenchmarkWebhooksFanout:
// 8,300 rows read per group of 441, most of the engine's database time).
// Every row these statements touch is reached by a key (the primary key,
// a lane's index entries, a URL), so the transaction plans them with
// sequential scans, hash joins and merge joins off: whatever the
// statistics say when the plan is made, it is the nested loop of index
// lookups, which costs in proportion to the group, not to the table.
//
// Each result is recorded on its delivery and appended to the deliveries
// log by one statement, so a row exists for every attempt whose result
// counts, and for no other.
func (q *Queue) Record(ctx context.Context, bs []app.Batch) ([][]domain.Attempt, error) {
	// The group's columns sized once (a group holds up to 64 runs of up to
	// 32), not grown by appending.
	n := 0
	for _, b := range bs {
		n += len(b.Sent)
	}
	var (
		ids                 = make([]int64, 0, n)
		tokens, statuses    = make([]string, 0, n), make([]string, 0, n)
		failures, durations = make([]int32, 0, n), make([]int32, 0, n)
		retryIn             = make([]float64, 0, n)
		answers             = make([]int32, 0, n)  // 0: no answer (NULL in the log)
		errs                = make([]string, 0, n) // "": no error (NULL in the log)
		heads               = make([]int64, 0, n)
		rowsAt              = make([]string, 0, n)
		uIDs                []int64
		uTokens             []string
	)
	for _, b := range bs {
		for _, rec := range b.Sent {
			a, r, d := rec.Attempt, rec.Result, rec.Decision
			ids, tokens, statuses = append(ids, a.ID), append(tokens, a.Token), append(statuses, d.Status)
			rowsAt, heads = append(rowsAt, cmp.Or(a.Row, noRow)), append(heads, a.Head)
			failures, retryIn = append(failures, int32(d.Failures)), append(retryIn, secs(d.RetryIn))
			durations = append(durations, int32(r.Duration.Milliseconds()))
			// Plain arrays, the missing answer or error as 0 or "" (NULLIF
			// in the statement): pgx encodes []int32 and []string directly,
			// and arrays of pointers by reflection, element by element.
			answers, errs = append(answers, int32(r.Status)), append(errs, r.Error)
		}
		for _, a := range b.Unsent {
			// The rest of a run hold no lease of their own: nothing to
			// release (the head's result frees them).
			if a.Head == 0 {
				uIDs, uTokens = append(uIDs, a.ID), append(uTokens, a.Token)
			}
		}
	}
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN`)
	batch.Queue(`SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
		set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`)
	// Each result goes to the row where its claim left it (its ctid: no
	// lookup by key); one whose row moved since (a URL change rewrites
	// what waits) is found by its id in the same statement. A claimed
	// row's token is checked either way; the rest of a run (r.head: the
	// run's first, whose claim holds them) count only if their head's
	// result was recorded under its token by this statement (led), and
	// only while they still wait on the ordered path. (The test of led is
	// an expression, so it is a hashed subplan: as a join, r was scanned
	// once per head recorded.)
	batch.Queue(`WITH r AS (
			SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::int[], $5::float8[], $6::int[], $7::text[], $8::int[],
				$9::text[], $10::bigint[]) AS r(id, token, status, failures, retry_in, answer, err, duration, loc, head)),
		at_row AS (
			UPDATE deliveries d SET `+recorded+`
			FROM r WHERE r.head = 0 AND d.ctid = r.loc::tid AND d.id = r.id AND d.claim_token = r.token
			RETURNING d.id, d.subscription_id, d.attempt, d.status, d.next_attempt_at, r.answer, r.err, r.duration),
		moved AS (
			UPDATE deliveries d SET `+recorded+`
			FROM r WHERE r.head = 0 AND d.id = r.id AND d.claim_token = r.token AND r.id NOT IN (SELECT id FROM at_row)
			RETURNING d.id, d.subscription_id, d.attempt, d.status, d.next_attempt_at, r.answer, r.err, r.duration),
		led AS (SELECT id FROM at_row UNION ALL SELECT id FROM moved),
		run_at_row AS (
			UPDATE deliveries d SET `+recorded+`
			FROM r WHERE (r.head IN (SELECT id FROM led)) IS TRUE AND d.ctid = r.loc::tid AND d.id = r.id
			  AND d.status = 'pending' AND d.first
			RETURNING d.id, d.subscription_id, d.attempt, d.status, d.next_attempt_at, r.answer, r.err, r.duration),
		run_moved AS (
			UPDATE deliveries d SET `+recorded+`
			FROM r WHERE (r.head IN (SELECT id FROM led)) IS TRUE AND d.id = r.id AND d.status = 'pending' AND d.first
			  AND r.id NOT IN (SELECT id FROM run_at_row)
			RETURNING d.id, d.subscription_id, d.attempt, d.status, d.next_attempt_at, r.answer, r.err, r.duration),
		u AS (SELECT * FROM at_row UNION ALL SELECT * FROM moved UNION ALL SELECT * FROM run_at_row UNION ALL SELECT * FROM run_moved)
		INSERT INTO delivery_log (delivery_id, subscription_id, attempt, status, response_status, error, duration_ms, next_attempt_at)
		SELECT id, subscription_id, attempt, status, nullif(answer, 0), nullif(err, ''), duration,
			CASE WHEN status = 'pending' THEN next_attempt_at END
		FROM u`,
		ids, tokens, statuses, failures, retryIn, answers, errs, durations, rowsAt, heads).Exec(func(tag pgconn.CommandTag) error {
		if lapsed := len(ids) - int(tag.RowsAffected()); lapsed > 0 {
			// A lease ran out and another holder took those deliveries (or
			// the subscription went): their results are the ones that
			// count. A chain below takes only what is free, from the
			// lane's head, so it cannot run ahead of that holder.
			q.log.Warn("webhooks: results of lapsed claims discarded", "delivery", ids[0], "lapsed", lapsed)
		}
		return nil
	})
	if len(uIDs) > 0 {
		batch.Queue(`UPDATE deliveries d SET claimed_until = '-infinity', claim_token = NULL
			FROM unnest($1::bigint[], $2::uuid[]) AS u(id, token) WHERE d.id = u.id AND d.claim_token = u.token`,
			uIDs, uTokens)
	}
	var changes []healthChange
	queueHealth(batch, bs, &changes)
	next := make([][]domain.Attempt, len(bs))
	type laneKey struct {
		sub  string
		lane int64
	}
	chained := map[laneKey]int{}
	var subs []string
	var lanes, after []int64
	var caps []int32
	var lease time.Duration
	for i, b := range bs {
		if b.Chain > 0 {
			a := b.Sent[0].Attempt
			chained[laneKey{a.SubscriptionID, a.Lane}] = i
			subs, lanes, caps = append(subs, a.SubscriptionID), append(lanes, a.Lane), append(caps, int32(b.Chain))
			after = append(after, a.Seq)
			lease = max(lease, b.Lease)
		}
	}
	if len(subs) > 0 {
		// Each lane's next deliveries in order, from its head: the head
		// alone is claimed (locked where the lane's index found it, leased
		// and given a token), and the rest of the run come with it,
		// unclaimed, held by its claim (domain.Attempt.Head): while the
		// head waits for its result none of them is a lane head, so no
		// claim in any replica can take one, and their results count only
		// with the head's (Record). Each delivery of a run used to be
		// locked and leased too, a row lock and a row version each: the
		// costliest statement of the engine alone in
		// BenchmarkWebhooksFanout (8.9 buffers per delivery, against 11.2
		// for recording the results; now 3-4).
		//
		// The head is looked for from the batch's first delivery on: every
		// delivery of the lane still waiting on the ordered path is it
		// (its result discarded: another holder has it, and the lane gets
		// nothing) or comes after it (it was the lane's head), and the
		// index entries before it are those of deliveries recorded, a
		// visit to the heap each (18 buffers per lane in
		// BenchmarkWebhooksFanout, from the lane's start). The rest
		// are read after the head's claim, from the lane's index past the
		// head's seq, once per claimed lane (a join of every
		// lane's rows to the claimed heads was a scan of one per row of
		// the other). A lane is one subscription's (or integration
		// target's): its secret is read once per lane (the integration
		// targets only for a lane that is not a subscription's;
		// materialized, or the planner computes it again for every
		// delivery of the lane), and a lane whose subscription is gone
		// takes nothing more. Each payload is read where its event was
		// written (eventOf). The paused URLs are read once
		// (targets_paused), not looked up per head. A head is locked where
		// the lane's index found it (its ctid): one updated since (its
		// lease, its url) is locked at its newest version and checked
		// again, or left out, and then its lane gets nothing; the claim
		// goes there too, and by id to a row the lock found rewritten (as
		// Record does with results).
		batch.Queue(`WITH w AS MATERIALIZED (
				SELECT u.sub, u.lane, u.cap, u.after, coalesce((SELECT s.secret FROM subscriptions s WHERE s.id = u.sub),
					(SELECT t.secret FROM integration_targets t WHERE t.id = u.sub)) AS secret
				FROM unnest($1::uuid[], $3::bigint[], $4::int[], $5::bigint[]) AS u(sub, lane, cap, after)),
			h AS (
				SELECT x.id, x.ctid, x.event_id, x.event_at, w.cap, w.secret
				FROM w CROSS JOIN LATERAL (
					SELECT id, ctid, event_id, event_at FROM deliveries
					WHERE subscription_id = w.sub AND lane = w.lane AND status = 'pending' AND first AND seq >= w.after
					ORDER BY seq LIMIT 1) x
				WHERE w.secret IS NOT NULL),
			l AS (
				SELECT d.id FROM deliveries d
				WHERE d.ctid = ANY (ARRAY(SELECT ctid FROM h)) AND d.claimed_until < now()
				  AND d.url <> ALL (ARRAY(SELECT url FROM targets WHERE paused))
				FOR UPDATE OF d SKIP LOCKED),
			c AS (SELECT h.* FROM h WHERE h.id = ANY (ARRAY(SELECT id FROM l))),
			at_row AS (
				UPDATE deliveries d SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid()
				FROM c CROSS JOIN LATERAL (`+eventOf+`) e
				WHERE d.ctid = c.ctid AND d.id = c.id
				RETURNING `+chainClaimed+`, c.cap),
			moved AS (
				UPDATE deliveries d SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid()
				FROM c CROSS JOIN LATERAL (`+eventOf+`) e
				WHERE d.id = c.id AND c.id NOT IN (SELECT id FROM at_row)
				RETURNING `+chainClaimed+`, c.cap),
			led AS (SELECT * FROM at_row UNION ALL SELECT * FROM moved)
			SELECT id, event_id, sub, url, secret, payload, lane, seq, first, attempt, failures, token, ctid, head FROM led
			UNION ALL
			SELECT r.id, r.event_id, led.sub, r.url, led.secret, e.payload::text, r.lane, r.seq, true, r.attempt, r.failures,
				led.token, r.ctid::text, led.id
			FROM led CROSS JOIN LATERAL (
				SELECT id, ctid, seq, event_id, event_at, url, lane, attempt, failures FROM deliveries
				WHERE subscription_id = led.sub AND lane = led.lane AND status = 'pending' AND first AND seq > led.seq
				ORDER BY seq LIMIT led.cap - 1) r
			CROSS JOIN LATERAL (SELECT r.event_id, r.event_at) c CROSS JOIN LATERAL (`+eventOf+`) e`,
			subs, secs(lease), lanes, caps, after).Query(func(rows pgx.Rows) error {
			got, err := scanAttempts(rows, false)
			for _, a := range got {
				i := chained[laneKey{a.SubscriptionID, a.Lane}]
				next[i] = append(next[i], a)
			}
			return err
		})
	}
	batch.Queue(`COMMIT`)
	if err := q.db.SendBatch(ctx, batch).Close(); err != nil {
		return nil, fmt.Errorf("record %d attempts of %d batches from delivery %d: %w", len(ids), len(bs), ids[0], err)
	}
	// Said once committed: a pause rolled back with its transaction did
	// not happen.
	for _, c := range changes {
		if c.paused {
			q.log.Warn("webhooks: url paused", "host", domain.Host(c.url), "subscription", c.sub,
				"failures", c.failures, "probe_at", c.probeAt.UTC().Format(time.RFC3339Nano))
		} else {
			q.log.Warn("webhooks: url resumed", "host", domain.Host(c.url), "subscription", c.sub)
		}
	}
	for _, n := range next {
		slices.SortFunc(n, func(x, y domain.Attempt) int { return cmp.Compare(x.Seq, y.Seq) })
	}
	return next, nil
}

// recorded is a result on its delivery, from the columns of "r" in Record.
const recorded = `status = r.status, first = false, failures = r.failures, attempt = d.attempt + 1,
	next_attempt_at = now() + make_interval(secs => r.retry_in),
	finished_at = CASE WHEN r.status = 'pending' THEN NULL ELSE now() END,
	claimed_until = '-infinity', claim_token = NULL`

// chainClaimed is what the chain's claim returns of a delivery d of event e
// with its lane's secret (c), as scanAttempts reads it.
const chainClaimed = `d.id, d.event_id, d.subscription_id AS sub, d.url, c.secret,
	e.payload::text AS payload, d.lane, d.seq, d.first, d.attempt, d.failures, d.claim_token AS token, d.ctid::text AS ctid,
	0::bigint AS head`

// noRow is the ctid of no row (offset 0 is never used): an attempt that
// does not know its row is recorded by its id.
const noRow = "(0,0)"

// queueHealth counts each URL's consecutive failures: a success clears
// them (and a pause); a failure adds one and pauses the URL at PauseAfter;
// a failed probe moves the next probe along the schedule. An address that
// does not resolve is no verdict on a receiver, so it counts neither way.
//
// A batch is one URL's, and every attempt in it but the last succeeded.
// A URL's batches are counted in the group's order; URLs go in sorted
// order, so two groups lock targets rows in the same order and cannot
// deadlock. A clear right after a clear of the same URL is left out.
//
// A pause and a resumption are added to changes (once each), for Record
// to log when the transaction has committed. The clear locks and reads
// the row it changes (was) only when there is something to clear, so the
// common case, a success on a healthy URL, reads the row as before and
// returns nothing.
func queueHealth(batch *pgx.Batch, bs []app.Batch, changes *[]healthChange) {
	byURL := map[string][]app.Batch{}
	for _, b := range bs {
		u := b.Sent[0].Attempt.URL
		byURL[u] = append(byURL[u], b)
	}
	for _, url := range slices.Sorted(maps.Keys(byURL)) {
		cleared := false
		// pauseLogged: every failure after the pause in the same
		// transaction sees the same paused_at = now().
		pauseLogged := false
		for _, b := range byURL[url] {
			last := b.Sent[len(b.Sent)-1]
			if (len(b.Sent) > 1 || last.Result.Outcome == domain.Delivered) && !cleared {
				batch.Queue(`WITH was AS (SELECT url, paused FROM targets WHERE url = $1 AND (failures > 0 OR paused) FOR UPDATE)
					UPDATE targets t SET failures = 0, paused = false, probe_step = 0, paused_at = NULL
					FROM was WHERE t.url = was.url
					RETURNING was.paused`, url).Query(func(rows pgx.Rows) error {
					for rows.Next() {
						var was bool
						if err := rows.Scan(&was); err != nil {
							return err
						}
						if was {
							*changes = append(*changes, healthChange{url: url, sub: last.Attempt.SubscriptionID})
						}
					}
					return rows.Err()
				})
				cleared = true
			}
			switch {
			case last.Result.Outcome == domain.Delivered, last.Result.Outcome == domain.Unresolvable:
				continue
			case last.Attempt.Probe:
				probes := make([]float64, len(b.Probes))
				for i, p := range b.Probes {
					probes[i] = secs(p)
				}
				batch.Queue(`UPDATE targets SET failures = failures + 1, probe_step = probe_step + 1,
						probe_at = now() + make_interval(secs => ($2::float8[])[least(probe_step + 2, cardinality($2::float8[]))])
					WHERE url = $1 AND paused`, url, probes)
			default:
				batch.Queue(`INSERT INTO targets AS t (url, failures, paused, paused_at, probe_at)
					VALUES ($1, 1, 1 >= $2, CASE WHEN 1 >= $2 THEN now() END, now() + make_interval(secs => $3))
					ON CONFLICT (url) DO UPDATE SET
						failures = t.failures + 1,
						paused = t.paused OR t.failures + 1 >= $2,
						paused_at = CASE WHEN NOT t.paused AND t.failures + 1 >= $2 THEN now() ELSE t.paused_at END,
						probe_step = CASE WHEN NOT t.paused AND t.failures + 1 >= $2 THEN 0 ELSE t.probe_step END,
						probe_at = CASE WHEN NOT t.paused AND t.failures + 1 >= $2
							THEN now() + make_interval(secs => $3) ELSE t.probe_at END
					RETURNING t.paused AND t.paused_at = now(), t.failures, t.probe_at`,
					url, b.PauseAfter, secs(b.Probes[0])).Query(func(rows pgx.Rows) error {
					for rows.Next() {
						var now bool
						var failures int
						var probeAt time.Time
						if err := rows.Scan(&now, &failures, &probeAt); err != nil {
							return err
						}
						if now && !pauseLogged {
							pauseLogged = true
							*changes = append(*changes, healthChange{url: url, sub: last.Attempt.SubscriptionID, paused: true,
								failures: failures, probeAt: probeAt})
						}
					}
					return rows.Err()
				})
			}
			cleared = false
		}
	}
}

// healthChange is a URL paused or resumed by a recording, for the log
// (its host alone: the URL's path and query may hold the receiver's
// secrets).
type healthChange struct {
	url, sub string
	paused   bool
	failures int
	probeAt  time.Time
}

// NextDue implements app.Queue.
func (q *Queue) NextDue(ctx context.Context) (time.Time, error) {
	var due *time.Time
	err := q.db.QueryRow(ctx, `SELECT least(
		(SELECT min(d.next_attempt_at) FROM deliveries d
		  WHERE d.status = 'pending' AND NOT d.first AND d.claimed_until < now() AND `+notPaused+`),
		(SELECT min(probe_at) FROM targets WHERE paused))`).Scan(&due)
	if err != nil {
		return time.Time{}, fmt.Errorf("next due: %w", err)
	}
	if due == nil {
		return time.Time{}, nil
	}
	return *due, nil
}

// purgeBatch bounds one purge statement, so retention never holds a long
// transaction over the tables the engine works on.
const purgeBatch = 5000

// Expire implements app.Queue. A delivery given up is logged in the
// statement that gives it up. A finished delivery stays until twice the
// retention after it was taken in (at least the retention after it
// finished), and its log rows with it (the list shows a row only while
// its delivery exists).
//
// Log rows are pruned by age alone, at twice the retention: a row is
// written at most the retention after its delivery was taken in, so no
// row is pruned while its delivery is shown, and the purge needs no index
// by delivery. Events too, at three times the retention after they were
// taken in or last redelivered (Repo.Redeliver renews received_at): every
// delivery of one is gone a retention before that, so the purge needs no
// index of deliveries by event (0008_lean_rows.sql). The age is checked on
// the row deleted, so a redelivery renewing it meanwhile keeps it.
func (q *Queue) Expire(ctx context.Context, retention time.Duration) (int64, error) {
	// One statement per path, each on its own index; what is held by a
	// live claim is left to its holder: on the ordered path that is a
	// claimed head and the rest of its lane, which its run may be sending
	// (Record's chain leases only a run's head).
	var expired int64
	for _, path := range []string{
		`status = 'pending' AND NOT first AND claimed_until < now()`,
		`status = 'pending' AND first AND claimed_until < now() AND NOT EXISTS (SELECT 1 FROM deliveries h
			WHERE h.subscription_id = deliveries.subscription_id AND h.lane = deliveries.lane AND h.status = 'pending' AND h.first
			  AND h.claimed_until >= now())`,
	} {
		tag, err := q.db.Exec(ctx, `WITH x AS (
				UPDATE deliveries SET status = 'failed', first = false, claimed_until = '-infinity', claim_token = NULL,
					finished_at = now()
				WHERE `+path+` AND created_at < now() - make_interval(secs => $1)
				RETURNING id, subscription_id, attempt)
			INSERT INTO delivery_log (delivery_id, subscription_id, attempt, status, error)
			SELECT id, subscription_id, attempt, 'failed', 'not delivered within the retention' FROM x`,
			secs(retention))
		if err != nil {
			return expired, fmt.Errorf("expire deliveries: %w", err)
		}
		expired += tag.RowsAffected()
	}
	for _, purge := range []string{
		// Finished deliveries taken in twice the retention ago, from the
		// oldest (the primary key's order is the order of intake): one
		// waits at most the retention, so each is kept at least the
		// retention after it finished, and no index is written for the
		// purge when a result is recorded (0008_lean_rows.sql). Whatever
		// still waits is younger than the retention, and so is everything
		// taken in after it: a batch that deletes less than it read has
		// reached the deliveries to keep.
		`DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries ORDER BY id LIMIT $2)
			AND status <> 'pending' AND created_at < now() - 2 * make_interval(secs => $1)`,
		// The log has no key: its rows are found by their place
		// (delivery_log_created narrows the scan to old blocks).
		`DELETE FROM delivery_log WHERE ctid = ANY (ARRAY(SELECT ctid FROM delivery_log
			WHERE created_at < now() - 2 * make_interval(secs => $1) LIMIT $2))`,
		`DELETE FROM events WHERE received_at < now() - 3 * make_interval(secs => $1) AND id IN (SELECT id FROM events
			WHERE received_at < now() - 3 * make_interval(secs => $1) LIMIT $2)`,
	} {
		for {
			del, err := q.db.Exec(ctx, purge, secs(retention), purgeBatch)
			if err != nil {
				return expired, fmt.Errorf("purge: %w", err)
			}
			if del.RowsAffected() < purgeBatch {
				break
			}
		}
	}
	return expired, nil
}

// Listen implements app.Queue.
func (q *Queue) Listen(ctx context.Context, wake func()) error {
	postgres.Listen(ctx, q.db, postgres.ListenOptions{
		Channel:    DeliveriesChannel,
		Notified:   func(string) { wake() },
		Listening:  wake,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
		Log: q.log,
	})
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
