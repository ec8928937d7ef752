// Package postgres stores identity's data. Every query that reads company
// data takes the company id, so one company can never see another's rows.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
	// newCode draws a promo code candidate (domain.NewPromoCode).
	newCode func() string
	// integrationsChanged is told the company of every stored change to
	// its integrations or their bindings, after the commit and before the
	// caller answers; nil tells no one.
	integrationsChanged func(ctx context.Context, companyID int64)
}

var _ app.Repository = (*Repo)(nil)

// Option configures a Repo.
type Option func(*Repo)

// WithPromoCodes draws promo code candidates from gen instead of
// domain.NewPromoCode (tests make codes clash with it).
func WithPromoCodes(gen func() string) Option {
	return func(r *Repo) { r.newCode = gen }
}

// WithIntegrationChanges tells changed of every stored change to a
// company's integrations or their bound connections (the announcement
// peers.IntegrationsChannel carries). A new company's own integration is
// not told: a company just made has no bindings, and no copy of it.
func WithIntegrationChanges(changed func(ctx context.Context, companyID int64)) Option {
	return func(r *Repo) { r.integrationsChanged = changed }
}

func (r *Repo) integrationsTold(ctx context.Context, companyID int64, err error) {
	if err == nil && r.integrationsChanged != nil {
		r.integrationsChanged(ctx, companyID)
	}
}

// New uses the pool of the identity database.
func New(db *pgxpool.Pool, opts ...Option) *Repo {
	r := &Repo{db: db, newCode: domain.NewPromoCode}
	for _, o := range opts {
		o(r)
	}
	return r
}

func miss(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.ErrNotFound
	}
	return err
}

// CreateCompany implements app.Repository.
func (r *Repo) CreateCompany(ctx context.Context, in app.NewCompany) (app.CompanyCreated, error) {
	var out app.CompanyCreated
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		var link *domain.PromoCode
		if in.PromoCode != "" {
			pc, err := resolvePromoCode(ctx, tx, in.PromoCode)
			if errors.Is(err, domain.ErrNotFound) {
				return domain.ErrUnknownPromoCode
			}
			if err != nil {
				return err
			}
			link = &pc
		}
		if err := tx.QueryRow(ctx,
			`INSERT INTO companies (name, timezone, is_partner) VALUES ($1, $2, $3) RETURNING id`,
			in.Name, in.Timezone, in.IsPartner).Scan(&out.Company.ID); err != nil {
			return fmt.Errorf("insert company: %w", err)
		}
		owner := in.Owner
		if owner.Email == "" {
			owner.Email = fmt.Sprintf("owner-%d@switchboard.local", out.Company.ID)
		}
		var err error
		if out.Owner, err = upsertUser(ctx, tx, owner); err != nil {
			return err
		}
		if err := setOwner(ctx, tx, out.Company.ID, out.Owner.ID, in.Roles); err != nil {
			return err
		}
		in.Integration.CompanyID = out.Company.ID
		integ, err := insertIntegration(ctx, tx, in.Integration)
		if err != nil {
			return err
		}
		out.IntegrationID = integ.ID
		if in.IsPartner {
			for _, kind := range []domain.ClientType{domain.ClientPartner, domain.ClientReferral} {
				if _, err := r.ensurePromoCode(ctx, tx, out.Company.ID, kind); err != nil {
					return err
				}
			}
		}
		if link != nil {
			if err := insertClientLink(ctx, tx, out.Company.ID, link.PartnerCompanyID, link.ClientType, in.LinkedAt, false); err != nil {
				return err
			}
		}
		out.Company, err = company(ctx, tx, out.Company.ID)
		return err
	})
	return out, err
}

