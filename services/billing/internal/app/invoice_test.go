package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	pg "switchboard.dev/pkg/postgres"
	"switchboard.dev/services/billing/internal/adapters/payments"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/adapters/rates"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

const (
	day     = 24 * time.Hour
	bot     = domain.SubscriptionType("CONNECTION_TELEGRAM_BOT")
	keepz   = domain.SubscriptionType("CONNECTION_KEEPZ")
	vkGroup = domain.SubscriptionType("CONNECTION_VK_GROUP")
)

// benv is an env whose Service is configured as billing runs in test
// mode: the sandbox's payment links, the sandbox's dollar rate (90 unless a
// company sets its own), and per-company settings. Its pool has room for
// the races (raceEnv.race).
type benv struct {
	env
	repo     *postgres.Repo
	settings *apptest.Settings
	dsn      string
}

func newBillingEnv(t *testing.T) benv {
	t.Helper()
	dsn := pgtest.NewDSN(t, migrations.FS)
	db, err := pg.Config{DSN: dsn, MaxConns: 24}.Open(context.Background())
	require.NoError(t, err)
	t.Cleanup(db.Close)
	b := benv{env: envOn(t, db), repo: postgres.New(db), settings: apptest.NewSettings(), dsn: dsn}
	b.svc = b.service()
	return b
}

// service is another Service on the same database, fakes and clock: a
// second replica of billing.
func (b benv) service() *app.Service {
	return app.New(b.repo, b.conns, b.companies, b.config())
}

// config is the configuration of service.
func (b benv) config() app.Config {
	return app.Config{
		TestPeriod: testPeriod,
		Now:        b.clock.Now,
		Payments:   payments.Sandbox{PublicURL: "http://x"},
		Rates:      rates.Sandbox{Store: b.repo, Default: decimal.NewFromInt(90), Now: b.clock.Now},
		Settings:   b.settings,
	}
}

func (b benv) racer() raceEnv { return raceEnv{env: b.env, dsn: b.dsn} }

// subscription makes the company's (default) subscription of typ with the
// plan, size and paid_until given, out of its test period, and answers it.
func (b benv) subscription(t *testing.T, company int64, typ domain.SubscriptionType, plan domain.Plan, size int32, paid *time.Time) domain.Subscription {
	t.Helper()
	return b.adjust(t, company, b.ensure(t, company, typ), plan, size, paid)
}

// adjust sets plan, size and paid_until as the operator does, and ends the
// test period.
func (b benv) adjust(t *testing.T, company, id int64, plan domain.Plan, size int32, paid *time.Time) domain.Subscription {
	t.Helper()
	a := domain.Adjustment{Plan: &plan, MaxSize: &size, ClearTestUntil: true}
	if paid == nil {
		a.ClearPaidUntil = true
	} else {
		a.PaidUntil = paid
	}
	v, err := b.svc.AdjustSubscription(context.Background(), app.Adjust{CompanyID: company, SubscriptionID: id, Adjustment: a})
	require.NoError(t, err)
	return v.Subscription
}

// stored reads a subscription from the database.
func (b benv) stored(t *testing.T, company, id int64) domain.Subscription {
	t.Helper()
	s, err := b.repo.Subscription(context.Background(), company, id)
	require.NoError(t, err)
	return s
}

func subItem(id int64, plan domain.Plan, size int32) app.ItemRequest {
	return app.ItemRequest{Kind: domain.ItemSubscription, ID: &id, NewPlan: &plan, NewSize: &size}
}

func dialogsItem(count int32) app.ItemRequest {
	return app.ItemRequest{Kind: domain.ItemWabaDialogs, Count: &count}
}

// card is a CARD_RU invoice request, stored (not a preview).
func card(company int64, months int32, items ...app.ItemRequest) app.InvoiceRequest {
	return app.InvoiceRequest{CompanyID: company, OfferAccepted: true, PaymentMethod: domain.MethodCardRU,
		PeriodMonths: &months, Items: items}
}

// invoice stores an invoice.
func (b benv) invoice(t *testing.T, r app.InvoiceRequest) domain.Invoice {
	t.Helper()
	r.Preview = false
	inv, err := b.svc.CreateInvoice(context.Background(), r)
	require.NoError(t, err)
	return inv
}

