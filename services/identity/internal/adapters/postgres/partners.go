package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// maxCodeDraws bounds the draws for one free promo code. Codes clash once
// in about 2^40/(codes stored) draws, so reaching it means a broken
// generator, not bad luck.
const maxCodeDraws = 10

// ensurePromoCode gives the company a code of that kind unless it has
// one: it draws codes until one is free (ON CONFLICT waits for, then
// skips, a code another transaction is inserting). It answers whether it
// created the code; a code of that kind stored meanwhile by another
// transaction (another replica's EnsurePromoCodes) is kept.
func (r *Repo) ensurePromoCode(ctx context.Context, tx pgx.Tx, companyID int64, kind domain.ClientType) (bool, error) {
	for range maxCodeDraws {
		tag, err := tx.Exec(ctx, `INSERT INTO promo_codes (code, company_id, kind) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, r.newCode(), companyID, string(kind))
		if err != nil {
			return false, fmt.Errorf("insert promo code: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return true, nil
		}
		// The code is taken, or the company has its code of that kind.
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM promo_codes WHERE company_id = $1 AND kind = $2)`,
			companyID, string(kind)).Scan(&has); err != nil {
			return false, fmt.Errorf("find promo code: %w", err)
		}
		if has {
			return false, nil
		}
	}
	return false, fmt.Errorf("no free promo code in %d draws", maxCodeDraws)
}

func resolvePromoCode(ctx context.Context, q queryer, code string) (domain.PromoCode, error) {
	var pc domain.PromoCode
	var kind string
	err := q.QueryRow(ctx, `SELECT code, company_id, kind FROM promo_codes WHERE code = upper($1)`, code).
		Scan(&pc.Code, &pc.PartnerCompanyID, &kind)
	pc.ClientType = domain.ClientType(kind)
	return pc, miss(err)
}

// insertClientLink links a client; byPartner: the partner created it
// (its daily cap counts it).
func insertClientLink(ctx context.Context, tx pgx.Tx, companyID, partnerID int64, typ domain.ClientType, at time.Time, byPartner bool) error {
	if _, err := tx.Exec(ctx, `INSERT INTO partner_clients (company_id, partner_company_id, client_type, created_at, created_by_partner)
		VALUES ($1, $2, $3, $4, $5)`, companyID, partnerID, string(typ), at, byPartner); err != nil {
		return fmt.Errorf("insert partner client: %w", err)
	}
	return nil
}

// ResolvePromoCode implements app.Repository.
func (r *Repo) ResolvePromoCode(ctx context.Context, code string) (domain.PromoCode, error) {
	return resolvePromoCode(ctx, r.db, code)
}

// Partner implements app.Repository.
func (r *Repo) Partner(ctx context.Context, companyID int64) (domain.Partner, error) {
	var p domain.Partner
	err := r.db.QueryRow(ctx, `
		SELECT c.id, c.name, coalesce(p.code, ''), coalesce(rf.code, '')
		FROM companies c
		LEFT JOIN promo_codes p ON p.company_id = c.id AND p.kind = 'partner'
		LEFT JOIN promo_codes rf ON rf.company_id = c.id AND rf.kind = 'referral'
		WHERE c.id = $1 AND c.is_partner`, companyID).
		Scan(&p.CompanyID, &p.Name, &p.PromoCode, &p.ReferralPromoCode)
	return p, miss(err)
}

// ClientLink implements app.Repository.
func (r *Repo) ClientLink(ctx context.Context, companyID int64) (domain.ClientLink, error) {
	var l domain.ClientLink
	var typ string
	err := r.db.QueryRow(ctx, `SELECT company_id, partner_company_id, client_type FROM partner_clients
		WHERE company_id = $1`, companyID).Scan(&l.CompanyID, &l.PartnerCompanyID, &typ)
	l.ClientType = domain.ClientType(typ)
	return l, miss(err)
}

// PartnerClients implements app.Repository.
func (r *Repo) PartnerClients(ctx context.Context, partnerCompanyID int64) ([]domain.PartnerClient, error) {
	rows, err := r.db.Query(ctx, `
		SELECT c.id, c.name, pc.client_type, c.payments_locked, c.waba_provider_partner_id, pc.created_at
		FROM partner_clients pc JOIN companies c ON c.id = pc.company_id
		WHERE pc.partner_company_id = $1 ORDER BY c.id`, partnerCompanyID)
	if err != nil {
		return nil, fmt.Errorf("partner clients: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.PartnerClient, error) {
		var c domain.PartnerClient
		var typ string
		err := row.Scan(&c.CompanyID, &c.Name, &typ, &c.PaymentsLocked, &c.WabaProviderPartnerID, &c.CreatedAt)
		c.ClientType = domain.ClientType(typ)
		return c, err
	})
}

