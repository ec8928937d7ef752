package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
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

// claimed sets the lease on the rows of the CTE "c" (their ids) and
// returns them as attempts. $2 is the lease in seconds.
const claimed = `
UPDATE deliveries d SET claimed_until = now() + make_interval(secs => $2), claim_token = gen_random_uuid()
FROM c, events e, subscriptions s
WHERE d.id = c.id AND e.id = d.event_id AND s.id = d.subscription_id
RETURNING d.id, d.event_id, d.subscription_id, d.url, s.secret, e.payload::text, d.lane, d.seq, d.first,
          d.attempt, d.failures, d.claim_token`

// notPaused is true for a delivery whose URL is not paused.
const notPaused = `NOT EXISTS (SELECT 1 FROM targets t WHERE t.url = d.url AND t.paused)`

// laneHead is true for a delivery of the ordered path that has no earlier
// one of its lane still waiting for a first attempt.
const laneHead = `NOT EXISTS (SELECT 1 FROM deliveries p
	WHERE p.subscription_id = d.subscription_id AND p.lane = d.lane
	  AND p.status = 'pending' AND p.first AND p.seq < d.seq)`

func scanAttempts(rows pgx.Rows, probe bool) ([]domain.Attempt, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Attempt, error) {
		a := domain.Attempt{Probe: probe}
		var payload string
		err := row.Scan(&a.ID, &a.EventID, &a.SubscriptionID, &a.URL, &a.Secret, &payload, &a.Lane, &a.Seq,
			&a.First, &a.Attempts, &a.Failures, &a.Token)
		a.Payload = []byte(payload)
		return a, err
	})
}

func secs(d time.Duration) float64 { return d.Seconds() }

// ClaimFirst implements app.Queue. A lane's second delivery is not a head
// while its first waits for (or is in) its first attempt, whoever holds
// it, so one lane never has two in flight in any replica.
func (q *Queue) ClaimFirst(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error) {
	rows, err := q.db.Query(ctx, `WITH c AS (
		SELECT d.id FROM deliveries d
		WHERE d.status = 'pending' AND d.first AND d.claimed_until < now() AND `+laneHead+` AND `+notPaused+`
		ORDER BY d.seq LIMIT $1
		FOR UPDATE OF d SKIP LOCKED)`+claimed, n, secs(lease))
	if err != nil {
		return nil, fmt.Errorf("claim first attempts: %w", err)
	}
	out, err := scanAttempts(rows, false)
	if err != nil {
		return nil, fmt.Errorf("claim first attempts: %w", err)
	}
	return out, nil
}

