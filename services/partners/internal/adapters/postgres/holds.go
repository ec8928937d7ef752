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

const holdCols = `id::text, partner_company_id, company_id, status, amount::text, invoice_id, created_at`

func scanHold(row pgx.Row) (domain.Hold, error) {
	var h domain.Hold
	var amount string
	err := row.Scan(&h.ID, &h.PartnerID, &h.CompanyID, &h.Status, &amount, &h.InvoiceID, &h.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, domain.ErrNotFound
	}
	if err != nil {
		return h, fmt.Errorf("scan hold: %w", err)
	}
	h.Amount, err = decimalOf(amount)
	return h, err
}

// lockPartner is the partner's balance lock: payouts and reservations of
// the balance take it, so each sees what the others took.
func lockPartner(ctx context.Context, tx pgx.Tx, partnerID int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('partners:payout', $1))`, partnerID); err != nil {
		return fmt.Errorf("lock partner balance: %w", err)
	}
	return nil
}

// ReserveBalance implements app.Repository.
func (r *Repo) ReserveBalance(ctx context.Context, partnerID, companyID int64, at time.Time) (domain.Hold, error) {
	var out domain.Hold
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if err := lockPartner(ctx, tx, partnerID); err != nil {
			return err
		}
		t, err := totals(ctx, tx, partnerID)
		if err != nil {
			return err
		}
		available := decimal.Max(t.Balance(), decimal.Zero)
		out, err = scanHold(tx.QueryRow(ctx, `
			INSERT INTO balance_holds (id, partner_company_id, company_id, status, amount, created_at)
			VALUES (gen_random_uuid(), $1, $2, $3, $4::numeric, $5) RETURNING `+holdCols,
			partnerID, companyID, domain.HoldPending, available.String(), at))
		return err
	})
	return out, err
}

// execer is the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

func settleHold(ctx context.Context, q execer, id string, invoiceID int64, used decimal.Decimal) error {
	if _, err := q.Exec(ctx, `
		UPDATE balance_holds SET status = $2, amount = $3::numeric, invoice_id = $4, updated_at = now()
		WHERE id = $1::uuid AND status = $5`,
		id, domain.HoldHeld, used.String(), invoiceID, domain.HoldPending); err != nil {
		return fmt.Errorf("settle hold %s: %w", id, err)
	}
	return nil
}

func releaseHold(ctx context.Context, q execer, id string, invoiceID *int64) error {
	if _, err := q.Exec(ctx, `
		UPDATE balance_holds SET status = $2, invoice_id = COALESCE($3, invoice_id), updated_at = now()
		WHERE id = $1::uuid AND status <> $2`,
		id, domain.HoldReleased, invoiceID); err != nil {
		return fmt.Errorf("release hold %s: %w", id, err)
	}
	return nil
}

// SettleHold implements app.Repository.
func (r *Repo) SettleHold(ctx context.Context, id string, invoiceID int64, used decimal.Decimal) error {
	return settleHold(ctx, r.db, id, invoiceID, used)
}

// ReleaseHold implements app.Repository.
func (r *Repo) ReleaseHold(ctx context.Context, id string, invoiceID *int64) error {
	return releaseHold(ctx, r.db, id, invoiceID)
}

// SettleHold implements app.IngestTx.
func (t ingestTx) SettleHold(ctx context.Context, id string, invoiceID int64, used decimal.Decimal) error {
	return settleHold(ctx, t.tx, id, invoiceID, used)
}

// ReleaseHold implements app.IngestTx.
func (t ingestTx) ReleaseHold(ctx context.Context, id string, invoiceID *int64) error {
	return releaseHold(ctx, t.tx, id, invoiceID)
}

// ResolvePendingHold implements app.Repository: the oldest pending hold
// made before cutoff that no other replica is resolving is locked (FOR
// UPDATE SKIP LOCKED: the row lock is the lease, held while resolve asks
// billing) and resolve's outcome stored in the same transaction.
func (r *Repo) ResolvePendingHold(ctx context.Context, cutoff time.Time, resolve func(domain.Hold) (app.HoldOutcome, error)) (bool, error) {
	var found bool
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		h, err := scanHold(tx.QueryRow(ctx, `SELECT `+holdCols+` FROM balance_holds
			WHERE status = $1 AND created_at < $2 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
			domain.HoldPending, cutoff))
		if errors.Is(err, domain.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		o, err := resolve(h)
		if err != nil {
			return err
		}
		if o.Release {
			return releaseHold(ctx, tx, h.ID, o.InvoiceID)
		}
		return settleHold(ctx, tx, h.ID, *o.InvoiceID, o.Used)
	})
	return found, err
}

// Hold implements app.Repository.
func (r *Repo) Hold(ctx context.Context, id string) (domain.Hold, error) {
	return scanHold(r.db.QueryRow(ctx, `SELECT `+holdCols+` FROM balance_holds WHERE id = $1::uuid`, id))
}

// Requisite implements app.Repository.
func (r *Repo) Requisite(ctx context.Context, partnerID, id int64) (domain.Requisite, error) {
	return scanRequisite(r.db.QueryRow(ctx, `SELECT `+requisiteCols+` FROM requisites WHERE partner_company_id = $1 AND id = $2`,
		partnerID, id))
}
