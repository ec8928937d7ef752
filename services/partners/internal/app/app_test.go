package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	pg "switchboard.dev/pkg/postgres"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/partners/internal/adapters/postgres"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
	"switchboard.dev/services/partners/migrations"
)

// identity is a fake identity service: partners, and which company is
// whose client.
type identity struct {
	mu       sync.Mutex
	partners map[int64]app.PartnerInfo
	clients  map[int64]app.ClientInfo
	owner    map[int64]int64
	// linkCalls counts ClientLink calls by company.
	linkCalls map[int64]int
	// failLink, when set, is ClientLink's answer.
	failLink error
}

func newIdentity() *identity {
	return &identity{partners: map[int64]app.PartnerInfo{}, clients: map[int64]app.ClientInfo{},
		owner: map[int64]int64{}, linkCalls: map[int64]int{}}
}

func (i *identity) addPartner(id int64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.partners[id] = app.PartnerInfo{Name: fmt.Sprintf("Partner %d", id), PromoCode: "PROMO", ReferralPromoCode: "REFER"}
}

func (i *identity) addClient(partnerID, companyID int64, typ, name string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.clients[companyID] = app.ClientInfo{ID: companyID, Name: name, Type: typ}
	i.owner[companyID] = partnerID
}

func (i *identity) calls(companyID int64) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.linkCalls[companyID]
}

func (i *identity) Partner(_ context.Context, companyID int64) (app.PartnerInfo, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	p, ok := i.partners[companyID]
	if !ok {
		return p, apierr.CompanyNotFound.E()
	}
	return p, nil
}

func (i *identity) Clients(_ context.Context, partnerID int64) ([]app.ClientInfo, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []app.ClientInfo
	for id, c := range i.clients {
		if i.owner[id] == partnerID {
			out = append(out, c)
		}
	}
	return out, nil
}

func (i *identity) ClientLink(_ context.Context, companyID int64) (int64, string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.linkCalls[companyID]++
	if i.failLink != nil {
		return 0, "", i.failLink
	}
	c, ok := i.clients[companyID]
	if !ok {
		return 0, "", nil
	}
	return i.owner[companyID], c.Type, nil
}

func (i *identity) CreateClient(context.Context, app.NewClient) (*identityv1.Company, error) {
	return nil, errors.New("not in these tests")
}

func (i *identity) SetPaymentsLocked(context.Context, int64, bool) error {
	return errors.New("not in these tests")
}

// noBilling and noConnections: the finance use cases never call them.
type noBilling struct{}

var errNoPeer = errors.New("not in these tests")

func (noBilling) Companies(context.Context, []int64) (map[int64]app.CompanyBilling, error) {
	return nil, errNoPeer
}
func (noBilling) Subscriptions(context.Context, int64) ([]*billingv1.Subscription, error) {
	return nil, errNoPeer
}
func (noBilling) ChangeSize(context.Context, *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error) {
	return nil, errNoPeer
}
func (noBilling) ChangePlan(context.Context, *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error) {
	return nil, errNoPeer
}
func (noBilling) GrantAdvance(context.Context, *billingv1.GrantAdvanceRequest) (*billingv1.Subscription, error) {
	return nil, errNoPeer
}
func (noBilling) Requisites(context.Context, int64) ([]*billingv1.Requisite, error) {
	return nil, errNoPeer
}
func (noBilling) Invoices(context.Context, []int64, int32, int32) ([]*billingv1.CompanyInvoice, int64, error) {
	return nil, 0, errNoPeer
}
func (noBilling) CreatePartnerInvoice(context.Context, *billingv1.CreatePartnerInvoiceRequest) (*billingv1.PartnerInvoice, error) {
	return nil, errNoPeer
}
func (noBilling) ResolveHold(context.Context, string) (bool, int64, string, decimal.Decimal, error) {
	return false, 0, "", decimal.Zero, errNoPeer
}

type noConnections struct{}

func (noConnections) Connections(context.Context, int64) (map[int64]app.Connection, error) {
	return nil, errNoPeer
}

// clock is the service's clock, set by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

type env struct {
	svc   *app.Service
	ident *identity
	clock *clock
	db    *pgxpool.Pool
	dsn   string
}

func newEnv(t *testing.T) env {
	t.Helper()
	return envWith(t, 4, envConfig{})
}

// envConfig is the service's configuration and, when set, the billing it
// talks to.
type envConfig struct {
	app.Config
	Billing app.Billing
}

// envWith opens a database of its own with a pool of conns connections.
func envWith(t *testing.T, conns int, cfg envConfig) env {
	t.Helper()
	dsn := pgtest.NewDSN(t, migrations.FS)
	db, err := pg.Config{DSN: dsn, MaxConns: int32(conns)}.Open(context.Background())
	require.NoError(t, err)
	t.Cleanup(db.Close)
	e := env{ident: newIdentity(), clock: &clock{t: time.Date(2026, 5, 14, 9, 30, 0, 0, time.UTC)}, db: db, dsn: dsn}
	cfg.DefaultCommissions = app.DefaultCommissions()
	cfg.Now = e.clock.Now
	var billing app.Billing = noBilling{}
	if cfg.Billing != nil {
		billing = cfg.Billing
	}
	e.svc = app.New(postgres.New(db), e.ident, billing, noConnections{}, nil, cfg.Config)
	return e
}