// CreatePartnerClient implements app.Repository.
//
// The cap holds under parallel calls because every creation for one
// partner takes the same transaction-scoped advisory lock first: the
// next one counts only once the previous has committed (or rolled back,
// and then its row is not there to count). The email's uniqueness does
// not rest on that lock (two partners, or the operator, may create the
// same address at once): users_email_key, the unique index on
// lower(email), refuses the second insert, which becomes
// domain.ErrConflict like the check before it.
func (r *Repo) CreatePartnerClient(ctx context.Context, in app.NewPartnerClient) (domain.Company, error) {
	var out domain.Company
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('identity.partner_clients', $1))`,
			in.PartnerCompanyID); err != nil {
			return fmt.Errorf("lock partner: %w", err)
		}
		var isPartner bool
		err := tx.QueryRow(ctx, `SELECT is_partner FROM companies WHERE id = $1`, in.PartnerCompanyID).Scan(&isPartner)
		if err != nil {
			return miss(err)
		}
		if !isPartner {
			return domain.ErrNotFound
		}
		var today int
		// The clients the partner created itself that UTC day (the
		// operator's sign-ups with its code are not its calls).
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM partner_clients
			WHERE partner_company_id = $1 AND created_by_partner AND created_at >= $2 AND created_at < $3`,
			in.PartnerCompanyID, in.DayStart, in.DayEnd).Scan(&today); err != nil {
			return fmt.Errorf("count partner clients: %w", err)
		}
		if today >= in.MaxPerDay {
			return domain.ErrDailyLimit
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE lower(email) = lower($1))`,
			in.Owner.Email).Scan(&taken); err != nil {
			return fmt.Errorf("find user: %w", err)
		}
		if taken {
			return domain.ErrConflict
		}
		var userID int64
		err = tx.QueryRow(ctx, `INSERT INTO users (email, display_name, phone, password_hash)
			VALUES ($1, $2, $3, $4) RETURNING id`,
			in.Owner.Email, in.Owner.DisplayName, in.Owner.Phone, in.PasswordHash).Scan(&userID)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return domain.ErrConflict
		}
		if err != nil {
			return fmt.Errorf("insert user: %w", err)
		}
		var companyID int64
		if err := tx.QueryRow(ctx,
			`INSERT INTO companies (name, timezone, is_partner) VALUES ($1, $2, false) RETURNING id`,
			in.CompanyName, in.Timezone).Scan(&companyID); err != nil {
			return fmt.Errorf("insert company: %w", err)
		}
		if err := setOwner(ctx, tx, companyID, userID, in.Roles); err != nil {
			return err
		}
		if err := insertClientLink(ctx, tx, companyID, in.PartnerCompanyID, domain.ClientPartner, in.Now, true); err != nil {
			return err
		}
		if err := mail.Enqueue(ctx, tx, in.Mail); err != nil {
			return err
		}
		out, err = company(ctx, tx, companyID)
		return err
	})
	return out, err
}

// EnsurePromoCodes implements app.Repository: one short transaction per
// missing code, so that replicas starting together only skip each
// other's codes.
func (r *Repo) EnsurePromoCodes(ctx context.Context) (int, error) {
	rows, err := r.db.Query(ctx, `
		SELECT c.id, k.kind FROM companies c
		CROSS JOIN (VALUES ('partner'), ('referral')) AS k (kind)
		WHERE c.is_partner AND NOT EXISTS (
			SELECT 1 FROM promo_codes p WHERE p.company_id = c.id AND p.kind = k.kind)
		ORDER BY c.id, k.kind`)
	if err != nil {
		return 0, fmt.Errorf("partners without codes: %w", err)
	}
	type missing struct {
		companyID int64
		kind      string
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (missing, error) {
		var m missing
		err := row.Scan(&m.companyID, &m.kind)
		return m, err
	})
	if err != nil {
		return 0, fmt.Errorf("partners without codes: %w", err)
	}
	created := 0
	for _, m := range list {
		var made bool
		err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
			var err error
			made, err = r.ensurePromoCode(ctx, tx, m.companyID, domain.ClientType(m.kind))
			return err
		})
		if err != nil {
			return created, fmt.Errorf("promo code of company %d: %w", m.companyID, err)
		}
		if made {
			created++
		}
	}
	return created, nil
}
