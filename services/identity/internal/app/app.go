// Package app holds identity's use cases. It speaks domain types and answers
// API errors from the catalogue; storage and transport stay outside.
package app

import (
	"context"
	"errors"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
	"switchboard.dev/services/identity/internal/domain"
)

// Repository is identity's storage, implemented by adapters/postgres.
type Repository interface {
	CreateCompany(ctx context.Context, in NewCompany) (CompanyCreated, error)
	Company(ctx context.Context, id int64) (domain.Company, error)
	User(ctx context.Context, id int64) (domain.User, error)
	Members(ctx context.Context, companyID int64) ([]domain.Member, error)
	Roles(ctx context.Context, companyID int64) ([]domain.Role, error)
	Integrations(ctx context.Context, companyID int64, limit, offset int) ([]domain.Integration, int64, error)
	Integration(ctx context.Context, companyID, id int64) (domain.Integration, error)
	// UpdateIntegration runs update on the locked row and stores the result
	// in one transaction.
	UpdateIntegration(ctx context.Context, companyID, id int64, update func(*domain.Integration) error) (domain.Integration, error)
	CreateIntegration(ctx context.Context, in domain.Integration) (domain.Integration, error)
	CreateRole(ctx context.Context, role domain.Role) (domain.Role, error)
	// CreateMember adds the user with that email (creating the account if
	// needed) to the company. roleID 0 with a system type picks that role.
	CreateMember(ctx context.Context, companyID int64, user domain.User, role RoleRef) (domain.Member, error)
	// Principal finds the enabled API integration with that key hash.
	Principal(ctx context.Context, keyHash string) (Principal, error)
	// MarkHadConnections sets had_connections on the companies with those
	// ids and answers the ids that name no company.
	MarkHadConnections(ctx context.Context, companyIDs []int64) (unknown []int64, err error)
	// UnknownCompanies are the ids, sorted and without repeats, that name
	// no company.
	UnknownCompanies(ctx context.Context, companyIDs []int64) ([]int64, error)
	// UpdateBillingSettings sets the given fields (nil: unchanged) of the
	// company in one statement and answers its settings after the change;
	// domain.ErrNotFound when no company has that id.
	UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (domain.BillingSettings, error)

	// ResolvePromoCode finds the code, compared as upper(code);
	// domain.ErrNotFound when no partner has it.
	ResolvePromoCode(ctx context.Context, code string) (domain.PromoCode, error)
	// Partner is a partner company with its codes; domain.ErrNotFound
	// for a company that is not a partner, or none.
	Partner(ctx context.Context, companyID int64) (domain.Partner, error)
	// ClientLink is the partner the company is a client of;
	// domain.ErrNotFound when none.
	ClientLink(ctx context.Context, companyID int64) (domain.ClientLink, error)
	// PartnerClients are the partner's clients by company id.
	PartnerClients(ctx context.Context, partnerCompanyID int64) ([]domain.PartnerClient, error)
	// CreatePartnerClient creates, in one transaction under a lock on the
	// partner, the user, its company, the link and the mail. It answers
	// domain.ErrNotFound when the partner is not a partner company,
	// domain.ErrDailyLimit when MaxPerDay of its clients were created in
	// [DayStart, DayEnd), domain.ErrConflict when a user has the email
	// (case ignored); and then nothing is written.
	CreatePartnerClient(ctx context.Context, in NewPartnerClient) (domain.Company, error)
	// EnsurePromoCodes gives every partner company the codes it lacks and
	// answers how many it created.
	EnsurePromoCodes(ctx context.Context) (int, error)

	// DeleteIntegration deletes the row with its bindings and answers it;
	// domain.ErrNotFound when the company has no such integration.
	DeleteIntegration(ctx context.Context, companyID, id int64) (domain.Integration, error)
	// BindConnection binds the connection to the company's webhook
	// integration (nothing when bound already); domain.ErrNotFound when
	// the company has no such webhook integration.
	BindConnection(ctx context.Context, companyID, id, connectionID int64) error
	UnbindConnection(ctx context.Context, companyID, id, connectionID int64) error
	// IntegrationConnections are the connection ids bound, ascending.
	IntegrationConnections(ctx context.Context, companyID, id int64) ([]int64, error)
	// ConnectionIntegrations are the integration ids bound to each of the
	// connections, ascending; connections with none are left out.
	ConnectionIntegrations(ctx context.Context, companyID int64, connectionIDs []int64) (map[int64][]int64, error)
	// WebhookTargets are the enabled webhook integrations with a URL bound
	// to each of the connections, and to any connection of companies, by
	// company, connection and integration.
	WebhookTargets(ctx context.Context, pairs []CompanyConnection, companies []int64) ([]WebhookTarget, error)
}

// Revoker makes a replaced key stop working everywhere at once.
type Revoker interface {
	Revoke(ctx context.Context, keyHash string) error
}

// RoleRef names a role by id or by system type.
type RoleRef struct {
	ID         int64
	SystemType domain.SystemRole
}

// NewCompany is what the operator API creates.
type NewCompany struct {
	Name      string
	Timezone  string
	IsPartner bool
	Owner     domain.User
	// Roles to create, the first being the owner's.
	Roles []domain.Role
	// API integration holding every scope, with its key hash set.
	Integration domain.Integration
	// PromoCode, when not "", is resolved in the transaction and links the
	// company to its partner as the code's type of client (LinkedAt);
	// domain.ErrUnknownPromoCode when no partner has it. A partner
	// company (IsPartner) gets its own two codes instead.
	PromoCode string
	LinkedAt  time.Time
}

// NewPartnerClient is what CreatePartnerClient stores.
type NewPartnerClient struct {
	PartnerCompanyID int64
	// The cap: at most MaxPerDay clients of the partner created in
	// [DayStart, DayEnd), the current UTC day.
	MaxPerDay        int
	DayStart, DayEnd time.Time
	// Now is the link's created_at.
	Now time.Time
	// Owner with Email, DisplayName and Phone; PasswordHash is stored
	// with it.
	Owner        domain.User
	PasswordHash string
	CompanyName  string
	Timezone     string
	// Roles to create, the first being the owner's.
	Roles []domain.Role
	// Mail is queued in the transaction.
	Mail mail.Mail
}

// CompanyCreated is the result of CreateCompany.
type CompanyCreated struct {
	Company       domain.Company
	Owner         domain.User
	IntegrationID int64
}

// Principal is who an API key acts as.
type Principal struct {
	CompanyID        int64
	IntegrationID    int64
	Scopes           []string
	OwnerUserID      int64
	OwnerName        string
	Permissions      []string
	CompanyIsPartner bool
}

// Config is what the use cases are told of their surroundings.
type Config struct {
	// MailDeliverable: queued mail can reach its recipient (an SMTP server
	// is configured, or test mode keeps mail in the sandbox mailbox).
	// Without it, use cases that must mail refuse with 503 before writing.
	MailDeliverable bool
	// Now is the clock (time.Now when nil): partner clients' created_at
	// and the UTC day of their daily cap.
	Now func() time.Time
}

// Service is the use cases.
type Service struct {
	repo    Repository
	revoker Revoker
	cfg     Config
	v1      V1Peers
}

// New wires the use cases.
func New(repo Repository, revoker Revoker, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{repo: repo, revoker: revoker, cfg: cfg}
}

// notFound maps a repository miss to the given API error and passes any
// other failure on.
func notFound(err error, def apierr.Def) error {
	if errors.Is(err, domain.ErrNotFound) {
		return def.E()
	}
	return err
}
