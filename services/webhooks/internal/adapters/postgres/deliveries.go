package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

var _ app.DeliveriesRepository = (*Repo)(nil)

// waitingColumns are the log row of a delivery d of event e that has had
// no attempt yet. next_attempt_at is shown only while it waits.
const waitingColumns = `d.id, e.id::text, e.event_type, d.attempt, d.status, NULL::int, NULL::text, NULL::int, d.created_at,
	CASE WHEN d.status = 'pending' AND isfinite(d.next_attempt_at) THEN d.next_attempt_at END`

func scanDelivery(row pgx.Row) (domain.Delivery, error) {
	var d domain.Delivery
	err := row.Scan(&d.ID, &d.EventID, &d.EventType, &d.Attempt, &d.Status, &d.ResponseStatus, &d.Error, &d.DurationMS,
		&d.CreatedAt, &d.NextAttemptAt)
	return d, err
}

// lockSubscription reads the company's subscription and holds it until
// the transaction ends: a DELETE (which drops what waits) or a PATCH of
// the url (which moves what waits) runs wholly before or wholly after, so
// the delivery queued here is dropped or moved with the rest, never left
// behind with the old url.
func lockSubscription(ctx context.Context, tx pgx.Tx, company int64, id string) (domain.Subscription, error) {
	return scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM subscriptions WHERE company_id = $1 AND id = $2 FOR NO KEY UPDATE`, company, id))
}

// Deliveries implements app.DeliveriesRepository: the rows of
// delivery_log (one per attempt, and the retention's) and the deliveries
// still waiting for their first attempt, merged newest first. Each side
// is read through its index in the list's order (delivery_log_list,
// deliveries_log), as far as the page needs. A row whose delivery was
// purged (its rows outlive it until Queue.Expire prunes them by age) is
// skipped before the page is counted.
func (r *Repo) Deliveries(ctx context.Context, company int64, subscription string, limit, offset int) ([]domain.Delivery, error) {
	var found bool
	if err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM subscriptions WHERE company_id = $1 AND id = $2)`,
		company, subscription).Scan(&found); err != nil {
		return nil, fmt.Errorf("find subscription: %w", err)
	}
	if !found {
		return nil, domain.ErrNotFound
	}
	rows, err := r.db.Query(ctx, `SELECT x.id, e.id::text, e.event_type, x.attempt, x.status, x.response_status, x.error,
			x.duration_ms, x.created_at, x.next_attempt_at
		FROM (
			(SELECT l.delivery_id AS id, l.attempt, l.status, l.response_status, l.error, l.duration_ms, l.created_at,
			        l.next_attempt_at
			 FROM delivery_log l
			 WHERE l.subscription_id = $2 AND EXISTS (SELECT FROM deliveries p WHERE p.id = l.delivery_id)
			 ORDER BY l.created_at DESC, l.delivery_id DESC, l.attempt DESC LIMIT $3::bigint + $4::bigint)
			UNION ALL
			(SELECT d.id, d.attempt, d.status, NULL, NULL, NULL, d.created_at,
			        CASE WHEN isfinite(d.next_attempt_at) THEN d.next_attempt_at END
			 FROM deliveries d WHERE d.subscription_id = $2 AND d.attempt = 0 AND d.status = 'pending'
			 ORDER BY d.created_at DESC, d.id DESC LIMIT $3::bigint + $4::bigint)
		) x
		JOIN deliveries d ON d.id = x.id
		JOIN subscriptions s ON s.id = d.subscription_id
		JOIN events e ON e.id = d.event_id
		WHERE s.company_id = $1 AND s.id = $2
		ORDER BY x.created_at DESC, x.id DESC, x.attempt DESC LIMIT $3 OFFSET $4`, company, subscription, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Delivery, error) { return scanDelivery(row) })
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	return out, nil
}

// Redeliver implements app.DeliveriesRepository: a copy of the delivery
// on the retry path (first = false), in the event's lane and order, to
// the subscription's url of now.
//
// The event's received_at is renewed by the same statement: the retention
// keeps an event three times the retention after it (Queue.Expire), which
// covers the copy, its attempts and their rows. Renewed in the row the
// purge would delete, the event also outlives a purge running meanwhile
// (it checks the age on that row); one the purge took already is not
// found.
func (r *Repo) Redeliver(ctx context.Context, company int64, subscription string, delivery int64) (domain.Delivery, error) {
	var out domain.Delivery
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockSubscription(ctx, tx, company, subscription); err != nil {
			return err
		}
		d, err := scanDelivery(tx.QueryRow(ctx, `WITH old AS (
				SELECT o.event_id, o.lane, o.seq FROM deliveries o JOIN subscriptions s ON s.id = o.subscription_id
				WHERE s.company_id = $1 AND s.id = $2 AND o.subscription_id = $2 AND o.id = $3),
			e AS (
				UPDATE events SET received_at = now() WHERE id = (SELECT event_id FROM old)
				RETURNING id, event_type),
			d AS (
				INSERT INTO deliveries (event_id, subscription_id, url, lane, seq, first, next_attempt_at)
				SELECT e.id, s.id, s.url, old.lane, old.seq, false, now()
				FROM old JOIN e ON e.id = old.event_id CROSS JOIN subscriptions s
				WHERE s.company_id = $1 AND s.id = $2
				RETURNING *)
			SELECT `+waitingColumns+` FROM d JOIN e ON e.id = d.event_id`, company, subscription, delivery))
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrDeliveryNotFound
		}
		if err != nil {
			return fmt.Errorf("redeliver %d: %w", delivery, err)
		}
		out = d
		return notifyDeliveries(ctx, tx)
	})
	return out, err
}

// Ping implements app.DeliveriesRepository: the event, and its one
// delivery on the retry path (first = false, lane 0, the event's seq).
func (r *Repo) Ping(ctx context.Context, company int64, subscription string, event func(domain.Subscription) (domain.Event, error)) (domain.Delivery, error) {
	var out domain.Delivery
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		sub, err := lockSubscription(ctx, tx, company, subscription)
		if err != nil {
			return err
		}
		e, err := event(sub)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRow(ctx, `INSERT INTO events (id, company_id, connection_id, chat_id, event_type, payload, occurred_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq`,
			e.ID, e.CompanyID, e.ConnectionID, e.ChatID, e.Type, string(e.Payload), e.OccurredAt).Scan(&seq); err != nil {
			return fmt.Errorf("store event %s: %w", e.ID, err)
		}
		d, err := scanDelivery(tx.QueryRow(ctx, `WITH d AS (
				INSERT INTO deliveries (event_id, subscription_id, url, lane, seq, first, next_attempt_at)
				SELECT $3, s.id, s.url, $4, $5, false, now() FROM subscriptions s
				WHERE s.company_id = $1 AND s.id = $2
				RETURNING *)
			SELECT `+waitingColumns+` FROM d JOIN events e ON e.id = d.event_id`, company, subscription, e.ID, e.Lane(), seq))
		if err != nil {
			// The subscription is locked: it is there.
			return fmt.Errorf("plan ping %s: %w", e.ID, err)
		}
		out = d
		return notifyDeliveries(ctx, tx)
	})
	return out, err
}