// event is one row of billing's outbox.
type event struct {
	Topic     string
	CompanyID int64
	Type      string
	Payload   map[string]any
}

// events are the outbox rows about an invoice, in the order written.
func (b benv) events(t *testing.T, invoiceID int64) []event {
	t.Helper()
	return b.queryEvents(t, `WHERE (payload->>'invoice_id')::bigint = $1`, invoiceID)
}

func (b benv) allEvents(t *testing.T) []event {
	t.Helper()
	return b.queryEvents(t, ``)
}

func (b benv) queryEvents(t *testing.T, where string, args ...any) []event {
	t.Helper()
	rows, err := b.db.Query(context.Background(), `SELECT topic, company_id, event_type, payload FROM outbox `+where+` ORDER BY seq`, args...)
	require.NoError(t, err)
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		var payload []byte
		require.NoError(t, rows.Scan(&e.Topic, &e.CompanyID, &e.Type, &payload))
		require.NoError(t, json.Unmarshal(payload, &e.Payload))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// transitions are the statuses an invoice's events tell, each as
// "previous>status" ("-" for none).
func (b benv) transitions(t *testing.T, invoiceID int64) []string {
	t.Helper()
	var out []string
	for _, e := range b.events(t, invoiceID) {
		require.Equal(t, app.EventsTopic, e.Topic)
		require.Equal(t, app.EventInvoiceStatus, e.Type)
		prev := "-"
		if p, ok := e.Payload["previous_status"].(string); ok {
			prev = p
		}
		out = append(out, fmt.Sprintf("%s>%s", prev, e.Payload["status"]))
	}
	return out
}

func (b benv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func (b benv) invoiceRows(t *testing.T) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM invoices`)
}

// status is the invoice's stored status.
func (b benv) status(t *testing.T, id int64) string {
	t.Helper()
	var s string
	require.NoError(t, b.db.QueryRow(context.Background(), `SELECT status FROM invoices WHERE id = $1`, id).Scan(&s))
	return s
}

// jsonEq compares values as their JSON: decimals by their digits, not by
// how they are held.
func jsonEq(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g), msg...)
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// decEq asserts two amounts are the same number.
func decEq(t *testing.T, want string, got decimal.Decimal, msg ...any) {
	t.Helper()
	require.True(t, dec(want).Equal(got), "want %s, got %s %v", want, got, fmt.Sprint(msg...))
}

// bought is how long remaining paid at oldMonthly lasts at newMonthly
// (billing.md "Plan and size changes": the value left spread over the new
// price): remaining × old / new, rounded half up to the nanosecond and cut
// to whole microseconds. Computed with integers, apart from the service's
// decimals.
func bought(remaining time.Duration, oldMonthly, newMonthly int64) time.Duration {
	num := new(big.Int).Mul(big.NewInt(int64(remaining)), big.NewInt(oldMonthly))
	den := big.NewInt(newMonthly)
	// round half up: (2 num + den) / (2 den)
	ns := new(big.Int).Div(new(big.Int).Add(new(big.Int).Lsh(num, 1), den), new(big.Int).Lsh(den, 1))
	d := time.Duration(ns.Int64())
	return d.Truncate(time.Microsecond)
}

func at(t time.Time) *time.Time { return &t }

// TestCreateInvoicePreviewMatchesStored: a preview computes what the same
// request stores, and stores nothing; the stored invoice is new, lives
// exactly 72 hours, and its status is one event in the outbox.
func TestCreateInvoicePreviewMatchesStored(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 2, at(now.Add(10*day)))

	req := card(1, 3, subItem(sub.ID, domain.PlanStandard, 3), dialogsItem(7))
	req.Preview = true
	preview, err := b.svc.CreateInvoice(ctx, req)
	require.NoError(t, err)
	require.Zero(t, preview.ID)
	require.Empty(t, preview.Status)
	require.Nil(t, preview.PaymentURL)
	require.True(t, preview.CreatedAt.IsZero())
	require.True(t, preview.Lifetime.IsZero())
	require.Zero(t, b.invoiceRows(t), "a preview stores nothing")
	require.Empty(t, b.allEvents(t), "a preview writes no event")

	// The amounts, by billing.md: top-up 3 slots × 1,990 × 3 months =
	// 17,910 less 5 % (3 months) = 17,014.50; upgrade: one slot more,
	// 1,990 a month for the 10 days left = 663.33, less 5 % (33.17) =
	// 630.16; 7 dialogs at 5.00 = 35.00.
	require.Len(t, preview.Items, 2)
	it := preview.Items[0]
	require.Equal(t, domain.ItemSubscription, it.Kind)
	require.Equal(t, sub.ID, it.SubscriptionID)
	require.Equal(t, int32(2), it.OldSize)
	require.Equal(t, int32(3), it.NewSize)
	require.True(t, sub.PaidUntil.Equal(*it.OldPaidUntil))
	decEq(t, "17014.50", it.TopUp.Amount)
	decEq(t, "895.50", it.TopUp.Discount)
	decEq(t, "5", it.TopUp.Discounts.Period)
	decEq(t, "0", it.TopUp.Discounts.Quantity)
	decEq(t, "630.16", it.Upgrade.Amount)
	decEq(t, "33.17", it.Upgrade.Discount)
	decEq(t, "35.00", preview.Items[1].TopUp.Amount)
	require.Equal(t, int32(7), preview.Items[1].Count)
	decEq(t, "5.00", preview.Items[1].Price)
	decEq(t, "17679.66", preview.Amount)
	require.Len(t, preview.Receipt, 3)
	decEq(t, "17679.66", domain.ReceiptTotal(preview.Receipt))

	// Asking again gives the same preview, and still stores nothing.
	again, err := b.svc.CreateInvoice(ctx, req)
	require.NoError(t, err)
	jsonEq(t, preview, again)
	require.Zero(t, b.invoiceRows(t))

	req.Preview = false
	stored, err := b.svc.CreateInvoice(ctx, req)
	require.NoError(t, err)
	require.NotZero(t, stored.ID)
	require.Equal(t, domain.StatusNew, stored.Status)
	require.Equal(t, int64(1), stored.CompanyID)
	jsonEq(t, preview.Items, stored.Items, "stored items are the preview's")
	jsonEq(t, preview.Receipt, stored.Receipt, "stored receipt is the preview's")
	require.True(t, preview.Amount.Equal(stored.Amount), "%s vs %s", preview.Amount, stored.Amount)
	require.Equal(t, now, stored.CreatedAt, "created by the service's clock")
	require.Equal(t, stored.CreatedAt.Add(72*time.Hour), stored.Lifetime, "lifetime = created_at + 3 days exactly")
	require.NotNil(t, stored.PaymentURL)
	require.Equal(t, fmt.Sprintf("http://x/sandbox/v1/invoices/%d/pay", stored.ID), *stored.PaymentURL)
	require.Equal(t, 1, b.invoiceRows(t))

	// The row: state in columns, money exact.
	var status, method, currency, amount string
	var url *string
	var closed *time.Time
	require.NoError(t, b.db.QueryRow(ctx, `SELECT status, payment_method, currency, amount::text, payment_url, closed_at
		FROM invoices WHERE id = $1`, stored.ID).Scan(&status, &method, &currency, &amount, &url, &closed))
	require.Equal(t, []any{"new", "CARD_RU", "RUB", "17679.66"}, []any{status, method, currency, amount})
	require.Equal(t, stored.PaymentURL, url)
	require.Nil(t, closed)

	// One event: status new, no previous status.
	events := b.allEvents(t)
	require.Len(t, events, 1)
	e := events[0]
	require.Equal(t, app.EventsTopic, e.Topic)
	require.Equal(t, int64(1), e.CompanyID)
	require.Equal(t, app.EventInvoiceStatus, e.Type)
	require.Equal(t, "new", e.Payload["status"])
	require.Nil(t, e.Payload["previous_status"])
	require.Contains(t, e.Payload, "previous_status")
	require.Equal(t, float64(stored.ID), e.Payload["invoice_id"])
	require.Equal(t, float64(1), e.Payload["company_id"])
	require.Equal(t, "17679.66", e.Payload["amount"])
	require.Equal(t, "CARD_RU", e.Payload["payment_method"])
	items := e.Payload["items"].([]any)
	require.Len(t, items, 2)
	require.Equal(t, map[string]any{"type": "SUBSCRIPTION", "subscription_id": float64(sub.ID),
		"subscription_type": string(whatsapp), "period_months": float64(3), "amount": "17644.66",
		"amount_after_percent_discounts": "17644.66"}, items[0])
	require.Equal(t, map[string]any{"type": "WABA_DIALOGS", "count": float64(7), "amount": "35",
		"amount_after_percent_discounts": "35"}, items[1])

	// Read back, it is what CreateInvoice answered.
	got, err := b.svc.GetInvoice(ctx, 1, stored.ID)
	require.NoError(t, err)
	jsonEq(t, stored, got)
	require.Equal(t, stored.Status, got.Status)
	require.Equal(t, stored.Lifetime, got.Lifetime)
	require.Equal(t, stored.CreatedAt, got.CreatedAt)
	require.Equal(t, stored.PaymentURL, got.PaymentURL)
	require.True(t, stored.Amount.Equal(got.Amount))
	_, err = b.svc.GetInvoice(ctx, 2, stored.ID)
	apiErr(t, err, apierr.InvoiceNotFound)

	// Nothing about the subscription changed.
	require.Equal(t, sub, b.stored(t, 1, sub.ID))

	// Previews are never listed.
	list, n, err := b.svc.ListInvoices(ctx, 1, 20, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Len(t, list, 1)
	require.Equal(t, stored.ID, list[0].ID)
}

// TestZeroAmountInvoiceIsPaidAtOnce: FREE for a bot costs nothing, so the
// stored invoice is paid at once: two events, no payment link, and the
// subscription is FREE without a paid period and without a real payment.
func TestZeroAmountInvoiceIsPaidAtOnce(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	id := b.ensure(t, 2, bot) // START 1, in its test period
	before := b.stored(t, 2, id)

	inv := b.invoice(t, card(2, 1, subItem(id, domain.PlanFree, 1)))
	require.Equal(t, domain.StatusPaid, inv.Status)
	require.Nil(t, inv.PaymentURL)
	require.True(t, inv.Amount.IsZero())
	require.Empty(t, inv.Receipt, "nothing to pay, no receipt line")
	require.Equal(t, inv.CreatedAt.Add(72*time.Hour), inv.Lifetime)

	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
	require.Len(t, b.allEvents(t), 2)
	var url *string
	var closed *time.Time
	require.NoError(t, b.db.QueryRow(ctx, `SELECT payment_url, closed_at FROM invoices WHERE id = $1`, inv.ID).Scan(&url, &closed))
	require.Nil(t, url)
	require.NotNil(t, closed)

	after := b.stored(t, 2, id)
	require.Equal(t, domain.PlanFree, after.Plan)
	require.Equal(t, int32(1), after.MaxSize)
	require.Nil(t, after.PaidUntil, "FREE has no paid period")
	require.False(t, after.HasPayment, "a free invoice is no payment")
	require.Equal(t, before.TestUntil, after.TestUntil)

	got, err := b.svc.GetInvoice(ctx, 2, inv.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusPaid, got.Status)
	require.Nil(t, got.PaymentURL)

	// Paid is final.
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	apiErr(t, err, apierr.InvoiceNotPayable)
}

// TestInvoiceCompanySettingsAndKeepz: a locked company gets 22018, one
// paying in dollars 18003, previews included, and nothing is stored; a
// KEEPZ invoice is charged in dollars at the company's sandbox rate.
func TestInvoiceCompanySettingsAndKeepz(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 3, whatsapp, domain.PlanStandard, 1, nil)
	req := card(3, 1, subItem(sub.ID, domain.PlanStandard, 1))

	for _, preview := range []bool{true, false} {
		req.Preview = preview
		b.settings.Set(3, "RUB", true)
		_, err := b.svc.CreateInvoice(ctx, req)
		apiErr(t, err, apierr.SubscriptionPaymentsLocked)
		b.settings.Set(3, "USD", false)
		_, err = b.svc.CreateInvoice(ctx, req)
		apiErr(t, err, apierr.InvoiceProviderError)
		b.settings.Set(3, "USD", true)
		_, err = b.svc.CreateInvoice(ctx, req)
		apiErr(t, err, apierr.SubscriptionPaymentsLocked) // 22018 before 18003
	}
	require.Zero(t, b.invoiceRows(t))
	b.settings.Set(3, "RUB", false)

	k := req
	k.PaymentMethod, k.CardProvider = domain.MethodCardOther, domain.ProviderKeepz
	k.Preview = true
	_, err := b.svc.CreateInvoice(ctx, k)
	apiErr(t, err, apierr.InvoiceProviderError) // no keepz connection

	conn := b.conns.Add(3, keepz, 0)
	inv, err := b.svc.CreateInvoice(ctx, k)
	require.NoError(t, err)
	decEq(t, "1990", inv.Amount)
	require.NotNil(t, inv.Charge)
	require.Equal(t, "USD", inv.Charge.Currency)
	decEq(t, "90", inv.Charge.Rate)
	decEq(t, "22.11", inv.Charge.Amount) // 1,990 / 90 = 22.111…
	require.Equal(t, b.clock.Now().In(rates.Moscow).Format(time.DateOnly), inv.Charge.RateDate)

	_, err = b.svc.SetSandboxRate(ctx, conn, ptr(dec("92.5")))
	require.NoError(t, err)
	k.Preview = false
	stored, err := b.svc.CreateInvoice(ctx, k)
	require.NoError(t, err)
	decEq(t, "92.5", stored.Charge.Rate)
	decEq(t, "21.51", stored.Charge.Amount) // 1,990 / 92.5 = 21.5135…
	got, err := b.svc.GetInvoice(ctx, 3, stored.ID)
	require.NoError(t, err)
	jsonEq(t, stored.Charge, got.Charge)

	_, err = b.svc.SetSandboxRate(ctx, conn, nil)
	require.NoError(t, err)
	_, err = b.svc.CreateInvoice(ctx, k)
	apiErr(t, err, apierr.InvoiceProviderError) // rate unavailable
	require.Equal(t, 1, b.invoiceRows(t))
}

// TestBankTransferInvoice: a bank transfer names a requisite of the
// company, which the invoice keeps; it has no payment link.
func TestBankTransferInvoice(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	q, err := b.svc.CreateRequisite(ctx, domain.Requisite{CompanyID: 4, TIN: "1234567890", KPP: ptr("123456789"), Name: "OOO Test"})
	require.NoError(t, err)
	other, err := b.svc.CreateRequisite(ctx, domain.Requisite{CompanyID: 5, TIN: "123456789012", Name: "IP Other"})
	require.NoError(t, err)

	req := app.InvoiceRequest{CompanyID: 4, OfferAccepted: true, PaymentMethod: domain.MethodBankTransfer,
		RequisiteID: &other.ID, Items: []app.ItemRequest{dialogsItem(10)}}
	_, err = b.svc.CreateInvoice(ctx, req)
	apiErr(t, err, apierr.RequisiteNotFound)

	req.RequisiteID = &q.ID
	inv := b.invoice(t, req)
	require.Equal(t, domain.StatusNew, inv.Status)
	require.Nil(t, inv.PaymentURL, "a bank transfer has no payment link")
	require.NotNil(t, inv.Requisite)
	require.Equal(t, q.ID, inv.Requisite.ID)
	require.Equal(t, q.TIN, inv.Requisite.TIN)
	require.Equal(t, q.KPP, inv.Requisite.KPP)
	require.Equal(t, q.Name, inv.Requisite.Name)
	decEq(t, "50", inv.Amount)
	require.Equal(t, int32(1), inv.PeriodMonths, "period_months defaults to 1")
}

// TestInvoiceInTestPeriod: a subscription in its test period gets 10 %
// off and no upgrade (no paid period); paying ends the test period's
// discount, not test_until.
func TestInvoiceInTestPeriod(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	id := b.ensure(t, 1, whatsapp) // START 1, in its test period
	req := card(1, 12, subItem(id, domain.PlanStandard, 5))
	req.Preview = true
	inv, err := b.svc.CreateInvoice(ctx, req)
	require.NoError(t, err)
	it := inv.Items[0]
	// 5 × 1,990 × 12 = 119,400; 20 % (12 months) + 5 % (size 5) + 10 %
	// (test period) = 35 % = 41,790.
	decEq(t, "10", it.TopUp.Discounts.TestPeriod)
	decEq(t, "20", it.TopUp.Discounts.Period)
	decEq(t, "5", it.TopUp.Discounts.Quantity)
	decEq(t, "41790", it.TopUp.Discount)
	decEq(t, "77610", it.TopUp.Amount)
	decEq(t, "0", it.Upgrade.Amount)
	decEq(t, "10", it.Upgrade.Discounts.TestPeriod, "a zero amount still shows its discounts")
	require.Nil(t, it.OldPaidUntil)
	require.Len(t, inv.Receipt, 1)

	before := b.stored(t, 1, id)
	stored := b.invoice(t, req)
	_, err = b.svc.PayInvoice(ctx, stored.ID)
	require.NoError(t, err)
	got := b.stored(t, 1, id)
	require.Equal(t, domain.AddMonths(b.clock.Now(), 12), *got.PaidUntil, "from now: there was no paid period")
	require.Equal(t, domain.PlanStandard, got.Plan)
	require.Equal(t, int32(5), got.MaxSize)
	require.Equal(t, before.TestUntil, got.TestUntil)
	require.False(t, got.InTest(b.clock.Now()))
}

// TestInvoiceErrorOrder: the request rules (422, FREE only for bots among
// them) come before 22000, then 22020, 22019, 22018, 18003 (billing.md).
func TestInvoiceErrorOrder(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	wa := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	b.conns.Add(1, whatsapp, wa.ID)
	b.conns.Add(1, whatsapp, wa.ID) // holds 2
	other, err := b.svc.CreateRequisite(ctx, domain.Requisite{CompanyID: 2, TIN: "123456789012", Name: "Other"})
	require.NoError(t, err)
	b.settings.Set(1, "USD", true)

	bank := func(items ...app.ItemRequest) app.InvoiceRequest {
		return app.InvoiceRequest{CompanyID: 1, Preview: true, PaymentMethod: domain.MethodBankTransfer, RequisiteID: &other.ID, Items: items}
	}
	// FREE for whatsapp (422) before an unknown subscription (22000).
	_, err = b.svc.CreateInvoice(ctx, bank(subItem(wa.ID, domain.PlanFree, 2), subItem(999999, domain.PlanStandard, 1)))
	loc, _, _ := fieldErr(t, err)
	require.Equal(t, `["body","items",0,"new_subscription_plan"]`, loc)
	_, err = b.svc.CreateInvoice(ctx, bank(subItem(999999, domain.PlanStandard, 1), subItem(wa.ID, domain.PlanFree, 2)))
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","items",1,"new_subscription_plan"]`, loc)
	// 22000 before 22020.
	_, err = b.svc.CreateInvoice(ctx, bank(subItem(999999, domain.PlanStandard, 1)))
	apiErr(t, err, apierr.SubscriptionNotFound)
	// 22020 before 22019.
	_, err = b.svc.CreateInvoice(ctx, bank(subItem(wa.ID, domain.PlanStandard, 1)))
	apiErr(t, err, apierr.RequisiteNotFound)
	// 22019 before 22018.
	own, err := b.svc.CreateRequisite(ctx, domain.Requisite{CompanyID: 1, TIN: "123456789012", Name: "Own"})
	require.NoError(t, err)
	req := bank(subItem(wa.ID, domain.PlanStandard, 1))
	req.RequisiteID = &own.ID
	_, err = b.svc.CreateInvoice(ctx, req)
	apiErr(t, err, apierr.SubscriptionSizeBelowCurrent)
	// 22018 before 18003.
	req.Items = []app.ItemRequest{subItem(wa.ID, domain.PlanStandard, 2)}
	_, err = b.svc.CreateInvoice(ctx, req)
	apiErr(t, err, apierr.SubscriptionPaymentsLocked)
	b.settings.Set(1, "USD", false)
	_, err = b.svc.CreateInvoice(ctx, req)
	apiErr(t, err, apierr.InvoiceProviderError)
	b.settings.Set(1, "RUB", false)
	_, err = b.svc.CreateInvoice(ctx, req)
	require.NoError(t, err)
}
