// Package app holds billing's use cases. It speaks domain types and answers
// API errors from the catalogue; storage, the connections service and the
// identity service stay behind the interfaces below.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// Repository is billing's storage, implemented by adapters/postgres.
type Repository interface {
	// EnsureSubscription stores fresh unless the company already has a
	// subscription of its type, and answers the stored one either way. Safe
	// to call concurrently: exactly one row results.
	EnsureSubscription(ctx context.Context, fresh domain.Subscription) (domain.Subscription, error)
	// Subscriptions of a company ordered by id: all of them, or those of
	// ids (unknown ids are left out).
	Subscriptions(ctx context.Context, companyID int64, ids []int64) ([]domain.Subscription, error)
	// CompaniesSubscriptions are the subscriptions of all the given
	// companies, in one query, ordered by company and id; companies
	// without any are simply absent.
	CompaniesSubscriptions(ctx context.Context, companyIDs []int64) ([]domain.Subscription, error)
	// Subscription answers domain.ErrNotFound for an unknown id or one of
	// another company.
	Subscription(ctx context.Context, companyID, id int64) (domain.Subscription, error)
	// UpdateSubscription runs update on the row locked FOR UPDATE and
	// stores what update left, in one transaction. The lock is held while
	// update runs, so update may ask the connections service about the
	// subscription's members knowing that no other change to this
	// subscription interleaves.
	UpdateSubscription(ctx context.Context, companyID, id int64, update func(*domain.Subscription) error) (domain.Subscription, error)

	// WabaDialogsBalance is the company's business dialog balance, 0 for a
	// company without one.
	WabaDialogsBalance(ctx context.Context, companyID int64) (int64, error)
	// WabaDialogsBalances are the business dialog balances of the given
	// companies, in one query; a company without a balance row is absent
	// (its balance is 0).
	WabaDialogsBalances(ctx context.Context, companyIDs []int64) (map[int64]int64, error)
	// AddWabaDialogs adds count to the balance in one atomic statement and
	// answers the balance after it, so concurrent adds all count. A sum
	// past the int64 range is domain.ErrBalanceOutOfRange, nothing changed.
	AddWabaDialogs(ctx context.Context, companyID int64, count int32) (int64, error)
	// TakeWabaDialog takes one dialog when the balance is above 0, once per
	// (company, key): a key that already took answers taken with the
	// balance that take left, and takes nothing. A take that finds the
	// balance at or below 0 records nothing and answers the balance now.
	// Concurrent takes never take more than the balance held. A take
	// that takes writes the outbox event EventWabaDialogOpened
	// (DialogOpenedEvent(companyID, at)) in its transaction; one that
	// answers an earlier take, or takes nothing, writes none.
	TakeWabaDialog(ctx context.Context, companyID int64, key string, at time.Time) (taken bool, balance int64, err error)

	CreateRequisite(ctx context.Context, q domain.Requisite) (domain.Requisite, error)
	// Requisites of a company, oldest first.
	Requisites(ctx context.Context, companyID int64) ([]domain.Requisite, error)
	// Requisite answers domain.ErrNotFound for another company's.
	Requisite(ctx context.Context, companyID, id int64) (domain.Requisite, error)
	// Invoice answers domain.ErrNotFound for another company's.
	Invoice(ctx context.Context, companyID, id int64) (domain.Invoice, error)
	// Invoices of the companies, newest first, and how many they have in
	// all.
	Invoices(ctx context.Context, companyIDs []int64, limit, offset int32) ([]domain.Invoice, int64, error)
	// DueInvoices are ids of new invoices whose lifetime ended by now.
	DueInvoices(ctx context.Context, now time.Time, limit int) ([]int64, error)
	// SandboxRate is the test-mode rate of a company: found false without
	// one set, a nil rate when set unavailable.
	SandboxRate(ctx context.Context, companyID int64) (*decimal.Decimal, bool, error)
	SetSandboxRate(ctx context.Context, companyID, connectionID int64, rate *decimal.Decimal) error
	// InTx runs fn in one transaction: all its writes or none.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Connections is the connections service's internal API
// (adapters/connections). It owns which connections are in which
// subscription; its errors are API errors to pass on as they are.
type Connections interface {
	// Membership maps each of the company's subscriptions that holds
	// connections to their ids.
	Membership(ctx context.Context, companyID int64) (map[int64][]int64, error)
	// SetMembership makes ids the connections of the subscription (or
	// checks that it could, with Preview) and answers the ids it then
	// holds. An id that is not a company connection of the type is a 422
	// at body.connections.<i>.
	SetMembership(ctx context.Context, m Membership) ([]int64, error)
	// Connection answers the company and subscription of any connection; an
	// unknown one is CONNECTION_NOT_FOUND.
	Connection(ctx context.Context, connectionID int64) (ConnectionRef, error)
	// HasConnection reports whether the company has a connection of the
	// type (lower case, as the API spells it: "keepz").
	HasConnection(ctx context.Context, companyID int64, typ string) (bool, error)
}

// Companies knows which companies exist: the identity service owns them
// (pkg/peers). Public and internal calls need it not (an API key's
// company exists; services pass on such ids); operator calls name a
// company by id and must not write for one that does not.
type Companies interface {
	Exists(ctx context.Context, companyID int64) (bool, error)
}

// Clients knows which companies are partners' clients: identity owns the
// links between a partner and its clients.
type Clients interface {
	// PartnerClient reports whether the company is a partner-type client
	// of a partner (its partner pays for it; a referral-type client, or a
	// company that is no partner's client, is not).
	PartnerClient(ctx context.Context, companyID int64) (bool, error)
}

// Membership is a SetMembership request.
type Membership struct {
	CompanyID      int64
	SubscriptionID int64
	Type           domain.SubscriptionType
	ConnectionIDs  []int64
	Preview        bool
}

// ConnectionRef is where a connection belongs.
type ConnectionRef struct {
	CompanyID int64
	// SubscriptionID is nil for a connection in no subscription.
	SubscriptionID *int64
	// Type as the API spells it ("keepz").
	Type string
}

// Config of the use cases.
type Config struct {
	// TestPeriod of a new subscription.
	TestPeriod time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Announcer hears of every stored subscription change; nil when no
	// other process keeps copies (tests).
	Announcer Announcer
	// Prices; zero means domain.DefaultPrices.
	Prices domain.Prices
	// Settings are the companies' billing settings (identity); nil: every
	// company pays in roubles, unlocked (tests).
	Settings CompanySettings
	// Promos; nil: no code is valid.
	Promos Promos
	// Clients tells partner-type clients, whose own advance is refused
	// (their partner's route grants it); nil: no company is a client.
	Clients Clients
	// Rates of KEEPZ invoices; nil: never available.
	Rates Rates
	// Payments makes payment links; nil: no method can be paid.
	Payments Payments
	// MailDeliverable: queued mail can reach its recipient (an SMTP server
	// or test mode's mailbox); without it a partner invoice with
	// partner_email is refused with 503.
	MailDeliverable bool
	// Log; nil discards.
	Log *slog.Logger
}

// Announcer tells the other services that a company's subscriptions
// changed (adapters/announce), so the copies they keep for display
// (connections shows a summary with every connection) are dropped. It is
// told after the change is stored; failing to announce only leaves copies
// stale until they expire, so it reports no error.
type Announcer interface {
	SubscriptionsChanged(ctx context.Context, companyID int64)
}

// announcing is a Repository that announces every write it stores. Every
// write to subscriptions goes through EnsureSubscription or
// UpdateSubscription, so none goes unannounced.
type announcing struct {
	Repository
	a Announcer
}

func (r announcing) EnsureSubscription(ctx context.Context, fresh domain.Subscription) (domain.Subscription, error) {
	sub, err := r.Repository.EnsureSubscription(ctx, fresh)
	if err == nil {
		r.a.SubscriptionsChanged(ctx, fresh.CompanyID)
	}
	return sub, err
}

func (r announcing) UpdateSubscription(ctx context.Context, companyID, id int64, update func(*domain.Subscription) error) (domain.Subscription, error) {
	sub, err := r.Repository.UpdateSubscription(ctx, companyID, id, update)
	if err == nil {
		r.a.SubscriptionsChanged(ctx, companyID)
	}
	return sub, err
}

// Service is the use cases.
type Service struct {
	repo      Repository
	conns     Connections
	companies Companies
	settings  CompanySettings
	promos    Promos
	clients   Clients
	rates     Rates
	payments  Payments
	log       *slog.Logger
	cfg       Config
}

// New wires the use cases.
func New(repo Repository, conns Connections, companies Companies, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Announcer != nil {
		repo = announcing{Repository: repo, a: cfg.Announcer}
	}
	if cfg.Prices.Slot == nil {
		cfg.Prices = domain.DefaultPrices()
	}
	s := &Service{repo: repo, conns: conns, companies: companies, cfg: cfg,
		settings: cfg.Settings, promos: cfg.Promos, clients: cfg.Clients, rates: cfg.Rates, payments: cfg.Payments, log: cfg.Log}
	if s.settings == nil {
		s.settings = roubleCompanies{}
	}
	if s.promos == nil {
		s.promos = noPromos{}
	}
	if s.clients == nil {
		s.clients = noClients{}
	}
	if s.rates == nil {
		s.rates = noRates{}
	}
	if s.payments == nil {
		s.payments = noPayments{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// noPromos knows no promo code (tests that configure none).
type noPromos struct{}

func (noPromos) Valid(context.Context, string) (bool, error) { return false, nil }

// noClients knows no partner's client (tests that configure none).
type noClients struct{}

func (noClients) PartnerClient(context.Context, int64) (bool, error) { return false, nil }

type roubleCompanies struct{}

func (roubleCompanies) BillingSettings(context.Context, int64) (Settings, error) {
	return Settings{PaymentCurrency: domain.Currency}, nil
}

func (roubleCompanies) UpdateBillingSettings(context.Context, int64, *string, *bool) (Settings, error) {
	return Settings{}, errors.New("no company settings store configured")
}

type noRates struct{}

func (noRates) USD(context.Context, int64) (decimal.Decimal, string, error) {
	return decimal.Decimal{}, "", ErrNoRate
}

type noPayments struct{}

func (noPayments) PaymentURL(domain.Invoice) (string, bool, error) { return "", false, nil }
func (noPayments) Ready(string, string) bool                       { return false }

// now is the clock at PostgreSQL's precision, so that a time computed from
// it (paid_until) is stored exactly as answered.
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// notFound maps a repository miss to the given API error and passes any
// other failure on.
func notFound(err error, def apierr.Def) error {
	if errors.Is(err, domain.ErrNotFound) {
		return def.E()
	}
	return err
}