// ClaimRetries implements app.Queue.
func (q *Queue) ClaimRetries(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error) {
	rows, err := q.db.Query(ctx, `WITH c AS (
		SELECT d.id FROM deliveries d
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
// result sets the next one.
func (q *Queue) ClaimProbes(ctx context.Context, n int, lease time.Duration) ([]domain.Attempt, error) {
	var out []domain.Attempt
	err := pgx.BeginFunc(ctx, q.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH due AS (
			SELECT url FROM targets WHERE paused AND probe_at <= now() ORDER BY probe_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE targets t SET probe_at = now() + make_interval(secs => $2) FROM due WHERE t.url = due.url
			RETURNING t.url`, n, secs(lease))
		if err != nil {
			return err
		}
		urls, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, u := range urls {
			// The oldest waiting delivery: on the ordered path only a lane's
			// head (an older one of its lane may still be in flight).
			rows, err := tx.Query(ctx, `WITH c AS (
				SELECT d.id FROM deliveries d
				WHERE d.url = $1 AND d.status = 'pending' AND d.claimed_until < now() AND (NOT d.first OR `+laneHead+`)
				ORDER BY d.seq LIMIT 1
				FOR UPDATE OF d SKIP LOCKED)`+claimed, u, secs(lease))
			if err != nil {
				return err
			}
			got, err := scanAttempts(rows, true)
			if err != nil {
				return err
			}
			out = append(out, got...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim probes: %w", err)
	}
	return out, nil
}

// Record implements app.Queue.
func (q *Queue) Record(ctx context.Context, rec app.Recording) (*domain.Attempt, error) {
	a, r, d := rec.Attempt, rec.Result, rec.Decision
	var next *domain.Attempt
	err := pgx.BeginFunc(ctx, q.db, func(tx pgx.Tx) error {
		var status *int
		if r.Status != 0 {
			status = &r.Status
		}
		var errText *string
		if r.Error != "" {
			errText = &r.Error
		}
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET
				status = $3, first = $4, failures = $5, attempt = attempt + 1,
				next_attempt_at = CASE WHEN $6 THEN next_attempt_at ELSE now() + make_interval(secs => $7) END,
				response_status = $8, error = $9, duration_ms = $10, attempted_at = now(),
				finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END,
				claimed_until = '-infinity', claim_token = NULL
			WHERE id = $1 AND claim_token = $2 AND status = 'pending'`,
			a.ID, a.Token, d.Status, d.First, d.Failures, d.KeepSchedule, secs(d.RetryIn),
			status, errText, r.Duration.Milliseconds())
		if err != nil {
			return fmt.Errorf("record delivery %d: %w", a.ID, err)
		}
		if tag.RowsAffected() == 0 {
			// The lease ran out and another holder took it (or the
			// subscription went): its result is the one that counts.
			q.log.Warn("webhooks: result of a lapsed claim discarded", "delivery", a.ID)
			return nil
		}
		if err := q.health(ctx, tx, rec); err != nil {
			return err
		}
		if !rec.Chain || (d.Status == domain.StatusPending && d.First) {
			return nil
		}
		rows, err := tx.Query(ctx, `WITH h AS (
				SELECT id FROM deliveries WHERE subscription_id = $1 AND lane = $3 AND status = 'pending' AND first
				ORDER BY seq LIMIT 1),
			c AS (
				SELECT d.id FROM deliveries d JOIN h USING (id)
				WHERE d.claimed_until < now() AND `+notPaused+`
				FOR UPDATE OF d SKIP LOCKED)`+claimed, a.SubscriptionID, secs(rec.Lease), a.Lane)
		if err != nil {
			return fmt.Errorf("claim the lane's next: %w", err)
		}
		got, err := scanAttempts(rows, false)
		if err != nil {
			return fmt.Errorf("claim the lane's next: %w", err)
		}
		if len(got) == 1 {
			next = &got[0]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

// health counts the URL's consecutive failures: a success clears them
// (and a pause); a failure adds one and pauses the URL at PauseAfter; a
// failed probe moves the next probe along the schedule. An address that
// does not resolve is no verdict on a receiver, so it counts neither way.
func (q *Queue) health(ctx context.Context, tx pgx.Tx, rec app.Recording) error {
	var err error
	switch {
	case rec.Result.Outcome == domain.Delivered:
		_, err = tx.Exec(ctx, `UPDATE targets SET failures = 0, paused = false, probe_step = 0, paused_at = NULL
			WHERE url = $1 AND (failures > 0 OR paused)`, rec.Attempt.URL)
	case rec.Result.Outcome == domain.Unresolvable:
	case rec.Attempt.Probe:
		probes := make([]float64, len(rec.Probes))
		for i, p := range rec.Probes {
			probes[i] = secs(p)
		}
		_, err = tx.Exec(ctx, `UPDATE targets SET failures = failures + 1, probe_step = probe_step + 1,
				probe_at = now() + make_interval(secs => ($2::float8[])[least(probe_step + 2, cardinality($2::float8[]))])
			WHERE url = $1 AND paused`, rec.Attempt.URL, probes)
	default:
		_, err = tx.Exec(ctx, `INSERT INTO targets AS t (url, failures, paused, paused_at, probe_at)
			VALUES ($1, 1, 1 >= $2, CASE WHEN 1 >= $2 THEN now() END, now() + make_interval(secs => $3))
			ON CONFLICT (url) DO UPDATE SET
				failures = t.failures + 1,
				paused = t.paused OR t.failures + 1 >= $2,
				paused_at = CASE WHEN NOT t.paused AND t.failures + 1 >= $2 THEN now() ELSE t.paused_at END,
				probe_step = CASE WHEN NOT t.paused AND t.failures + 1 >= $2 THEN 0 ELSE t.probe_step END,
				probe_at = CASE WHEN NOT t.paused AND t.failures + 1 >= $2
					THEN now() + make_interval(secs => $3) ELSE t.probe_at END`,
			rec.Attempt.URL, rec.PauseAfter, secs(rec.Probes[0]))
	}
	if err != nil {
		return fmt.Errorf("target health of delivery %d: %w", rec.Attempt.ID, err)
	}
	return nil
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

// Expire implements app.Queue. A finished delivery stays in the log for
// the retention after it finished; an event goes with its last delivery.
func (q *Queue) Expire(ctx context.Context, retention time.Duration) (int64, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deliveries SET status = 'failed', first = false,
			error = 'not delivered within the retention', claimed_until = '-infinity', claim_token = NULL,
			finished_at = now()
		WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1) AND claimed_until < now()`,
		secs(retention))
	if err != nil {
		return 0, fmt.Errorf("expire deliveries: %w", err)
	}
	for _, purge := range []string{
		`DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries
			WHERE status <> 'pending' AND finished_at < now() - make_interval(secs => $1) LIMIT $2)`,
		`DELETE FROM events WHERE id IN (SELECT e.id FROM events e
			WHERE e.received_at < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id) LIMIT $2)`,
	} {
		for {
			del, err := q.db.Exec(ctx, purge, secs(retention), purgeBatch)
			if err != nil {
				return tag.RowsAffected(), fmt.Errorf("purge: %w", err)
			}
			if del.RowsAffected() < purgeBatch {
				break
			}
		}
	}
	return tag.RowsAffected(), nil
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
