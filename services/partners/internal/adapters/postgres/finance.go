package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// pgUniqueViolation is SQLSTATE unique_violation.
const pgUniqueViolation = "23505"

// Money is read as numeric::text into decimals and written as text cast
// to numeric: no value passes through a float.

func decimalOf(text string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(text)
	if err != nil {
		return d, fmt.Errorf("decode numeric %q: %w", text, err)
	}
	return d, nil
}

// Ingest implements app.Repository. A transaction-scoped advisory lock
// makes ingests run one at a time: billing's relay sends one batch at a
// time anyway, and a resend racing the first send then finds its events
// stored instead of waiting on the rows in another order.
func (r *Repo) Ingest(ctx context.Context, fn func(app.IngestTx) error) error {
	return postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('partners:ingest', 0))`); err != nil {
			return fmt.Errorf("lock ingest: %w", err)
		}
		return fn(ingestTx{tx})
	})
}

type ingestTx struct{ tx pgx.Tx }

// RecordEvent implements app.IngestTx.
func (t ingestTx) RecordEvent(ctx context.Context, ev app.BillingEvent) (bool, error) {
	var created *time.Time
	if !ev.CreatedAt.IsZero() {
		created = &ev.CreatedAt
	}
	tag, err := t.tx.Exec(ctx, `
		INSERT INTO billing_events (id, company_id, event_type, payload, created_at) VALUES ($1, $2, $3, $4::jsonb, $5)
		ON CONFLICT (id) DO NOTHING`, ev.ID, ev.CompanyID, ev.Type, string(ev.Payload), created)
	if err != nil {
		return false, fmt.Errorf("record billing event %s: %w", ev.ID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Settings implements app.IngestTx.
func (t ingestTx) Settings(ctx context.Context, partnerID int64) (domain.Settings, bool, error) {
	st, err := scanSettings(t.tx.QueryRow(ctx, `SELECT `+settingsCols+` FROM partner_settings WHERE company_id = $1`, partnerID),
		domain.Settings{CompanyID: partnerID})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Settings{}, false, nil
	}
	return st, err == nil, err
}

const rewardCols = `id, partner_company_id, period, company_id, reward_type, subscription_type, period_months,
	partner_percent::text, period_topups_value::text, period_spendings_value::text, reward_value::text, created_at`

func scanReward(row pgx.Row) (domain.Reward, error) {
	var w domain.Reward
	var percent, topups, spendings, value string
	err := row.Scan(&w.ID, &w.PartnerID, &w.Period, &w.CompanyID, &w.Type, &w.SubscriptionType, &w.PeriodMonths,
		&percent, &topups, &spendings, &value, &w.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, domain.ErrNotFound
	}
	if err != nil {
		return w, fmt.Errorf("scan reward: %w", err)
	}
	for _, f := range []struct {
		text string
		into *decimal.Decimal
	}{{percent, &w.Percent}, {topups, &w.Topups}, {spendings, &w.Spendings}, {value, &w.Value}} {
		if *f.into, err = decimalOf(f.text); err != nil {
			return w, err
		}
	}
	return w, nil
}

// LockReward implements app.IngestTx. The insert of a missing row and
// the row lock are two statements: a row another transaction is making
// is waited for by the insert (the unique key), then found and locked.
func (t ingestTx) LockReward(ctx context.Context, k domain.RewardKey, at time.Time) (domain.Reward, error) {
	if _, err := t.tx.Exec(ctx, `
		INSERT INTO rewards (partner_company_id, period, company_id, reward_type, subscription_type, period_months,
		                     partner_percent, period_topups_value, period_spendings_value, reward_value, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, 0, 0, 0, $8)
		ON CONFLICT DO NOTHING`,
		k.PartnerID, k.Period, k.CompanyID, k.Type, k.SubscriptionType, k.PeriodMonths, k.Percent.String(), at); err != nil {
		return domain.Reward{}, fmt.Errorf("make reward: %w", err)
	}
	return scanReward(t.tx.QueryRow(ctx, `SELECT `+rewardCols+` FROM rewards
		WHERE partner_company_id = $1 AND period = $2 AND company_id = $3 AND reward_type = $4
		  AND subscription_type IS NOT DISTINCT FROM $5 AND period_months IS NOT DISTINCT FROM $6
		  AND partner_percent = $7::numeric
		FOR UPDATE`,
		k.PartnerID, k.Period, k.CompanyID, k.Type, k.SubscriptionType, k.PeriodMonths, k.Percent.String()))
}

// SaveReward implements app.IngestTx.
func (t ingestTx) SaveReward(ctx context.Context, w domain.Reward) error {
	if _, err := t.tx.Exec(ctx, `
		UPDATE rewards SET period_topups_value = $2::numeric, period_spendings_value = $3::numeric,
		       reward_value = $4::numeric, created_at = $5, updated_at = now()
		WHERE id = $1`, w.ID, w.Topups.String(), w.Spendings.String(), w.Value.String(), w.CreatedAt); err != nil {
		return fmt.Errorf("save reward %d: %w", w.ID, err)
	}
	return nil
}

// AddDialogsOpened implements app.IngestTx.
func (t ingestTx) AddDialogsOpened(ctx context.Context, companyID int64, period string, n int64) (int64, error) {
	var count int64
	if err := t.tx.QueryRow(ctx, `
		INSERT INTO waba_dialogs_opened AS w (company_id, period, count) VALUES ($1, $2, $3)
		ON CONFLICT (company_id, period) DO UPDATE SET count = w.count + EXCLUDED.count
		RETURNING count`, companyID, period, n).Scan(&count); err != nil {
		return 0, fmt.Errorf("count opened dialogs: %w", err)
	}
	return count, nil
}

// DialogsOpened implements app.IngestTx.
func (t ingestTx) DialogsOpened(ctx context.Context, companyID int64, period string) (int64, error) {
	var count int64
	err := t.tx.QueryRow(ctx, `SELECT count FROM waba_dialogs_opened WHERE company_id = $1 AND period = $2`,
		companyID, period).Scan(&count)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read opened dialogs: %w", err)
	}
	return count, nil
}

// SetDialogSpendings implements app.IngestTx.
func (t ingestTx) SetDialogSpendings(ctx context.Context, companyID int64, period string, spendings decimal.Decimal) error {
	if _, err := t.tx.Exec(ctx, `
		UPDATE rewards SET period_spendings_value = $3::numeric, updated_at = now()
		WHERE company_id = $1 AND period = $2 AND reward_type = $4`,
		companyID, period, spendings.String(), domain.RewardWabaDialogs); err != nil {
		return fmt.Errorf("set dialogs spendings: %w", err)
	}
	return nil
}

// querier is the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func totals(ctx context.Context, q querier, partnerID int64) (domain.Totals, error) {
	var rewards, payouts, held string
	if err := q.QueryRow(ctx, `
		SELECT (SELECT COALESCE(sum(reward_value), 0) FROM rewards WHERE partner_company_id = $1)::text,
		       (SELECT COALESCE(sum(value), 0) FROM payouts WHERE partner_company_id = $1 AND status <> $2)::text,
		       (SELECT COALESCE(sum(amount), 0) FROM balance_holds WHERE partner_company_id = $1 AND status <> $3)::text`,
		partnerID, domain.PayoutRejected, domain.HoldReleased).Scan(&rewards, &payouts, &held); err != nil {
		return domain.Totals{}, fmt.Errorf("read balance: %w", err)
	}
	var t domain.Totals
	var err error
	if t.Rewards, err = decimalOf(rewards); err != nil {
		return t, err
	}
	if t.Payouts, err = decimalOf(payouts); err != nil {
		return t, err
	}
	t.Held, err = decimalOf(held)
	return t, err
}

// Totals implements app.Repository.
func (r *Repo) Totals(ctx context.Context, partnerID int64) (domain.Totals, error) {
	return totals(ctx, r.db, partnerID)
}

// Rewards implements app.Repository.
func (r *Repo) Rewards(ctx context.Context, partnerID int64, f domain.RewardFilter) ([]domain.Reward, error) {
	rows, err := r.db.Query(ctx, `SELECT `+rewardCols+` FROM rewards
		WHERE partner_company_id = $1 AND ($2::text IS NULL OR period = $2) AND ($3::bigint IS NULL OR company_id = $3)
		ORDER BY period DESC, id`, partnerID, f.Period, f.CompanyID)
	if err != nil {
		return nil, fmt.Errorf("list rewards: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Reward, error) { return scanReward(row) })
}

const payoutCols = `id, partner_company_id, status, payout_type, value::text, requisite_id, comment, created_at, updated_at`

func scanPayout(row pgx.Row) (domain.Payout, error) {
	var p domain.Payout
	var value string
	err := row.Scan(&p.ID, &p.PartnerID, &p.Status, &p.Type, &value, &p.RequisiteID, &p.Comment, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, domain.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("scan payout: %w", err)
	}
	p.Value, err = decimalOf(value)
	return p, err
}

// Payouts implements app.Repository.
func (r *Repo) Payouts(ctx context.Context, partnerID int64) ([]domain.Payout, error) {
	rows, err := r.db.Query(ctx, `SELECT `+payoutCols+` FROM payouts WHERE partner_company_id = $1
		ORDER BY created_at DESC, id DESC`, partnerID)
	if err != nil {
		return nil, fmt.Errorf("list payouts: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Payout, error) { return scanPayout(row) })
}

// PayoutTx implements app.Repository: the partner's payout lock is a
// transaction-scoped advisory lock, so a second request waits for the
// first to commit and then sees its payout.
func (r *Repo) PayoutTx(ctx context.Context, partnerID int64, fn func(app.PayoutTx) error) error {
	return postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if err := lockPartner(ctx, tx, partnerID); err != nil {
			return err
		}
		return fn(payoutTx{tx: tx, partnerID: partnerID})
	})
}

type payoutTx struct {
	tx        pgx.Tx
	partnerID int64
}

// Requisite implements app.PayoutTx.
func (t payoutTx) Requisite(ctx context.Context, id int64) (domain.Requisite, error) {
	return scanRequisite(t.tx.QueryRow(ctx, `SELECT `+requisiteCols+` FROM requisites WHERE partner_company_id = $1 AND id = $2`,
		t.partnerID, id))
}

// HasCreatedPayout implements app.PayoutTx.
func (t payoutTx) HasCreatedPayout(ctx context.Context) (bool, error) {
	var has bool
	if err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payouts WHERE partner_company_id = $1 AND status = $2)`,
		t.partnerID, domain.PayoutCreated).Scan(&has); err != nil {
		return false, fmt.Errorf("read payouts: %w", err)
	}
	return has, nil
}

