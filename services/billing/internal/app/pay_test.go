package app_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/shopspring/decimal"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// TestPayInvoiceAppliesTheInvoice: paying moves each subscription's
// paid_until by the months from max(now, paid_until) in calendar months,
// makes plan and size the invoiced ones, counts as a real payment, adds the
// dialogs, and is one paid event after new.
func TestPayInvoiceAppliesTheInvoice(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := time.Date(2031, 1, 31, 10, 0, 0, 123456000, time.UTC)
	b.clock.Set(now)

	a := b.subscription(t, 1, whatsapp, domain.PlanStart, 1, nil)                          // never paid: from now
	later := time.Date(2031, 3, 31, 8, 0, 0, 5000, time.UTC)                               // paid on: from paid_until
	c := b.subscription(t, 1, telegram, domain.PlanStandard, 1, &later)                    // …
	d := b.subscription(t, 1, vkGroup, domain.PlanStandard, 2, at(now.Add(-48*time.Hour))) // ended: from now
	_, err := b.svc.AddWabaDialogs(ctx, 1, 3)
	require.NoError(t, err)

	inv := b.invoice(t, card(1, 1, subItem(a.ID, domain.PlanStart, 1), subItem(c.ID, domain.PlanStandard, 2),
		subItem(d.ID, domain.PlanStandard, 3), dialogsItem(4)))
	require.True(t, inv.Amount.IsPositive())
	paid, err := b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusPaid, paid.Status)
	require.Equal(t, inv.PaymentURL, paid.PaymentURL)
	require.Equal(t, domain.StatusPaid, b.status(t, inv.ID))

	want := map[int64]struct {
		plan domain.Plan
		size int32
		paid time.Time
	}{
		a.ID: {domain.PlanStart, 1, time.Date(2031, 2, 28, 10, 0, 0, 123456000, time.UTC)}, // Jan 31 + 1 month
		c.ID: {domain.PlanStandard, 2, time.Date(2031, 4, 30, 8, 0, 0, 5000, time.UTC)},    // Mar 31 + 1 month
		d.ID: {domain.PlanStandard, 3, time.Date(2031, 2, 28, 10, 0, 0, 123456000, time.UTC)},
	}
	for id, w := range want {
		s := b.stored(t, 1, id)
		require.Equal(t, w.plan, s.Plan, id)
		require.Equal(t, w.size, s.MaxSize, id)
		require.NotNil(t, s.PaidUntil, id)
		require.Equal(t, w.paid, *s.PaidUntil, id)
		require.True(t, s.HasPayment, id)
		require.Nil(t, s.TestUntil)
	}
	bal, err := b.svc.WabaDialogsBalance(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, int64(7), bal)

	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
	ev := b.events(t, inv.ID)[1]
	require.Equal(t, "paid", ev.Payload["status"])
	require.Equal(t, "new", ev.Payload["previous_status"])
	require.Equal(t, inv.Amount.String(), ev.Payload["amount"])

	// Twelve months from Feb 28: Feb 28 of the next year.
	again := b.invoice(t, card(1, 12, subItem(a.ID, domain.PlanStart, 1)))
	_, err = b.svc.PayInvoice(ctx, again.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2032, 2, 28, 10, 0, 0, 123456000, time.UTC), *b.stored(t, 1, a.ID).PaidUntil)
}

// TestPayIsAllOrNothing: a payment whose application fails part way
// changes nothing: the invoice stays new, the subscriptions as they were,
// no event, no dialogs; it can be paid once the failure is gone.
func TestPayIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(now.Add(10*day)))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 2), dialogsItem(5)))
	before := b.stored(t, 1, sub.ID)

	unchanged := func() {
		t.Helper()
		require.Equal(t, domain.StatusNew, b.status(t, inv.ID))
		require.Equal(t, before, b.stored(t, 1, sub.ID))
		require.Equal(t, []string{"->new"}, b.transitions(t, inv.ID))
		require.Zero(t, b.count(t, `SELECT count(*) FROM provider_payments`))
		got, err := b.svc.GetInvoice(ctx, 1, inv.ID)
		require.NoError(t, err)
		require.Equal(t, domain.StatusNew, got.Status)
	}

	// The connections service fails under the subscription's lock.
	down := errors.New("connections service down")
	b.conns.FailMembership(down)
	_, err := b.svc.PayInvoice(ctx, inv.ID)
	require.ErrorIs(t, err, down)
	unchanged()
	require.Zero(t, b.balanceRows(t, 1))
	// A provider's notice fails the same way and is not recorded: the
	// provider retries it.
	err = b.svc.ApplyProviderPayment(ctx, app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: inv.ID, Amount: inv.Amount})
	require.ErrorIs(t, err, down)
	unchanged()
	b.conns.FailMembership(nil)

	// Adding the dialogs fails after the subscription was written: the
	// balance would pass the int64 range.
	_, err = b.db.Exec(ctx, `INSERT INTO waba_dialogs (company_id, waba_dialogs_balance) VALUES (1, $1)`, int64(math.MaxInt64-4))
	require.NoError(t, err)
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.Error(t, err)
	unchanged()
	require.Equal(t, int64(math.MaxInt64-4), b.balance(t, 1))

	_, err = b.db.Exec(ctx, `UPDATE waba_dialogs SET waba_dialogs_balance = 0 WHERE company_id = 1`)
	require.NoError(t, err)
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	after := b.stored(t, 1, sub.ID)
	require.Equal(t, int32(2), after.MaxSize)
	require.Equal(t, domain.AddMonths(*before.PaidUntil, 1), *after.PaidUntil)
	require.Equal(t, int64(5), b.balance(t, 1))
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
}

