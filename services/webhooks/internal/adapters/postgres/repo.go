// Package postgres stores webhook subscriptions. Every query takes the
// company id, so one company never sees another's rows.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the webhooks database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

const columns = `id, company_id, connection_id, url, events, secret, created_at`

func scan(row pgx.Row) (domain.Subscription, error) {
	var s domain.Subscription
	err := row.Scan(&s.ID, &s.CompanyID, &s.ConnectionID, &s.URL, &s.Events, &s.Secret, &s.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, domain.ErrNotFound
	}
	if err != nil {
		return s, fmt.Errorf("read subscription: %w", err)
	}
	return s, nil
}

// CreateSubscription implements app.Repository.
func (r *Repo) CreateSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error) {
	return scan(r.db.QueryRow(ctx, `INSERT INTO subscriptions (id, company_id, connection_id, url, events, secret)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+columns,
		s.ID, s.CompanyID, s.ConnectionID, s.URL, s.Events, s.Secret))
}

// Subscriptions implements app.Repository.
func (r *Repo) Subscriptions(ctx context.Context, company int64) ([]domain.Subscription, error) {
	rows, err := r.db.Query(ctx, `SELECT `+columns+` FROM subscriptions WHERE company_id = $1 ORDER BY created_at, id`, company)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	defer rows.Close()
	out := []domain.Subscription{}
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Subscription implements app.Repository.
func (r *Repo) Subscription(ctx context.Context, company int64, id string) (domain.Subscription, error) {
	return scan(r.db.QueryRow(ctx, `SELECT `+columns+` FROM subscriptions WHERE company_id = $1 AND id = $2`, company, id))
}

// UpdateSubscription implements app.Repository. A new URL applies at
// once, to what waits as well: the next attempt of every waiting delivery
// goes to it.
func (r *Repo) UpdateSubscription(ctx context.Context, company int64, id string, url *string, events []string) (domain.Subscription, error) {
	var sub domain.Subscription
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var err error
		sub, err = scan(tx.QueryRow(ctx, `UPDATE subscriptions SET url = coalesce($3, url), events = coalesce($4, events)
			WHERE company_id = $1 AND id = $2 RETURNING `+columns, company, id, url, events))
		if err != nil || url == nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET url = $2 WHERE subscription_id = $1 AND status = 'pending'`, id, sub.URL); err != nil {
			return fmt.Errorf("move waiting deliveries: %w", err)
		}
		return notifyDeliveries(ctx, tx)
	})
	return sub, err
}

// DeleteSubscription implements app.Repository. What waits for it is
// dropped in the same transaction: nothing goes to it from then on, and
// its lanes hold nothing back.
func (r *Repo) DeleteSubscription(ctx context.Context, company int64, id string) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM subscriptions WHERE company_id = $1 AND id = $2`, company, id)
		if err != nil {
			return fmt.Errorf("delete subscription: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return domain.ErrNotFound
		}
		// No log rows: the log goes with the subscription (its reads are
		// 404 from now on) and is pruned with the retention.
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'dropped', first = false,
				claimed_until = '-infinity', claim_token = NULL, finished_at = now()
			WHERE subscription_id = $1 AND status = 'pending'`, id); err != nil {
			return fmt.Errorf("drop waiting deliveries: %w", err)
		}
		return nil
	})
}
