// Package app holds the partner programme's use cases. Identity owns the
// partners, their promo codes and their clients; billing owns the
// clients' subscriptions, requisites and money; this service owns the
// partner's settings, notes and requisites, and joins the rest for the
// partner's views. The rules of subscriptions are billing's: the partner's
// routes reach them through billing's internal API, never a copy.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/partners/internal/domain"
)

// Repository is this service's storage (adapters/postgres).
type Repository interface {
	// Settings answers found false for a partner without its own.
	Settings(ctx context.Context, partnerID int64) (domain.Settings, bool, error)
	// UpdateSettings runs update on the partner's settings (the defaults
	// when it has none) under a row lock and stores the result.
	UpdateSettings(ctx context.Context, partnerID int64, defaults domain.Settings, update func(*domain.Settings) error) (domain.Settings, error)
	// Notes maps the partner's clients to its notes on them.
	Notes(ctx context.Context, partnerID int64) (map[int64]string, error)
	SetNote(ctx context.Context, partnerID, companyID int64, note string) error
	// CreateRequisite stores r; a default one clears the partner's
	// previous default in the same transaction.
	CreateRequisite(ctx context.Context, r domain.Requisite) (domain.Requisite, error)
	// Requisites of a partner, oldest first.
	Requisites(ctx context.Context, partnerID int64) ([]domain.Requisite, error)
}

// PartnerInfo is identity's data of a partner company.
type PartnerInfo struct {
	Name, PromoCode, ReferralPromoCode string
}

// ClientInfo is identity's data of a client.
type ClientInfo struct {
	ID                    int64
	Name                  string
	Type                  string
	PaymentsLocked        bool
	WabaProviderPartnerID *string
}

// NewClient is a client to create.
type NewClient struct {
	PartnerID   int64
	Name        string
	Email       string
	CompanyName string
	Phone       string
	MaxPerDay   int32
}

// Identity is the identity service's internal API (adapters/peers).
type Identity interface {
	// Partner answers 8000 for a company that is not a partner.
	Partner(ctx context.Context, companyID int64) (PartnerInfo, error)
	// Clients of a partner, by id.
	Clients(ctx context.Context, partnerID int64) ([]ClientInfo, error)
	// ClientLink is the partner (0: none) and type of a company.
	ClientLink(ctx context.Context, companyID int64) (partnerID int64, typ string, err error)
	CreateClient(ctx context.Context, c NewClient) (*identityv1.Company, error)
	SetPaymentsLocked(ctx context.Context, companyID int64, locked bool) error
}

// CompanyBilling is billing's data of one client for the list.
type CompanyBilling struct {
	Subs    []domain.Sub
	Balance int64
}

// Billing is the billing service's internal API (adapters/peers); its
// errors are API errors passed on as they are.
type Billing interface {
	Companies(ctx context.Context, ids []int64) (map[int64]CompanyBilling, error)
	Subscriptions(ctx context.Context, companyID int64) ([]*billingv1.Subscription, error)
	ChangeSize(ctx context.Context, r *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error)
	ChangePlan(ctx context.Context, r *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error)
	GrantAdvance(ctx context.Context, r *billingv1.GrantAdvanceRequest) (*billingv1.Subscription, error)
	Requisites(ctx context.Context, companyID int64) ([]*billingv1.Requisite, error)
}

// Connection is what a partner sees of a client's connection.
type Connection struct {
	ID    int64
	Type  string
	Name  string
	Phone *string
}

// Connections is the connections service's internal API.
type Connections interface {
	// Of a company, by id.
	Connections(ctx context.Context, companyID int64) (map[int64]Connection, error)
}

// Mailbox is test mode's mailbox (pkg/mail).
type Mailbox interface {
	List(ctx context.Context, to string) ([]mail.Stored, error)
}

// Config of the use cases.
type Config struct {
	// Defaults of a partner without settings of its own.
	DefaultCommissions   domain.Commissions
	DefaultClientsPerDay int32
	// DefaultRegion of phones written without a country code.
	DefaultRegion string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Service is the use cases.
type Service struct {
	repo    Repository
	ident   Identity
	billing Billing
	conns   Connections
	mailbox Mailbox
	cfg     Config
}

// New wires the use cases; mailbox is nil outside test mode.
func New(repo Repository, ident Identity, billing Billing, conns Connections, mailbox Mailbox, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.DefaultRegion == "" {
		cfg.DefaultRegion = "RU"
	}
	return &Service{repo: repo, ident: ident, billing: billing, conns: conns, mailbox: mailbox, cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// DefaultCommissions are the configuration's: 20, 10, 10.
func DefaultCommissions() domain.Commissions {
	return domain.Commissions{Partner: decimal.NewFromInt(20), Referral: decimal.NewFromInt(10), WabaDialogs: decimal.NewFromInt(10)}
}

func notFound(err error, def apierr.Def) error {
	if errors.Is(err, domain.ErrNotFound) {
		return def.E()
	}
	return err
}