// TestOnlyNewInvoicesMove: paid, expired and cancelled are final (409
// 22022, nothing changes); an unknown invoice is 22021.
func TestOnlyNewInvoicesMove(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	paid := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	expired := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	cancelled := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))

	_, err := b.svc.PayInvoice(ctx, paid.ID)
	require.NoError(t, err)
	got, err := b.svc.ExpireInvoice(ctx, expired.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusExpired, got.Status)
	got, err = b.svc.CancelInvoice(ctx, cancelled.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusCancelled, got.Status)
	require.Equal(t, cancelled.PaymentURL, got.PaymentURL)
	afterPay := b.stored(t, 1, sub.ID)

	for _, inv := range []domain.Invoice{paid, expired, cancelled} {
		for name, op := range map[string]func(context.Context, int64) (domain.Invoice, error){
			"pay": b.svc.PayInvoice, "expire": b.svc.ExpireInvoice, "cancel": b.svc.CancelInvoice,
		} {
			_, err := op(ctx, inv.ID)
			apiErr(t, err, apierr.InvoiceNotPayable)
			_ = name
		}
	}
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, paid.ID))
	require.Equal(t, []string{"->new", "new>expired"}, b.transitions(t, expired.ID))
	require.Equal(t, []string{"->new", "new>cancelled"}, b.transitions(t, cancelled.ID))
	require.Equal(t, afterPay, b.stored(t, 1, sub.ID), "neither expiry nor cancel applied anything")

	for _, op := range []func(context.Context, int64) (domain.Invoice, error){b.svc.PayInvoice, b.svc.ExpireInvoice, b.svc.CancelInvoice} {
		_, err := op(ctx, 999999)
		apiErr(t, err, apierr.InvoiceNotFound)
	}
}

// TestProviderPayments: a notice with another amount is refused and
// leaves no trace; one for an expired invoice is recorded, not applied;
// a replay is acknowledged and applies nothing; an unknown invoice is
// 22021.
func TestProviderPayments(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(now.Add(10*day)))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	decEq(t, "1990", inv.Amount)
	before := b.stored(t, 1, sub.ID)
	notice := app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: inv.ID, Amount: inv.Amount, Fields: map[string]string{"InvId": fmt.Sprint(inv.ID)}}

	for _, amount := range []string{"1989.99", "1990.01", "0", "199"} {
		n := notice
		n.Amount = dec(amount)
		err := b.svc.ApplyProviderPayment(ctx, n)
		require.ErrorIs(t, err, app.ErrAmountMismatch, amount)
	}
	require.Equal(t, domain.StatusNew, b.status(t, inv.ID))
	require.Equal(t, before, b.stored(t, 1, sub.ID))
	require.Zero(t, b.count(t, `SELECT count(*) FROM provider_payments`))
	require.Equal(t, []string{"->new"}, b.transitions(t, inv.ID))

	// The amount is compared as a number: 1990.00 is 1990.
	n := notice
	n.Amount = dec("1990.00")
	require.NoError(t, b.svc.ApplyProviderPayment(ctx, n))
	require.Equal(t, domain.StatusPaid, b.status(t, inv.ID))
	paidSub := b.stored(t, 1, sub.ID)
	require.Equal(t, domain.AddMonths(*before.PaidUntil, 1), *paidSub.PaidUntil)
	require.True(t, paidSub.HasPayment)
	var applied bool
	var amount, fields string
	require.NoError(t, b.db.QueryRow(ctx, `SELECT applied, amount::text, fields::text FROM provider_payments WHERE invoice_id = $1 AND provider = 'ROBOKASSA'`,
		inv.ID).Scan(&applied, &amount, &fields))
	require.True(t, applied)
	require.Equal(t, "1990.00", amount)
	require.JSONEq(t, fmt.Sprintf(`{"InvId": "%d"}`, inv.ID), fields)

	// A replay: acknowledged, nothing applied again.
	require.NoError(t, b.svc.ApplyProviderPayment(ctx, notice))
	require.Equal(t, paidSub, b.stored(t, 1, sub.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM provider_payments`))
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))

	// Money for an expired invoice: recorded with applied false,
	// acknowledged; the invoice stays expired, the subscription as it is.
	exp := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	_, err := b.svc.ExpireInvoice(ctx, exp.ID)
	require.NoError(t, err)
	require.NoError(t, b.svc.ApplyProviderPayment(ctx, app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: exp.ID, Amount: exp.Amount}))
	require.Equal(t, domain.StatusExpired, b.status(t, exp.ID))
	require.Equal(t, paidSub, b.stored(t, 1, sub.ID))
	require.NoError(t, b.db.QueryRow(ctx, `SELECT applied FROM provider_payments WHERE invoice_id = $1`, exp.ID).Scan(&applied))
	require.False(t, applied)
	require.Equal(t, []string{"->new", "new>expired"}, b.transitions(t, exp.ID))

	err = b.svc.ApplyProviderPayment(ctx, app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: 999999, Amount: dec("1")})
	apiErr(t, err, apierr.InvoiceNotFound)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM provider_payments`))
}