// apiErr asserts err is the catalogue error def.
func apiErr(t *testing.T, err error, def apierr.Def) {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
	require.Equal(t, def.Status, e.Status)
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func ptr[T any](v T) *T { return &v }

// item is one item of an invoice event, as billing writes it.
type item map[string]any

// sub is a SUBSCRIPTION item whose amount is all after percent discounts.
func sub(typ string, months int32, amount string) item {
	return item{"type": "SUBSCRIPTION", "subscription_id": 1, "subscription_type": typ, "period_months": months,
		"amount": amount, "amount_after_percent_discounts": amount}
}

// waba is a WABA_DIALOGS item.
func waba(count int32, amount string) item {
	return item{"type": "WABA_DIALOGS", "count": count, "amount": amount, "amount_after_percent_discounts": amount}
}

// invoice is an invoices.status_changed event of billing.
func invoice(id string, company int64, status string, at time.Time, items ...item) app.BillingEvent {
	payload, err := json.Marshal(map[string]any{
		"invoice_id": 1, "company_id": company, "status": status, "previous_status": "new",
		"amount": "0", "payment_method": "CARD_RU", "items": items, "at": at.Format(time.RFC3339Nano),
	})
	if err != nil {
		panic(err)
	}
	return app.BillingEvent{ID: id, CompanyID: company, Type: domain.EventInvoiceStatus, Payload: payload, CreatedAt: at}
}

func paid(id string, company int64, at time.Time, items ...item) app.BillingEvent {
	return invoice(id, company, domain.InvoicePaid, at, items...)
}

// opened is a waba_dialogs.opened event of billing.
func opened(id string, company int64, at time.Time) app.BillingEvent {
	payload, err := json.Marshal(map[string]any{"company_id": company, "at": at.Format(time.RFC3339Nano)})
	if err != nil {
		panic(err)
	}
	return app.BillingEvent{ID: id, CompanyID: company, Type: domain.EventDialogOpened, Payload: payload, CreatedAt: at}
}

func (e env) ingest(t *testing.T, events ...app.BillingEvent) int {
	t.Helper()
	n, err := e.svc.IngestBillingEvents(context.Background(), events)
	require.NoError(t, err)
	return n
}

// money asserts d is an amount of at most two decimals and writes it with
// exactly two.
func money(t *testing.T, d decimal.Decimal) string {
	t.Helper()
	require.True(t, d.Equal(d.Round(2)), "%s has more than two decimals", d)
	return d.StringFixed(2)
}

// rewardLine is a reward as one comparable line.
func rewardLine(t *testing.T, r domain.Reward) string {
	t.Helper()
	kind := "-"
	if r.SubscriptionType != nil {
		require.NotNil(t, r.PeriodMonths)
		kind = fmt.Sprintf("%s/%d", *r.SubscriptionType, *r.PeriodMonths)
	} else {
		require.Nil(t, r.PeriodMonths)
	}
	return fmt.Sprintf("%s %d %s %s %s%% topups=%s spendings=%s reward=%s", r.Period, r.CompanyID, r.Type, kind,
		money(t, r.Percent), money(t, r.Topups), money(t, r.Spendings), money(t, r.Value))
}

func (e env) rewards(t *testing.T, partner int64, f domain.RewardFilter) []domain.Reward {
	t.Helper()
	list, err := e.svc.Rewards(context.Background(), partner, f)
	require.NoError(t, err)
	return list
}

func (e env) rewardLines(t *testing.T, partner int64) []string {
	t.Helper()
	var out []string
	for _, r := range e.rewards(t, partner, domain.RewardFilter{}) {
		out = append(out, rewardLine(t, r))
	}
	return out
}

func (e env) balance(t *testing.T, partner int64) string {
	t.Helper()
	b, err := e.svc.Balance(context.Background(), partner)
	require.NoError(t, err)
	return money(t, b.Balance())
}

// requisite stores a requisite of the partner, complete (bic and account)
// or not.
func (e env) requisite(t *testing.T, partner int64, complete bool) int64 {
	t.Helper()
	r := domain.Requisite{PartnerID: partner, TIN: "7707083893", KPP: ptr("773601001"), Name: "LLC Partner"}
	if complete {
		r.BIC, r.CurrentAccount = ptr("044525225"), ptr("40702810900000000001")
	}
	out, err := e.svc.CreateRequisite(context.Background(), r)
	require.NoError(t, err)
	return out.ID
}

// race runs n calls at once: gate runs first on a connection of its own,
// in a transaction holding a lock the calls need, which commits only once
// all n of them wait for a lock, so the calls really overlap.
func (e env) race(t *testing.T, n int, gate string, gateArgs []any, call func(i int) error) []error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, err = tx.Exec(ctx, gate, gateArgs...)
	require.NoError(t, err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(i)
		}()
	}
	require.Eventually(t, func() bool {
		var w int
		require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&w))
		return w == n
	}, 20*time.Second, 10*time.Millisecond, "the %d calls never all waited for the gate's lock", n)
	require.NoError(t, tx.Commit(ctx))
	wg.Wait()
	return errs
}
