// Package postgres stores the partner programme's own data. Every query
// takes the partner's company id.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// Repo implements app.Repository.
type Repo struct{ db *pgxpool.Pool }

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the partners database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

const settingsCols = `company_id, partner_commission_percent::text, referral_commission_percent::text,
	waba_dialogs_commission_percent::text, clients_per_day`

func scanSettings(row pgx.Row, defaults domain.Settings) (domain.Settings, error) {
	st := defaults
	var p, r, w *string
	err := row.Scan(&st.CompanyID, &p, &r, &w, &st.ClientsPerDay)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, domain.ErrNotFound
	}
	if err != nil {
		return st, fmt.Errorf("scan partner settings: %w", err)
	}
	for _, f := range []struct {
		text *string
		into *decimal.Decimal
	}{{p, &st.Commissions.Partner}, {r, &st.Commissions.Referral}, {w, &st.Commissions.WabaDialogs}} {
		if f.text == nil {
			continue
		}
		if *f.into, err = decimal.NewFromString(*f.text); err != nil {
			return st, fmt.Errorf("decode commission: %w", err)
		}
	}
	return st, nil
}

// Settings implements app.Repository: a commission column left null keeps
// the default it is read over.
func (r *Repo) Settings(ctx context.Context, partnerID int64) (domain.Settings, bool, error) {
	st, err := scanSettings(r.db.QueryRow(ctx, `SELECT `+settingsCols+` FROM partner_settings WHERE company_id = $1`, partnerID),
		domain.Settings{CompanyID: partnerID})
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Settings{}, false, nil
	}
	return st, err == nil, err
}

// UpdateSettings implements app.Repository.
func (r *Repo) UpdateSettings(ctx context.Context, partnerID int64, defaults domain.Settings, update func(*domain.Settings) error) (domain.Settings, error) {
	var out domain.Settings
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		// The first change makes the row: stored with the defaults, so
		// that later default changes in the configuration do not move a
		// partner the operator has set.
		if _, err := tx.Exec(ctx, `
			INSERT INTO partner_settings (company_id, partner_commission_percent, referral_commission_percent, waba_dialogs_commission_percent)
			VALUES ($1, $2::numeric, $3::numeric, $4::numeric) ON CONFLICT (company_id) DO NOTHING`,
			partnerID, defaults.Commissions.Partner.String(), defaults.Commissions.Referral.String(), defaults.Commissions.WabaDialogs.String()); err != nil {
			return fmt.Errorf("insert partner settings: %w", err)
		}
		st, err := scanSettings(tx.QueryRow(ctx, `SELECT `+settingsCols+` FROM partner_settings WHERE company_id = $1 FOR UPDATE`, partnerID), defaults)
		if err != nil {
			return err
		}
		if err := update(&st); err != nil {
			return err
		}
		out, err = scanSettings(tx.QueryRow(ctx, `
			UPDATE partner_settings SET partner_commission_percent = $2::numeric, referral_commission_percent = $3::numeric,
			       waba_dialogs_commission_percent = $4::numeric, clients_per_day = $5, updated_at = now()
			WHERE company_id = $1 RETURNING `+settingsCols,
			partnerID, st.Commissions.Partner.String(), st.Commissions.Referral.String(), st.Commissions.WabaDialogs.String(), st.ClientsPerDay), defaults)
		return err
	})
	return out, err
}

// Notes implements app.Repository.
func (r *Repo) Notes(ctx context.Context, partnerID int64) (map[int64]string, error) {
	rows, err := r.db.Query(ctx, `SELECT company_id, note FROM client_notes WHERE partner_company_id = $1`, partnerID)
	if err != nil {
		return nil, fmt.Errorf("read notes: %w", err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var note string
		if err := rows.Scan(&id, &note); err != nil {
			return nil, fmt.Errorf("scan note: %w", err)
		}
		out[id] = note
	}
	return out, rows.Err()
}

// SetNote implements app.Repository.
func (r *Repo) SetNote(ctx context.Context, partnerID, companyID int64, note string) error {
	if _, err := r.db.Exec(ctx, `
		INSERT INTO client_notes (partner_company_id, company_id, note) VALUES ($1, $2, $3)
		ON CONFLICT (partner_company_id, company_id) DO UPDATE SET note = EXCLUDED.note, updated_at = now()`,
		partnerID, companyID, note); err != nil {
		return fmt.Errorf("store note: %w", err)
	}
	return nil
}

const requisiteCols = `id, partner_company_id, type, tin, kpp, name, is_default, bic, current_account`

func scanRequisite(row pgx.Row) (domain.Requisite, error) {
	var q domain.Requisite
	err := row.Scan(&q.ID, &q.PartnerID, &q.Type, &q.TIN, &q.KPP, &q.Name, &q.Default, &q.BIC, &q.CurrentAccount)
	if errors.Is(err, pgx.ErrNoRows) {
		return q, domain.ErrNotFound
	}
	if err != nil {
		return q, fmt.Errorf("scan requisite: %w", err)
	}
	return q, nil
}

// CreateRequisite implements app.Repository.
func (r *Repo) CreateRequisite(ctx context.Context, q domain.Requisite) (domain.Requisite, error) {
	var out domain.Requisite
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if q.Default {
			// Serialise the partner's default changes: the old default is
			// cleared before the new one is written, under one lock.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('partners:requisite-default', $1))`, q.PartnerID); err != nil {
				return fmt.Errorf("lock requisites: %w", err)
			}
			if _, err := tx.Exec(ctx, `UPDATE requisites SET is_default = false WHERE partner_company_id = $1 AND is_default`, q.PartnerID); err != nil {
				return fmt.Errorf("clear default requisite: %w", err)
			}
		}
		var err error
		out, err = scanRequisite(tx.QueryRow(ctx, `
			INSERT INTO requisites (partner_company_id, type, tin, kpp, name, is_default, bic, current_account)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+requisiteCols,
			q.PartnerID, q.Type, q.TIN, q.KPP, q.Name, q.Default, q.BIC, q.CurrentAccount))
		return err
	})
	return out, err
}

// Requisites implements app.Repository.
func (r *Repo) Requisites(ctx context.Context, partnerID int64) ([]domain.Requisite, error) {
	rows, err := r.db.Query(ctx, `SELECT `+requisiteCols+` FROM requisites WHERE partner_company_id = $1 ORDER BY id`, partnerID)
	if err != nil {
		return nil, fmt.Errorf("list requisites: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Requisite, error) { return scanRequisite(row) })
}
