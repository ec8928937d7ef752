// Package postgres stores billing's subscriptions. Every query takes the
// company id, so one company can never see another's rows.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the billing database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

const cols = `id, company_id, subscription_type, subscription_plan, max_size,
	test_until, paid_until, has_payment, advance_until, advance_repaid, advance_from`

func scan(row pgx.Row) (domain.Subscription, error) {
	var s domain.Subscription
	var typ, plan string
	err := row.Scan(&s.ID, &s.CompanyID, &typ, &plan, &s.MaxSize,
		&s.TestUntil, &s.PaidUntil, &s.HasPayment, &s.Advance.Until, &s.Advance.Repaid, &s.Advance.From)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, domain.ErrNotFound
	}
	if err != nil {
		return s, fmt.Errorf("scan subscription: %w", err)
	}
	s.Type, s.Plan = domain.SubscriptionType(typ), domain.Plan(plan)
	s.TestUntil, s.PaidUntil, s.Advance.Until, s.Advance.From = utc(s.TestUntil), utc(s.PaidUntil), utc(s.Advance.Until), utc(s.Advance.From)
	return s, nil
}

// utc keeps times in UTC whatever the session's time zone, so they compare
// and render the same everywhere.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// EnsureSubscription implements app.Repository.
func (r *Repo) EnsureSubscription(ctx context.Context, fresh domain.Subscription) (domain.Subscription, error) {
	// ON CONFLICT DO NOTHING waits for a concurrent inserter of the same
	// key to commit and then inserts nothing; the SELECT, a new statement,
	// sees that row. So concurrent first calls all answer the one row.
	if _, err := r.db.Exec(ctx, `
		INSERT INTO subscriptions (company_id, subscription_type, subscription_plan, max_size, test_until, paid_until, is_default)
		VALUES ($1, $2, $3, $4, $5, $6, true)
		ON CONFLICT (company_id, subscription_type) WHERE is_default DO NOTHING`,
		fresh.CompanyID, string(fresh.Type), string(fresh.Plan), fresh.MaxSize, fresh.TestUntil, fresh.PaidUntil); err != nil {
		return domain.Subscription{}, fmt.Errorf("insert subscription: %w", err)
	}
	return scan(r.db.QueryRow(ctx, `SELECT `+cols+` FROM subscriptions
		WHERE company_id = $1 AND subscription_type = $2 AND is_default`, fresh.CompanyID, string(fresh.Type)))
}

// Subscriptions implements app.Repository.
func (r *Repo) Subscriptions(ctx context.Context, companyID int64, ids []int64) ([]domain.Subscription, error) {
	if ids == nil {
		ids = []int64{}
	}
	rows, err := r.db.Query(ctx, `SELECT `+cols+` FROM subscriptions
		WHERE company_id = $1 AND (cardinality($2::bigint[]) = 0 OR id = ANY($2))
		ORDER BY id`, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Subscription, error) {
		return scan(row)
	})
}

// CompaniesSubscriptions implements app.Repository: one query for every
// company of companyIDs.
func (r *Repo) CompaniesSubscriptions(ctx context.Context, companyIDs []int64) ([]domain.Subscription, error) {
	if len(companyIDs) == 0 {
		return []domain.Subscription{}, nil
	}
	rows, err := r.db.Query(ctx, `SELECT `+cols+` FROM subscriptions
		WHERE company_id = ANY($1)
		ORDER BY company_id, id`, companyIDs)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions of companies: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Subscription, error) {
		return scan(row)
	})
}

// Subscription implements app.Repository.
func (r *Repo) Subscription(ctx context.Context, companyID, id int64) (domain.Subscription, error) {
	return scan(r.db.QueryRow(ctx, `SELECT `+cols+` FROM subscriptions
		WHERE company_id = $1 AND id = $2`, companyID, id))
}

// UpdateSubscription implements app.Repository.
func (r *Repo) UpdateSubscription(ctx context.Context, companyID, id int64, update func(*domain.Subscription) error) (domain.Subscription, error) {
	var out domain.Subscription
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		before, err := scan(tx.QueryRow(ctx, `SELECT `+cols+` FROM subscriptions
			WHERE company_id = $1 AND id = $2 FOR UPDATE`, companyID, id))
		if err != nil {
			return err
		}
		out = before
		if err := update(&out); err != nil {
			return err
		}
		// A membership change leaves the row as it was: no write, so
		// updated_at tells when billing's own data last changed.
		if same(before, out) {
			return nil
		}
		out, err = save(ctx, tx, out)
		return err
	})
	return out, err
}

// save stores a subscription's billing state and answers the row as stored
// (RETURNING: timestamps at microseconds).
func save(ctx context.Context, tx pgx.Tx, s domain.Subscription) (domain.Subscription, error) {
	return scan(tx.QueryRow(ctx, `
		UPDATE subscriptions SET subscription_plan = $3, max_size = $4, test_until = $5, paid_until = $6,
		       has_payment = $7, advance_until = $8, advance_repaid = $9, advance_from = $10, updated_at = now()
		WHERE company_id = $1 AND id = $2
		RETURNING `+cols,
		s.CompanyID, s.ID, string(s.Plan), s.MaxSize, s.TestUntil, s.PaidUntil,
		s.HasPayment, s.Advance.Until, s.Advance.Repaid, s.Advance.From))
}

// same compares what UpdateSubscription stores.
func same(a, b domain.Subscription) bool {
	return a.Plan == b.Plan && a.MaxSize == b.MaxSize && a.HasPayment == b.HasPayment &&
		a.Advance.Repaid == b.Advance.Repaid &&
		sameTime(a.TestUntil, b.TestUntil) && sameTime(a.PaidUntil, b.PaidUntil) &&
		sameTime(a.Advance.Until, b.Advance.Until) && sameTime(a.Advance.From, b.Advance.From)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
