package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func ptr[T any](v T) *T { return &v }

// insert stores an invoice in a transaction of its own.
func insert(t *testing.T, r *postgres.Repo, inv domain.Invoice) domain.Invoice {
	t.Helper()
	var out domain.Invoice
	require.NoError(t, r.InTx(context.Background(), func(tx app.Tx) error {
		var err error
		out, err = tx.InsertInvoice(context.Background(), inv)
		return err
	}))
	return out
}

// rich is an invoice with every part filled, its money in several scales.
func rich(company int64, q *domain.Requisite) domain.Invoice {
	old := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	percents := domain.Discounts{Period: d("5"), Quantity: d("10"), Promo: d("10"), Partner: d("12.5"), TestPeriod: d("0"),
		PartnerBalanceFlat: d("0.01")}
	return domain.Invoice{
		CompanyID:     company,
		PaymentMethod: domain.MethodCardOther,
		CardProvider:  domain.ProviderKeepz,
		PeriodMonths:  3,
		PromoCode:     ptr("PARTNER10"),
		Items: []domain.InvoiceItem{{
			Kind: domain.ItemSubscription, SubscriptionID: 41, SubscriptionType: "CONNECTION_WHATSAPP",
			OldSize: 2, NewSize: 3, OldPlan: domain.PlanStart, NewPlan: domain.PlanStandard, OldPaidUntil: &old,
			TopUp:   domain.Amount{Amount: d("17014.50"), Discount: d("895.50"), Discounts: percents},
			Upgrade: domain.Amount{Amount: d("630.16"), Discount: d("33.17"), Discounts: percents},
		}, {
			Kind: domain.ItemWabaDialogs, Count: 7, Price: d("5.00"),
			TopUp: domain.Amount{Amount: d("35.00"), Discount: d("0"), Discounts: domain.Discounts{}},
		}},
		PartnerDiscountPercent: d("0"),
		Requisite:              q,
		Charge:                 &domain.Charge{Currency: "USD", Amount: d("191.49"), Rate: d("92.3264"), RateDate: "2031-05-06"},
		Receipt: []domain.ReceiptLine{
			{Name: "Subscription CONNECTION_WHATSAPP, plan STANDARD, 3 connections, 3 months", Quantity: 1, Price: d("17014.50")},
			{Name: "Upgrade of subscription CONNECTION_WHATSAPP to plan STANDARD, 3 connections", Quantity: 1, Price: d("630.16")},
			{Name: "Business dialogs (WABA)", Quantity: 7, Price: d("5.00")},
		},
		Amount: d("17679.66"),
	}
}