// TestConcurrentPaysApplyOnce: ten pays of one invoice at once: one
// applies, the others are 22022, paid_until moves once, one paid event.
func TestConcurrentPaysApplyOnce(t *testing.T) {
	const n = 10
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(now.Add(10*day)))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))

	errs := b.racer().race(t, n, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, []any{inv.ID}, func(int) error {
		_, err := b.svc.PayInvoice(context.Background(), inv.ID)
		return err
	})
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		apiErr(t, err, apierr.InvoiceNotPayable)
	}
	require.Equal(t, 1, ok)
	require.Equal(t, domain.AddMonths(*sub.PaidUntil, 1), *b.stored(t, 1, sub.ID).PaidUntil, "moved once")
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
}

// TestConcurrentProviderNoticesApplyOnce: the provider delivers one notice
// ten times at once: all acknowledged, applied once, one row.
func TestConcurrentProviderNoticesApplyOnce(t *testing.T) {
	const n = 10
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(now.Add(10*day)))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1), dialogsItem(3)))
	notice := app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: inv.ID, Amount: inv.Amount, Fields: map[string]string{"InvId": fmt.Sprint(inv.ID)}}

	errs := b.racer().race(t, n, `SELECT 1 FROM invoices WHERE id = $1 FOR UPDATE`, []any{inv.ID}, func(int) error {
		return b.svc.ApplyProviderPayment(context.Background(), notice)
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, domain.StatusPaid, b.status(t, inv.ID))
	require.Equal(t, domain.AddMonths(*sub.PaidUntil, 1), *b.stored(t, 1, sub.ID).PaidUntil, "applied once")
	require.Equal(t, int64(3), b.balance(t, 1), "dialogs added once")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM provider_payments`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM provider_payments WHERE applied`))
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
}

// TestExpireDue: the worker expires new invoices whose lifetime has
// passed, each with one event; a paid one stays paid; before the lifetime
// nothing expires.
func TestExpireDue(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	first := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	b.clock.Advance(time.Hour)
	paid := b.invoice(t, card(1, 1, dialogsItem(2)))
	last := b.invoice(t, card(2, 1, dialogsItem(3)))
	_, err := b.svc.PayInvoice(ctx, paid.ID)
	require.NoError(t, err)
	afterPay := b.stored(t, 1, sub.ID)

	// A microsecond before the first lifetime ends: nothing.
	b.clock.Set(first.Lifetime.Add(-time.Microsecond))
	n, err := b.svc.ExpireDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, domain.StatusNew, b.status(t, first.ID))

	// At the first's lifetime: only it.
	b.clock.Set(first.Lifetime)
	n, err = b.svc.ExpireDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, domain.StatusExpired, b.status(t, first.ID))
	require.Equal(t, domain.StatusNew, b.status(t, last.ID))

	require.Equal(t, first.Lifetime.Add(time.Hour), last.Lifetime)
	b.clock.Set(last.Lifetime)
	n, err = b.svc.ExpireDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.svc.ExpireDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to expire")

	require.Equal(t, []string{"->new", "new>expired"}, b.transitions(t, first.ID))
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, paid.ID))
	require.Equal(t, []string{"->new", "new>expired"}, b.transitions(t, last.ID))
	require.Equal(t, domain.StatusPaid, b.status(t, paid.ID))
	require.Equal(t, afterPay, b.stored(t, 1, sub.ID), "expiry applies nothing")
	ev := b.events(t, last.ID)[1]
	require.Equal(t, int64(2), ev.CompanyID)
	require.Equal(t, "expired", ev.Payload["status"])
	require.Equal(t, "new", ev.Payload["previous_status"])

	_, err = b.svc.PayInvoice(ctx, first.ID)
	apiErr(t, err, apierr.InvoiceNotPayable)
}

