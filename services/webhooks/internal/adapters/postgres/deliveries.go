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

// deliveryColumns are read from a delivery d and its event e.
// next_attempt_at is shown only while the delivery waits for an attempt.
const deliveryColumns = `d.id, d.event_id::text, e.event_type, d.attempt, d.status, d.response_status, d.error, d.duration_ms, d.created_at,
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

// Deliveries implements app.DeliveriesRepository (index deliveries_log).
func (r *Repo) Deliveries(ctx context.Context, company int64, subscription string, limit, offset int) ([]domain.Delivery, error) {
	var found bool
	if err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM subscriptions WHERE company_id = $1 AND id = $2)`,
		company, subscription).Scan(&found); err != nil {
		return nil, fmt.Errorf("find subscription: %w", err)
	}
	if !found {
		return nil, domain.ErrNotFound
	}
	rows, err := r.db.Query(ctx, `SELECT `+deliveryColumns+`
		FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id JOIN events e ON e.id = d.event_id
		WHERE s.company_id = $1 AND s.id = $2 AND d.subscription_id = $2
		ORDER BY d.id DESC LIMIT $3 OFFSET $4`, company, subscription, limit, offset)
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
func (r *Repo) Redeliver(ctx context.Context, company int64, subscription string, delivery int64) (domain.Delivery, error) {
	var out domain.Delivery
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockSubscription(ctx, tx, company, subscription); err != nil {
			return err
		}
		d, err := scanDelivery(tx.QueryRow(ctx, `WITH d AS (
				INSERT INTO deliveries (event_id, subscription_id, url, lane, seq, first, next_attempt_at)
				SELECT old.event_id, s.id, s.url, old.lane, old.seq, false, now()
				FROM deliveries old JOIN subscriptions s ON s.id = old.subscription_id
				WHERE s.company_id = $1 AND s.id = $2 AND old.subscription_id = $2 AND old.id = $3
				RETURNING *)
			SELECT `+deliveryColumns+` FROM d JOIN events e ON e.id = d.event_id`, company, subscription, delivery))
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
			SELECT `+deliveryColumns+` FROM d JOIN events e ON e.id = d.event_id`, company, subscription, e.ID, e.Lane(), seq))
		if err != nil {
			// The subscription is locked: it is there.
			return fmt.Errorf("plan ping %s: %w", e.ID, err)
		}
		out = d
		return notifyDeliveries(ctx, tx)
	})
	return out, err
}