// sameJSON compares as JSON: the document is the JSON of the invoice, so
// every field it keeps compares by value (17014.50 is 17014.5).
func sameJSON(t *testing.T, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

// TestInvoiceRoundTrip: an invoice reads back as stored: the computed
// parts from the JSON document with decimals exact, the amount from its
// numeric column, the state from the columns.
func TestInvoiceRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	q, err := r.CreateRequisite(ctx, domain.Requisite{CompanyID: 1, TIN: "1234567890", KPP: ptr("123456789"), Name: "OOO Test"})
	require.NoError(t, err)

	in := rich(1, &q)
	stored := insert(t, r, in)
	require.NotZero(t, stored.ID)
	require.Equal(t, int64(1), stored.CompanyID)
	require.Equal(t, domain.StatusNew, stored.Status)
	require.Nil(t, stored.PaymentURL)
	require.Equal(t, time.UTC, stored.CreatedAt.Location())
	require.Equal(t, stored.CreatedAt.Add(domain.InvoiceLifetime), stored.Lifetime)
	require.True(t, in.Amount.Equal(stored.Amount))
	require.Equal(t, "17679.66", stored.Amount.StringFixed(2))
	sameJSON(t, in, stored)

	// Every decimal, exactly.
	for i, it := range in.Items {
		g := stored.Items[i]
		for _, p := range [][2]decimal.Decimal{
			{it.TopUp.Amount, g.TopUp.Amount}, {it.TopUp.Discount, g.TopUp.Discount},
			{it.Upgrade.Amount, g.Upgrade.Amount}, {it.Upgrade.Discount, g.Upgrade.Discount},
			{it.Price, g.Price},
			{it.TopUp.Discounts.Partner, g.TopUp.Discounts.Partner},
			{it.TopUp.Discounts.PartnerBalanceFlat, g.TopUp.Discounts.PartnerBalanceFlat},
		} {
			require.True(t, p[0].Equal(p[1]), "item %d: %s stored as %s", i, p[0], p[1])
		}
	}
	require.True(t, in.Charge.Rate.Equal(stored.Charge.Rate))
	require.True(t, in.Charge.Amount.Equal(stored.Charge.Amount))
	require.Equal(t, *in.Items[0].OldPaidUntil, *stored.Items[0].OldPaidUntil)
	for i, l := range in.Receipt {
		require.Equal(t, l.Name, stored.Receipt[i].Name)
		require.Equal(t, l.Quantity, stored.Receipt[i].Quantity)
		require.True(t, l.Price.Equal(stored.Receipt[i].Price))
	}
	require.Equal(t, *in.PromoCode, *stored.PromoCode)
	require.Equal(t, q.ID, stored.Requisite.ID)
	require.Equal(t, q.TIN, stored.Requisite.TIN)
	require.Equal(t, q.KPP, stored.Requisite.KPP)
	require.Equal(t, q.Name, stored.Requisite.Name)

	got, err := r.Invoice(ctx, 1, stored.ID)
	require.NoError(t, err)
	require.Equal(t, stored, got)

	// Money in the document is decimal strings; amount is numeric.
	var amountType, amount, topUpType, topUp, rateType string
	require.NoError(t, db.QueryRow(ctx, `SELECT pg_typeof(amount)::text, amount::text,
			jsonb_typeof(document->'items'->0->'top_up'->'Amount'), document->'items'->0->'top_up'->>'Amount',
			jsonb_typeof(document->'charge'->'rate')
		FROM invoices WHERE id = $1`, stored.ID).Scan(&amountType, &amount, &topUpType, &topUp, &rateType))
	require.Equal(t, "numeric", amountType)
	require.Equal(t, "17679.66", amount)
	require.Equal(t, "string", topUpType)
	require.True(t, d("17014.50").Equal(d(topUp)), topUp)
	require.Equal(t, "string", rateType)
	var method, currency string
	var card *string
	require.NoError(t, db.QueryRow(ctx, `SELECT payment_method, card_provider, currency FROM invoices WHERE id = $1`, stored.ID).
		Scan(&method, &card, &currency))
	require.Equal(t, []any{"CARD_OTHER", "KEEPZ", "RUB"}, []any{method, *card, currency})

	// Another company's invoice is not there, also for a lock.
	_, err = r.Invoice(ctx, 2, stored.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = r.Invoice(ctx, 1, stored.ID+1000)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.NoError(t, r.InTx(ctx, func(tx app.Tx) error {
		_, err := tx.LockInvoice(ctx, ptr(int64(2)), stored.ID)
		require.ErrorIs(t, err, domain.ErrNotFound)
		locked, err := tx.LockInvoice(ctx, ptr(int64(1)), stored.ID)
		require.NoError(t, err)
		require.Equal(t, stored, locked)
		locked, err = tx.LockInvoice(ctx, nil, stored.ID)
		require.NoError(t, err)
		require.Equal(t, stored, locked)
		return nil
	}))

	// Created at a given time (the service's clock): lifetime from there.
	when := time.Date(2031, 2, 3, 4, 5, 6, 789012000, time.UTC)
	dated := rich(1, nil)
	dated.CreatedAt = when
	dated = insert(t, r, dated)
	require.Equal(t, when, dated.CreatedAt)
	require.Equal(t, time.Date(2031, 2, 6, 4, 5, 6, 789012000, time.UTC), dated.Lifetime)

	// Small amounts keep their kopecks; no card provider is NULL.
	small := insert(t, r, domain.Invoice{CompanyID: 1, PaymentMethod: domain.MethodCardRU, PeriodMonths: 1,
		Items: []domain.InvoiceItem{}, Receipt: []domain.ReceiptLine{}, Amount: d("0.10")})
	require.Equal(t, "0.10", small.Amount.StringFixed(2))
	require.NoError(t, db.QueryRow(ctx, `SELECT amount::text, card_provider FROM invoices WHERE id = $1`, small.ID).Scan(&amount, &card))
	require.Equal(t, "0.10", amount)
	require.Nil(t, card)
}

// TestInvoiceStatusAndURL: the status moves from new only, with closed_at;
// the payment link is stored; provider notices are recorded once.
func TestInvoiceStatusAndURL(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	inv := insert(t, r, rich(1, nil))

	require.NoError(t, r.InTx(ctx, func(tx app.Tx) error {
		return tx.SetPaymentURL(ctx, inv.ID, "http://x/pay")
	}))
	got, err := r.Invoice(ctx, 1, inv.ID)
	require.NoError(t, err)
	require.Equal(t, "http://x/pay", *got.PaymentURL)

	require.NoError(t, r.InTx(ctx, func(tx app.Tx) error {
		paid, err := tx.SetInvoiceStatus(ctx, inv.ID, domain.StatusPaid)
		require.NoError(t, err)
		require.Equal(t, domain.StatusPaid, paid.Status)
		// Not new any more: nothing to move.
		_, err = tx.SetInvoiceStatus(ctx, inv.ID, domain.StatusExpired)
		require.ErrorIs(t, err, domain.ErrNotFound)
		return nil
	}))
	var status string
	var closed *time.Time
	require.NoError(t, db.QueryRow(ctx, `SELECT status, closed_at FROM invoices WHERE id = $1`, inv.ID).Scan(&status, &closed))
	require.Equal(t, "paid", status)
	require.NotNil(t, closed)

	// A failed transaction leaves nothing.
	other := insert(t, r, rich(1, nil))
	err = r.InTx(ctx, func(tx app.Tx) error {
		if _, err := tx.SetInvoiceStatus(ctx, other.ID, domain.StatusPaid); err != nil {
			return err
		}
		return domain.ErrNotFound
	})
	require.ErrorIs(t, err, domain.ErrNotFound)
	got, err = r.Invoice(ctx, 1, other.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusNew, got.Status)

	p := app.ProviderPayment{InvoiceID: inv.ID, Provider: "ROBOKASSA", Amount: d("17679.66"), Applied: true, Fields: map[string]string{"InvId": "1"}}
	for i, want := range []bool{true, false} {
		require.NoError(t, r.InTx(ctx, func(tx app.Tx) error {
			fresh, err := tx.RecordProviderPayment(ctx, p)
			require.NoError(t, err)
			require.Equal(t, want, fresh, i)
			return nil
		}))
		p.Applied = false
	}
	var applied bool
	require.NoError(t, db.QueryRow(ctx, `SELECT applied FROM provider_payments WHERE invoice_id = $1`, inv.ID).Scan(&applied))
	require.True(t, applied, "the first notice's row stays")
}

// TestListInvoices: newest first, paged, with the count of all of the
// company's; due invoices are new ones past their lifetime.
func TestListInvoices(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	var ids []int64
	for i := range 25 {
		inv := insert(t, r, rich(1, nil))
		ids = append(ids, inv.ID)
		if i%5 == 0 {
			insert(t, r, rich(2, nil))
		}
	}
	page, n, err := r.Invoices(ctx, []int64{1}, 10, 0)
	require.NoError(t, err)
	require.Equal(t, int64(25), n)
	require.Len(t, page, 10)
	for i, inv := range page {
		require.Equal(t, ids[24-i], inv.ID, "newest first")
		require.Equal(t, int64(1), inv.CompanyID)
	}
	page, n, err = r.Invoices(ctx, []int64{1}, 10, 20)
	require.NoError(t, err)
	require.Equal(t, int64(25), n)
	require.Len(t, page, 5)
	require.Equal(t, ids[4], page[0].ID)
	require.Equal(t, ids[0], page[4].ID)
	page, n, err = r.Invoices(ctx, []int64{1}, 10, 30)
	require.NoError(t, err)
	require.Equal(t, int64(25), n)
	require.Empty(t, page)
	page, n, err = r.Invoices(ctx, []int64{2}, 100, 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	require.Len(t, page, 5)
	page, n, err = r.Invoices(ctx, []int64{3}, 100, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, page)

	first, err := r.Invoice(ctx, 1, ids[0])
	require.NoError(t, err)
	due, err := r.DueInvoices(ctx, first.Lifetime.Add(-time.Microsecond), 100)
	require.NoError(t, err)
	require.Empty(t, due)
	due, err = r.DueInvoices(ctx, first.Lifetime, 100)
	require.NoError(t, err)
	require.Contains(t, due, ids[0])
	require.NoError(t, r.InTx(ctx, func(tx app.Tx) error {
		_, err := tx.SetInvoiceStatus(ctx, ids[0], domain.StatusPaid)
		return err
	}))
	due, err = r.DueInvoices(ctx, first.Lifetime.Add(time.Hour), 100)
	require.NoError(t, err)
	require.Len(t, due, 29, "every new invoice, not the paid one")
	require.NotContains(t, due, ids[0])
	due, err = r.DueInvoices(ctx, first.Lifetime.Add(time.Hour), 3)
	require.NoError(t, err)
	require.Len(t, due, 3)
}

// TestRequisitesRoundTrip: requisites read back as made, oldest first, one
// company's only.
func TestRequisitesRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	var made []domain.Requisite
	for _, q := range []domain.Requisite{
		{CompanyID: 1, TIN: "1234567890", KPP: ptr("123456789"), Name: "OOO Test"},
		{CompanyID: 1, TIN: "123456789012", Name: "IP Ivanov — «кавычки»"},
		{CompanyID: 1, TIN: "0987654321", KPP: ptr("000000001"), Name: "A"},
	} {
		got, err := r.CreateRequisite(ctx, q)
		require.NoError(t, err)
		require.NotZero(t, got.ID)
		q.ID = got.ID
		require.Equal(t, q, got)
		made = append(made, got)
	}
	otherCo, err := r.CreateRequisite(ctx, domain.Requisite{CompanyID: 2, TIN: "1111111111", KPP: ptr("222222222"), Name: "Other"})
	require.NoError(t, err)

	list, err := r.Requisites(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, made, list)
	require.Nil(t, list[1].KPP)
	for _, q := range made {
		got, err := r.Requisite(ctx, 1, q.ID)
		require.NoError(t, err)
		require.Equal(t, q, got)
	}
	_, err = r.Requisite(ctx, 1, otherCo.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = r.Requisite(ctx, 2, made[0].ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	empty, err := r.Requisites(ctx, 3)
	require.NoError(t, err)
	require.Empty(t, empty)

	// The table refuses what the API's rules refuse.
	for _, bad := range []domain.Requisite{
		{CompanyID: 1, TIN: "123", Name: "x"},
		{CompanyID: 1, TIN: "1234567890", KPP: ptr("12345"), Name: "x"},
	} {
		_, err := r.CreateRequisite(ctx, bad)
		require.Error(t, err, bad)
	}
}
