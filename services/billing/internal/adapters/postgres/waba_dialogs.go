package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// pgNumericOutOfRange is SQLSTATE numeric_value_out_of_range: bigint
// arithmetic overflowed.
const pgNumericOutOfRange = "22003"

// WabaDialogsBalance implements app.Repository.
func (r *Repo) WabaDialogsBalance(ctx context.Context, companyID int64) (int64, error) {
	return balance(ctx, r.db, companyID)
}

// WabaDialogsBalances implements app.Repository: one query for every
// company of companyIDs.
func (r *Repo) WabaDialogsBalances(ctx context.Context, companyIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64)
	if len(companyIDs) == 0 {
		return out, nil
	}
	rows, err := r.db.Query(ctx, `SELECT company_id, waba_dialogs_balance FROM waba_dialogs
		WHERE company_id = ANY($1)`, companyIDs)
	if err != nil {
		return nil, fmt.Errorf("read waba dialogs balances: %w", err)
	}
	var company, b int64
	if _, err := pgx.ForEachRow(rows, []any{&company, &b}, func() error {
		out[company] = b
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read waba dialogs balances: %w", err)
	}
	return out, nil
}

// querier is what balance reads with: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func balance(ctx context.Context, q querier, companyID int64) (int64, error) {
	var b int64
	err := q.QueryRow(ctx, `SELECT waba_dialogs_balance FROM waba_dialogs WHERE company_id = $1`, companyID).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read waba dialogs balance: %w", err)
	}
	return b, nil
}

// AddWabaDialogs implements app.Repository. One upsert: the first add of a
// company inserts its row, later ones add to the row under its lock, so
// concurrent adds serialise on the row and each counts.
func (r *Repo) AddWabaDialogs(ctx context.Context, companyID int64, count int32) (int64, error) {
	var b int64
	err := r.db.QueryRow(ctx, `
		INSERT INTO waba_dialogs AS w (company_id, waba_dialogs_balance) VALUES ($1, $2)
		ON CONFLICT (company_id) DO UPDATE
		SET waba_dialogs_balance = w.waba_dialogs_balance + EXCLUDED.waba_dialogs_balance, updated_at = now()
		RETURNING waba_dialogs_balance`, companyID, int64(count)).Scan(&b)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgNumericOutOfRange {
		return 0, domain.ErrBalanceOutOfRange
	}
	if err != nil {
		return 0, fmt.Errorf("add waba dialogs: %w", err)
	}
	return b, nil
}

// errNothingTaken rolls a take back that found no dialog, so that its key
// is not recorded.
var errNothingTaken = errors.New("no dialog to take")

// TakeWabaDialog implements app.Repository, in one transaction:
//
//  1. insert the key's row; a key already recorded inserts nothing (when
//     another transaction is inserting the same key, the insert waits for
//     it to end: committed, its row is answered; rolled back, this one
//     goes on);
//  2. take one dialog with one UPDATE ... WHERE balance > 0: concurrent
//     takes queue on the balance row and each re-checks the condition on
//     the row as the previous one left it, so no more are taken than there
//     were;
//  3. store the balance the take left with the key;
//  4. write the outbox event app.EventWabaDialogOpened at at, so the
//     dialog and its event commit together (a take that answers an
//     earlier one, or finds nothing, writes none).
//
// Locks are taken in that order (key, then balance row), and a caller
// waiting on a key holds no balance lock, so takes cannot deadlock.
func (r *Repo) TakeWabaDialog(ctx context.Context, companyID int64, key string, at time.Time) (bool, int64, error) {
	var b int64
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO waba_dialog_takes (company_id, idempotency_key, waba_dialogs_balance) VALUES ($1, $2, 0)
			ON CONFLICT (company_id, idempotency_key) DO NOTHING`, companyID, key)
		if err != nil {
			return fmt.Errorf("record waba dialog take: %w", err)
		}
		if tag.RowsAffected() == 0 {
			// Taken before with this key: answer as then.
			err := tx.QueryRow(ctx, `SELECT waba_dialogs_balance FROM waba_dialog_takes
				WHERE company_id = $1 AND idempotency_key = $2`, companyID, key).Scan(&b)
			if err != nil {
				return fmt.Errorf("read waba dialog take: %w", err)
			}
			return nil
		}
		err = tx.QueryRow(ctx, `
			UPDATE waba_dialogs SET waba_dialogs_balance = waba_dialogs_balance - 1, updated_at = now()
			WHERE company_id = $1 AND waba_dialogs_balance > 0
			RETURNING waba_dialogs_balance`, companyID).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNothingTaken
		}
		if err != nil {
			return fmt.Errorf("take waba dialog: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE waba_dialog_takes SET waba_dialogs_balance = $3
			WHERE company_id = $1 AND idempotency_key = $2`, companyID, key, b); err != nil {
			return fmt.Errorf("record waba dialog take: %w", err)
		}
		return outbox.Write(ctx, tx, app.EventsTopic, companyID, app.EventWabaDialogOpened, app.DialogOpenedEvent(companyID, at))
	})
	if errors.Is(err, errNothingTaken) {
		now, err := balance(ctx, r.db, companyID)
		return false, now, err
	}
	if err != nil {
		return false, 0, err
	}
	return true, b, nil
}
