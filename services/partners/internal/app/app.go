// Package app holds the partner programme's use cases. Identity owns the
// partners, their promo codes and their clients; billing owns the
// clients' subscriptions, requisites and money; this service owns the
// partner's settings, notes and requisites, its rewards (counted from
// billing's events: IngestBillingEvents), balance and payouts, and joins
// the rest for the partner's views. The rules of subscriptions are
// billing's: the partner's routes reach them through billing's internal
// API, never a copy.
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

	// Ingest runs fn in one transaction, serialised with every other
	// ingest: all of a batch of billing events is stored and applied, or
	// nothing.
	Ingest(ctx context.Context, fn func(IngestTx) error) error
	// Totals are the sums of the partner's balance.
	Totals(ctx context.Context, partnerID int64) (domain.Totals, error)
	// Rewards of a partner, newest period first, then by id.
	Rewards(ctx context.Context, partnerID int64, f domain.RewardFilter) ([]domain.Reward, error)
	// Payouts of a partner, newest first.
	Payouts(ctx context.Context, partnerID int64) ([]domain.Payout, error)
	// PayoutTx runs fn in one transaction holding the partner's payout
	// lock: parallel requests of one partner run one after the other.
	PayoutTx(ctx context.Context, partnerID int64, fn func(PayoutTx) error) error
	// UpdatePayout runs update on any partner's payout locked FOR UPDATE
	// and stores what it left; domain.ErrNotFound for an unknown id.
	UpdatePayout(ctx context.Context, id int64, update func(*domain.Payout) error) (domain.Payout, error)

	// Requisite is one of the partner's; domain.ErrNotFound for an unknown
	// one or another partner's.
	Requisite(ctx context.Context, partnerID, id int64) (domain.Requisite, error)
	// ReserveBalance holds the partner's whole available balance (0 when
	// none) for a partner invoice of the client being made: a pending
	// hold, stored under the partner's balance lock (the payouts' one).
	ReserveBalance(ctx context.Context, partnerID, companyID int64, at time.Time) (domain.Hold, error)
	// SettleHold makes a pending hold what its invoice used; a hold that
	// is no longer pending is left as it is.
	SettleHold(ctx context.Context, id string, invoiceID int64, used decimal.Decimal) error
	// ReleaseHold gives a hold's balance back (its invoice, when known,
	// recorded).
	ReleaseHold(ctx context.Context, id string, invoiceID *int64) error
	// ResolvePendingHold locks the oldest pending hold made before cutoff
	// that no other replica holds, stores what resolve makes of it in the
	// same transaction, and reports whether there was one.
	ResolvePendingHold(ctx context.Context, cutoff time.Time, resolve func(domain.Hold) (HoldOutcome, error)) (bool, error)
	// Hold answers domain.ErrNotFound for an unknown id.
	Hold(ctx context.Context, id string) (domain.Hold, error)
}

// HoldOutcome is what became of a pending hold: released, or held by
// its invoice (InvoiceID) for Used.
type HoldOutcome struct {
	Release   bool
	InvoiceID *int64
	Used      decimal.Decimal
}

// IngestTx is the transaction of one batch of billing events.
type IngestTx interface {
	// RecordEvent stores the event once: false when it was stored before
	// (it is then not applied again).
	RecordEvent(ctx context.Context, ev BillingEvent) (bool, error)
	// Settings answers found false for a partner without its own.
	Settings(ctx context.Context, partnerID int64) (domain.Settings, bool, error)
	// LockReward answers the row of key locked FOR UPDATE, first made
	// (empty, created at at) when there is none.
	LockReward(ctx context.Context, key domain.RewardKey, at time.Time) (domain.Reward, error)
	// SaveReward stores a locked row's sums.
	SaveReward(ctx context.Context, r domain.Reward) error
	// AddDialogsOpened counts n more dialogs of the company in the month
	// and answers the month's count.
	AddDialogsOpened(ctx context.Context, companyID int64, period string, n int64) (int64, error)
	// DialogsOpened is the company's count of the month (0 without one).
	DialogsOpened(ctx context.Context, companyID int64, period string) (int64, error)
	// SetDialogSpendings sets the spendings of every dialogs reward of the
	// company in the month.
	SetDialogSpendings(ctx context.Context, companyID int64, period string, spendings decimal.Decimal) error
	// NotifyTx queues payment_status notifications (notify.go).
	NotifyTx
	// SettleHold and ReleaseHold are Repository's, in the transaction.
	SettleHold(ctx context.Context, id string, invoiceID int64, used decimal.Decimal) error
	ReleaseHold(ctx context.Context, id string, invoiceID *int64) error
}

// PayoutTx is the transaction of one partner's payout request.
type PayoutTx interface {
	// Requisite is one of the partner's; domain.ErrNotFound for an unknown
	// one or another partner's.
	Requisite(ctx context.Context, id int64) (domain.Requisite, error)
	// HasCreatedPayout reports a CREATED payout of the partner.
	HasCreatedPayout(ctx context.Context) (bool, error)
	// Totals are the sums of the partner's balance.
	Totals(ctx context.Context) (domain.Totals, error)
	// InsertPayout stores p and answers it as stored.
	InsertPayout(ctx context.Context, p domain.Payout) (domain.Payout, error)
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
	// Invoices of the companies, newest first, and their count.
	Invoices(ctx context.Context, companyIDs []int64, limit, offset int32) ([]*billingv1.CompanyInvoice, int64, error)
	// CreatePartnerInvoice is billing's invoice with the partner's
	// context.
	CreatePartnerInvoice(ctx context.Context, r *billingv1.CreatePartnerInvoiceRequest) (*billingv1.PartnerInvoice, error)
	// ResolveHold answers the invoice billing stored for a hold, or found
	// false (billing then stores none for it any more).
	ResolveHold(ctx context.Context, holdID string) (found bool, invoiceID int64, status string, used decimal.Decimal, err error)
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
	// PayoutMin is the least balance a payout takes; zero means
	// DefaultPayoutMin.
	PayoutMin decimal.Decimal
	// DialogPrice is a business dialog's price, for the dialogs rewards'
	// spendings; zero means DefaultDialogPrice.
	DialogPrice decimal.Decimal
	// HoldGrace is how long a pending balance hold waits for its invoice
	// before the sweeper asks billing about it; zero means
	// DefaultHoldGrace.
	HoldGrace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
	// Notify configures notification channels (notify.go).
	Notify NotifyConfig
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
	if cfg.PayoutMin.IsZero() {
		cfg.PayoutMin = DefaultPayoutMin()
	}
	if cfg.HoldGrace <= 0 {
		cfg.HoldGrace = DefaultHoldGrace
	}
	if cfg.DialogPrice.IsZero() {
		cfg.DialogPrice = DefaultDialogPrice()
	}
	return &Service{repo: repo, ident: ident, billing: billing, conns: conns, mailbox: mailbox, cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// DefaultHoldGrace is SWITCHBOARD_PARTNER_HOLD_GRACE's default.
const DefaultHoldGrace = 2 * time.Minute

// DefaultPayoutMin is SWITCHBOARD_PARTNER_PAYOUT_MIN's default: 1000.00.
func DefaultPayoutMin() decimal.Decimal { return decimal.RequireFromString("1000.00") }

// DefaultDialogPrice is billing's price of a business dialog: 5.00.
func DefaultDialogPrice() decimal.Decimal { return decimal.RequireFromString("5.00") }

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