// Totals implements app.PayoutTx.
func (t payoutTx) Totals(ctx context.Context) (domain.Totals, error) {
	return totals(ctx, t.tx, t.partnerID)
}

// InsertPayout implements app.PayoutTx.
func (t payoutTx) InsertPayout(ctx context.Context, p domain.Payout) (domain.Payout, error) {
	out, err := scanPayout(t.tx.QueryRow(ctx, `
		INSERT INTO payouts (partner_company_id, status, payout_type, value, requisite_id, comment, created_at, updated_at)
		VALUES ($1, $2, $3, $4::numeric, $5, $6, $7, $8) RETURNING `+payoutCols,
		t.partnerID, p.Status, p.Type, p.Value.String(), p.RequisiteID, p.Comment, p.CreatedAt, p.UpdatedAt))
	// The one-CREATED-payout index is the last word, should the lock
	// ever be bypassed.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgUniqueViolation {
		return out, domain.ErrPayoutLocked
	}
	return out, err
}

// UpdatePayout implements app.Repository.
func (r *Repo) UpdatePayout(ctx context.Context, id int64, update func(*domain.Payout) error) (domain.Payout, error) {
	var out domain.Payout
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		p, err := scanPayout(tx.QueryRow(ctx, `SELECT `+payoutCols+` FROM payouts WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if err := update(&p); err != nil {
			return err
		}
		out, err = scanPayout(tx.QueryRow(ctx, `
			UPDATE payouts SET status = $2, comment = $3, updated_at = $4 WHERE id = $1 RETURNING `+payoutCols,
			id, p.Status, p.Comment, p.UpdatedAt))
		return err
	})
	return out, err
}
