package app_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// fakeBilling stores partner invoices the way billing does as far as
// holds go: an invoice of price spends min(available, price); a hold id
// is claimed once (a retry answers the first invoice) and, once given up
// by ResolveHold, stores nothing. crash makes the next call store and
// then fail as a lost answer would; down makes it fail storing nothing.
type fakeBilling struct {
	noBilling
	mu        sync.Mutex
	price     decimal.Decimal
	next      int64
	holds     map[string]int64 // hold id -> invoice id (0: given up)
	used      map[int64]decimal.Decimal
	crash     bool
	down      bool
	forHolds  int
	refuseAll bool
}

func newFakeBilling(price string) *fakeBilling {
	return &fakeBilling{price: dec(price), holds: map[string]int64{}, used: map[int64]decimal.Decimal{}}
}

func (b *fakeBilling) CreatePartnerInvoice(_ context.Context, r *billingv1.CreatePartnerInvoiceRequest) (*billingv1.PartnerInvoice, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuseAll {
		return nil, apierr.SubscriptionNotFound.E()
	}
	if b.down {
		return nil, apierr.ServiceUnavailable.Msg("billing is unavailable, try again later")
	}
	available := decimal.RequireFromString(r.GetPartnerBalanceAvailable().GetValue())
	hold := r.GetHoldId()
	if id, ok := b.holds[hold]; hold != "" && ok {
		if id == 0 {
			return nil, apierr.ServiceUnavailable.Msg("hold given up")
		}
		return b.answer(id), nil
	}
	b.next++
	id := b.next
	b.used[id] = decimal.Min(available, b.price)
	if hold != "" {
		b.holds[hold] = id
		b.forHolds++
	}
	if b.crash {
		b.crash = false
		return nil, apierr.ServiceUnavailable.Msg("billing is unavailable, try again later")
	}
	return b.answer(id), nil
}

func (b *fakeBilling) answer(id int64) *billingv1.PartnerInvoice {
	st := billingv1.InvoiceStatus_INVOICE_STATUS_NEW
	return &billingv1.PartnerInvoice{
		Invoice:            &billingv1.Invoice{Id: proto.Int64(id), Status: &st, Amount: protoapi.Decimal(b.price.Sub(b.used[id]))},
		ClientAmount:       protoapi.Decimal(b.price),
		PartnerBalanceUsed: protoapi.Decimal(b.used[id]),
	}
}

func (b *fakeBilling) ResolveHold(_ context.Context, hold string) (bool, int64, string, decimal.Decimal, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.holds[hold]
	if !ok || id == 0 {
		b.holds[hold] = 0
		return false, 0, "", decimal.Zero, nil
	}
	return true, id, "new", b.used[id], nil
}

// holdEnv is a partner 100 with a partner-type client 1 and a referral 2
// whose paid 10000.00 of dialogs gave it a balance of 1000.00.
func holdEnv(t *testing.T, b *fakeBilling, conns int) env {
	t.Helper()
	e := envWith(t, conns, envConfig{Billing: b})
	e.ident.addPartner(100)
	e.ident.addClient(100, 1, domain.TypePartner, "Client LLC")
	e.ident.addClient(100, 2, domain.TypeReferral, "Referral LLC")
	_, err := e.svc.IngestBillingEvents(context.Background(), []app.BillingEvent{paid("ev-pay", 2, may(10, 12), waba(2000, "10000.00"))})
	require.NoError(t, err)
	e.requireBalance(t, "1000")
	return e
}

func (e env) requireBalance(t *testing.T, want string) {
	t.Helper()
	tot, err := e.svc.Balance(context.Background(), 100)
	require.NoError(t, err)
	require.Equal(t, dec(want).StringFixed(2), tot.Balance().StringFixed(2))
}

func storedWithBalance() app.PartnerInvoiceRequest {
	method := billingv1.PaymentMethod_PAYMENT_METHOD_CARD_RU
	return app.PartnerInvoiceRequest{PartnerID: 100, UsePartnerBalance: true, Invoice: &billingv1.CreateInvoiceRequest{
		CompanyId: 1, Preview: proto.Bool(false), PaymentMethod: &method,
	}}
}