// TestExpireDueOnTwoReplicas: two services on one database expiring at
// once expire each invoice once, with one event each.
func TestExpireDueOnTwoReplicas(t *testing.T) {
	const invoices = 30
	ctx := context.Background()
	b := newBillingEnv(t)
	var latest time.Time
	for i := range invoices {
		inv := b.invoice(t, card(int64(1+i%3), 1, dialogsItem(int32(i+1))))
		latest = inv.Lifetime
	}
	b.clock.Set(latest)
	replicas := []*app.Service{b.svc, b.service()}
	counts := make([]int, 2)
	// The gate holds every invoice: both replicas have listed the due
	// ones and wait for the first lock when it lets go.
	errs := b.racer().race(t, 2, `SELECT 1 FROM invoices FOR UPDATE`, nil, func(i int) error {
		var err error
		counts[i], err = replicas[i].ExpireDue(ctx)
		return err
	})
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, invoices, counts[0]+counts[1], "each expired once: %v", counts)
	require.Equal(t, invoices, b.count(t, `SELECT count(*) FROM invoices WHERE status = 'expired'`))
	require.Equal(t, invoices, b.count(t, `SELECT count(*) FROM outbox WHERE payload->>'status' = 'expired'`))
	require.Equal(t, invoices, b.count(t, `SELECT count(DISTINCT payload->>'invoice_id') FROM outbox WHERE payload->>'status' = 'expired'`))
}

// TestPayAfterLifetime: an invoice whose lifetime has passed is expired
// by billing.md ("Unpaid invoices become expired after lifetime"), even
// before the worker has written it: paying or cancelling it is 22022 and
// applies nothing, and it is written expired; a provider's money for it
// is recorded, not applied.
func TestPayAfterLifetime(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	pay := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	cancel := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	notice := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	expire := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	b.clock.Set(pay.Lifetime)

	_, err := b.svc.PayInvoice(ctx, pay.ID)
	apiErr(t, err, apierr.InvoiceNotPayable)
	_, err = b.svc.CancelInvoice(ctx, cancel.ID)
	apiErr(t, err, apierr.InvoiceNotPayable)
	require.NoError(t, b.svc.ApplyProviderPayment(ctx, app.ProviderNotice{Provider: "ROBOKASSA", InvoiceID: notice.ID, Amount: notice.Amount}))
	var applied bool
	require.NoError(t, b.db.QueryRow(ctx, `SELECT applied FROM provider_payments WHERE invoice_id = $1`, notice.ID).Scan(&applied))
	require.False(t, applied)
	// The sandbox's expiry is what the lifetime passing is.
	got, err := b.svc.ExpireInvoice(ctx, expire.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusExpired, got.Status)

	require.Equal(t, sub, b.stored(t, 1, sub.ID), "nothing applied")
	for _, inv := range []domain.Invoice{pay, cancel, notice, expire} {
		require.Equal(t, domain.StatusExpired, b.status(t, inv.ID))
		require.Equal(t, []string{"->new", "new>expired"}, b.transitions(t, inv.ID))
	}
	n, err := b.svc.ExpireDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	// A microsecond earlier it could still be paid.
	last := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	b.clock.Set(last.Lifetime.Add(-time.Microsecond))
	_, err = b.svc.PayInvoice(ctx, last.ID)
	require.NoError(t, err)
}

// TestPaymentAfterGrowthKeepsPlanRules: an invoice for START (one slot),
// paid after the subscription grew to three connections, must not leave
// a START subscription of three slots: billing.md "START: size 1 only".
func TestPaymentAfterGrowthKeepsPlanRules(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(b.clock.Now().Add(10*day)))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStart, 1)))
	res, err := b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 3, false))
	require.NoError(t, err)
	changed := *res.Source.NewPaid
	ids := []int64{b.conns.Add(1, whatsapp, 0), b.conns.Add(1, whatsapp, 0), b.conns.Add(1, whatsapp, 0)}
	_, err = b.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: 1, SubscriptionID: sub.ID, ConnectionIDs: ids})
	require.NoError(t, err)

	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	got := b.stored(t, 1, sub.ID)
	// Plan and size stay (STANDARD, 3 slots); the month of START for one
	// slot bought (990) buys 990 / (1990 x 3) x 30 days at the
	// subscription's price, from its paid_until (still in the future).
	require.Equal(t, domain.PlanStandard, got.Plan)
	require.Equal(t, int32(3), got.MaxSize)
	extra := domain.ExtendBy(decimal.NewFromInt(990), decimal.NewFromInt(1990*3))
	require.Equal(t, changed.Add(extra), *got.PaidUntil, "paid_until moves by the value bought")
	require.True(t, got.HasPayment)
}