// setOwner creates the company's roles and makes the user its owner, a
// member with the first role.
func setOwner(ctx context.Context, tx pgx.Tx, companyID, userID int64, roles []domain.Role) error {
	var ownerRole int64
	for i, role := range roles {
		var id int64
		if err := tx.QueryRow(ctx,
			`INSERT INTO roles (company_id, name, system_type, permissions) VALUES ($1, $2, $3, $4) RETURNING id`,
			companyID, role.Name, nullable(string(role.SystemType)), role.Permissions).Scan(&id); err != nil {
			return fmt.Errorf("insert role: %w", err)
		}
		if i == 0 {
			ownerRole = id
		}
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO members (company_id, user_id, role_id) VALUES ($1, $2, $3)`,
		companyID, userID, ownerRole); err != nil {
		return fmt.Errorf("insert owner member: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE companies SET owner_id = $2 WHERE id = $1`, companyID, userID); err != nil {
		return fmt.Errorf("set owner: %w", err)
	}
	return nil
}

// upsertUser finds the account with that email or creates it: one person
// may own or join several companies.
func upsertUser(ctx context.Context, tx pgx.Tx, u domain.User) (domain.User, error) {
	// DO UPDATE rather than DO NOTHING: it returns the existing row even
	// when a concurrent transaction has just inserted it, which a separate
	// SELECT in this statement's snapshot would not see.
	row := tx.QueryRow(ctx, `
		INSERT INTO users (email, display_name) VALUES ($1, $2)
		ON CONFLICT ((lower(email))) DO UPDATE SET email = users.email
		RETURNING id, email, display_name, phone, locale`, u.Email, u.DisplayName)
	var out domain.User
	if err := row.Scan(&out.ID, &out.Email, &out.DisplayName, &out.Phone, &out.Locale); err != nil {
		return out, fmt.Errorf("upsert user: %w", err)
	}
	return out, nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func company(ctx context.Context, q queryer, id int64) (domain.Company, error) {
	var c domain.Company
	err := q.QueryRow(ctx, `
		SELECT id, name, coalesce(owner_id, 0), timezone, payment_currency, payments_locked,
		       waba_provider_partner_id, had_connections, is_partner
		FROM companies WHERE id = $1`, id).Scan(
		&c.ID, &c.Name, &c.OwnerID, &c.Timezone, &c.PaymentCurrency, &c.PaymentsLocked,
		&c.WabaProviderPartnerID, &c.HadConnections, &c.IsPartner)
	return c, miss(err)
}

// Company implements app.Repository.
func (r *Repo) Company(ctx context.Context, id int64) (domain.Company, error) {
	return company(ctx, r.db, id)
}

// MarkHadConnections implements app.Repository. Rows already true are not
// rewritten, so repeats cost no writes.
func (r *Repo) MarkHadConnections(ctx context.Context, companyIDs []int64) ([]int64, error) {
	if _, err := r.db.Exec(ctx, `UPDATE companies SET had_connections = true
		WHERE id = ANY($1) AND NOT had_connections`, companyIDs); err != nil {
		return nil, fmt.Errorf("mark had_connections: %w", err)
	}
	return r.UnknownCompanies(ctx, companyIDs)
}

// UnknownCompanies implements app.Repository.
func (r *Repo) UnknownCompanies(ctx context.Context, companyIDs []int64) ([]int64, error) {
	rows, err := r.db.Query(ctx, `SELECT DISTINCT u.id FROM unnest($1::bigint[]) AS u(id)
		WHERE NOT EXISTS (SELECT 1 FROM companies c WHERE c.id = u.id) ORDER BY u.id`, companyIDs)
	if err != nil {
		return nil, fmt.Errorf("unknown companies: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// UpdateBillingSettings implements app.Repository: one UPDATE, so two
// operators setting different fields at once both keep their change.
func (r *Repo) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (domain.BillingSettings, error) {
	var bs domain.BillingSettings
	err := r.db.QueryRow(ctx, `UPDATE companies
		SET payment_currency = coalesce($2, payment_currency), payments_locked = coalesce($3, payments_locked)
		WHERE id = $1 RETURNING id, payment_currency, payments_locked`, companyID, currency, locked).
		Scan(&bs.CompanyID, &bs.PaymentCurrency, &bs.PaymentsLocked)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return bs, fmt.Errorf("update billing settings: %w", err)
	}
	return bs, miss(err)
}

// User implements app.Repository.
func (r *Repo) User(ctx context.Context, id int64) (domain.User, error) {
	var u domain.User
	err := r.db.QueryRow(ctx, `SELECT id, email, display_name, phone, locale FROM users WHERE id = $1`, id).
		Scan(&u.ID, &u.Email, &u.DisplayName, &u.Phone, &u.Locale)
	return u, miss(err)
}

// Members implements app.Repository.
func (r *Repo) Members(ctx context.Context, companyID int64) ([]domain.Member, error) {
	rows, err := r.db.Query(ctx, `
		SELECT m.id, m.company_id, m.user_id, m.role_id, u.display_name, u.email
		FROM members m JOIN users u ON u.id = m.user_id
		WHERE m.company_id = $1 ORDER BY m.id`, companyID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Member, error) {
		var m domain.Member
		err := row.Scan(&m.ID, &m.CompanyID, &m.UserID, &m.RoleID, &m.DisplayName, &m.Email)
		return m, err
	})
}

// Roles implements app.Repository.
func (r *Repo) Roles(ctx context.Context, companyID int64) ([]domain.Role, error) {
	rows, err := r.db.Query(ctx, `
		SELECT id, company_id, name, coalesce(system_type, ''), permissions
		FROM roles WHERE company_id = $1 ORDER BY id`, companyID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Role, error) {
		var ro domain.Role
		var st string
		err := row.Scan(&ro.ID, &ro.CompanyID, &ro.Name, &st, &ro.Permissions)
		ro.SystemType = domain.SystemRole(st)
		return ro, err
	})
}

const integrationCols = `id, company_id, type, name, status, scopes, coalesce(key_hash, ''), webhook_url, coalesce(secret, ''), created_at, updated_at`

func scanIntegration(row pgx.Row) (domain.Integration, error) {
	var in domain.Integration
	var typ string
	err := row.Scan(&in.ID, &in.CompanyID, &typ, &in.Name, &in.Status, &in.Scopes, &in.KeyHash, &in.WebhookURL, &in.Secret, &in.CreatedAt, &in.UpdatedAt)
	in.Type = domain.IntegrationType(typ)
	return in, miss(err)
}

// Integrations implements app.Repository.
func (r *Repo) Integrations(ctx context.Context, companyID int64, limit, offset int) ([]domain.Integration, int64, error) {
	var total int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM integrations WHERE company_id = $1`, companyID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := r.db.Query(ctx, `SELECT `+integrationCols+` FROM integrations
		WHERE company_id = $1 ORDER BY id LIMIT $2 OFFSET $3`, companyID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Integration, error) {
		return scanIntegration(row)
	})
	return list, total, err
}

// Integration implements app.Repository.
func (r *Repo) Integration(ctx context.Context, companyID, id int64) (domain.Integration, error) {
	return scanIntegration(r.db.QueryRow(ctx, `SELECT `+integrationCols+` FROM integrations
		WHERE company_id = $1 AND id = $2`, companyID, id))
}

// UpdateIntegration implements app.Repository.
func (r *Repo) UpdateIntegration(ctx context.Context, companyID, id int64, update func(*domain.Integration) error) (domain.Integration, error) {
	var out domain.Integration
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		in, err := scanIntegration(tx.QueryRow(ctx, `SELECT `+integrationCols+` FROM integrations
			WHERE company_id = $1 AND id = $2 FOR UPDATE`, companyID, id))
		if err != nil {
			return err
		}
		if err := update(&in); err != nil {
			return err
		}
		out, err = scanIntegration(tx.QueryRow(ctx, `UPDATE integrations
			SET name = $3, status = $4, scopes = $5, key_hash = nullif($6, ''), webhook_url = $7, updated_at = now()
			WHERE company_id = $1 AND id = $2 RETURNING `+integrationCols,
			companyID, id, in.Name, in.Status, in.Scopes, in.KeyHash, in.WebhookURL))
		return err
	})
	r.integrationsTold(ctx, companyID, err)
	return out, err
}

func insertIntegration(ctx context.Context, q queryer, in domain.Integration) (domain.Integration, error) {
	out, err := scanIntegration(q.QueryRow(ctx, `INSERT INTO integrations (company_id, type, name, status, scopes, key_hash, webhook_url, secret)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, nullif($8, '')) RETURNING `+integrationCols,
		in.CompanyID, string(in.Type), in.Name, in.Status, in.Scopes, in.KeyHash, in.WebhookURL, in.Secret))
	if err != nil {
		return out, fmt.Errorf("insert integration: %w", err)
	}
	return out, nil
}

// CreateIntegration implements app.Repository.
func (r *Repo) CreateIntegration(ctx context.Context, in domain.Integration) (domain.Integration, error) {
	out, err := insertIntegration(ctx, r.db, in)
	r.integrationsTold(ctx, in.CompanyID, err)
	return out, err
}

// CreateRole implements app.Repository.
func (r *Repo) CreateRole(ctx context.Context, role domain.Role) (domain.Role, error) {
	err := r.db.QueryRow(ctx, `INSERT INTO roles (company_id, name, system_type, permissions)
		VALUES ($1, $2, $3, $4) RETURNING id`,
		role.CompanyID, role.Name, nullable(string(role.SystemType)), role.Permissions).Scan(&role.ID)
	if err != nil {
		return role, fmt.Errorf("insert role: %w", err)
	}
	return role, nil
}

// CreateMember implements app.Repository.
func (r *Repo) CreateMember(ctx context.Context, companyID int64, user domain.User, role app.RoleRef) (domain.Member, error) {
	var m domain.Member
	err := postgres.WithTx(ctx, r.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id FROM roles
			WHERE company_id = $1 AND (id = $2 OR ($2 = 0 AND system_type = $3))`,
			companyID, role.ID, string(role.SystemType)).Scan(&m.RoleID)
		if err != nil {
			return miss(err)
		}
		u, err := upsertUser(ctx, tx, user)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `INSERT INTO members (company_id, user_id, role_id) VALUES ($1, $2, $3) RETURNING id`,
			companyID, u.ID, m.RoleID).Scan(&m.ID)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return domain.ErrConflict
		}
		if err != nil {
			return fmt.Errorf("insert member: %w", err)
		}
		m.CompanyID, m.UserID, m.DisplayName, m.Email = companyID, u.ID, u.DisplayName, u.Email
		return nil
	})
	return m, err
}

// Principal implements app.Repository: the key's integration, its company
// and the permissions of the owner's role in that company.
func (r *Repo) Principal(ctx context.Context, keyHash string) (app.Principal, error) {
	var p app.Principal
	err := r.db.QueryRow(ctx, `
		SELECT i.company_id, i.id, i.scopes, c.owner_id, coalesce(u.display_name, ''), coalesce(ro.permissions, '{}'), c.is_partner
		FROM integrations i
		JOIN companies c ON c.id = i.company_id
		LEFT JOIN users u ON u.id = c.owner_id
		LEFT JOIN members m ON m.company_id = c.id AND m.user_id = c.owner_id
		LEFT JOIN roles ro ON ro.id = m.role_id
		WHERE i.key_hash = $1 AND i.type = 'api' AND i.status = 'enabled'`, keyHash).
		Scan(&p.CompanyID, &p.IntegrationID, &p.Scopes, &p.OwnerUserID, &p.OwnerName, &p.Permissions, &p.CompanyIsPartner)
	return p, miss(err)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