// TestPartnerInvoiceHoldsParallel: invoices made at once never spend more
// than the balance between them, and the balance is what is left.
func TestPartnerInvoiceHoldsParallel(t *testing.T) {
	b := newFakeBilling("300.00")
	const n = 8
	e := holdEnv(t, b, n+4)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.svc.CreatePartnerInvoice(context.Background(), storedWithBalance())
		}()
	}
	wg.Wait()
	spent := decimal.Zero
	for i, err := range errs {
		require.NoError(t, err, "invoice %d", i)
	}
	for _, u := range b.used {
		spent = spent.Add(u)
	}
	require.True(t, spent.LessThanOrEqual(dec("1000")), "spent %s", spent)
	require.True(t, spent.GreaterThanOrEqual(dec("300")), "spent %s: the first invoice had the balance", spent)
	e.requireBalance(t, dec("1000").Sub(spent).String())
	require.Zero(t, e.count(t, `SELECT count(*) FROM balance_holds WHERE status = 'pending'`))
}

// TestPartnerInvoiceHoldCrash: an answer lost after billing stored the
// invoice keeps the whole reservation pending; the sweeper leaves it
// within the grace period, then settles it at what the invoice used. A
// call that stored nothing leaves a hold the sweeper drops (and billing
// stores nothing for it any more); a refusal releases at once.
func TestPartnerInvoiceHoldCrash(t *testing.T) {
	b := newFakeBilling("300.00")
	e := holdEnv(t, b, 4)
	ctx := context.Background()

	b.crash = true
	_, err := e.svc.CreatePartnerInvoice(ctx, storedWithBalance())
	apiErr(t, err, apierr.ServiceUnavailable)
	e.requireBalance(t, "0")
	n, err := e.svc.ResolveHolds(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "within the grace period")
	e.clock.Set(may(14, 9).Add(30*time.Minute + app.DefaultHoldGrace + time.Second))
	n, err = e.svc.ResolveHolds(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireBalance(t, "700")

	// Billing down before storing: the hold is dropped by the sweeper.
	b.down = true
	_, err = e.svc.CreatePartnerInvoice(ctx, storedWithBalance())
	apiErr(t, err, apierr.ServiceUnavailable)
	e.requireBalance(t, "0")
	b.down = false
	e.clock.Set(e.clock.Now().Add(app.DefaultHoldGrace + time.Second))
	n, err = e.svc.ResolveHolds(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireBalance(t, "700")
	require.Equal(t, 1, b.forHolds, "no invoice was stored for the dropped hold")

	// Refused by billing: released at once.
	b.refuseAll = true
	_, err = e.svc.CreatePartnerInvoice(ctx, storedWithBalance())
	apiErr(t, err, apierr.SubscriptionNotFound)
	e.requireBalance(t, "700")
}

// TestPartnerInvoiceHoldEvents: the invoice's new event settles a hold
// still pending; expired or cancelled gives it back, whichever comes
// first; an event sent again changes nothing.
func TestPartnerInvoiceHoldEvents(t *testing.T) {
	b := newFakeBilling("300.00")
	e := holdEnv(t, b, 4)
	ctx := context.Background()
	b.crash = true
	_, err := e.svc.CreatePartnerInvoice(ctx, storedWithBalance())
	apiErr(t, err, apierr.ServiceUnavailable)
	var hold string
	require.NoError(t, e.db.QueryRow(ctx, `SELECT id::text FROM balance_holds WHERE status = 'pending'`).Scan(&hold))
	event := func(id, status string) app.BillingEvent {
		payload, err := json.Marshal(map[string]any{"invoice_id": 1, "company_id": 1, "status": status, "amount": "0.00",
			"payer": "partner", "client_amount": "300.00", "partner_company_id": 100, "partner_balance_used": "300.00",
			"hold_id": hold, "items": []any{waba(60, "0.00")}, "at": may(14, 10).Format(time.RFC3339Nano)})
		require.NoError(t, err)
		return app.BillingEvent{ID: id, CompanyID: 1, Type: domain.EventInvoiceStatus, Payload: payload, CreatedAt: may(14, 10)}
	}
	_, err = e.svc.IngestBillingEvents(ctx, []app.BillingEvent{event("ev-new", "new")})
	require.NoError(t, err)
	e.requireBalance(t, "700")
	_, err = e.svc.IngestBillingEvents(ctx, []app.BillingEvent{event("ev-new", "new"), event("ev-cancel", "cancelled")})
	require.NoError(t, err)
	e.requireBalance(t, "1000")
	_, err = e.svc.IngestBillingEvents(ctx, []app.BillingEvent{event("ev-new-again", "new")})
	require.NoError(t, err)
	e.requireBalance(t, "1000")
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM balance_holds WHERE status = $1`, domain.HoldReleased))
}
