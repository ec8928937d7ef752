package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// partnerInvoiceEnv is a benv that can mail (test mode's mailbox).
func partnerInvoiceEnv(t *testing.T) benv {
	t.Helper()
	b := newBillingEnv(t)
	cfg := b.config()
	cfg.MailDeliverable = true
	b.svc = app.New(b.repo, b.conns, b.companies, cfg)
	return b
}

func partnerCtx(available, hold string) *app.PartnerContext {
	return &app.PartnerContext{PartnerID: 100, Percent: decimal.NewFromInt(20), Available: decimal.RequireFromString(available),
		HoldID: hold, Email: "partner@example.test"}
}

// TestPartnerInvoiceStored: the partner's commission is the partner
// discount of the subscription; the balance pays the top-up first; the
// receipt adds up to what is left; the event and the mail carry the
// partner's part; the same hold again answers the same invoice.
func TestPartnerInvoiceStored(t *testing.T) {
	ctx := context.Background()
	b := partnerInvoiceEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStart, 1, nil)
	r := card(1, 1, subItem(sub.ID, domain.PlanStandard, 1), dialogsItem(10))
	r.Partner = partnerCtx("1000", "hold-1")
	inv := b.invoice(t, r)
	// 1990 - 20 % = 1592, the balance pays 1000 of it: 592; dialogs 50.
	require.Equal(t, "642", inv.Amount.String())
	require.Equal(t, "1642", inv.Partner.ClientAmount.String())
	require.Equal(t, "1000", inv.Partner.BalanceUsed.String())
	top := inv.Items[0].TopUp
	require.Equal(t, []string{"592", "1398", "1000", "20"},
		[]string{top.Amount.String(), top.Discount.String(), top.Discounts.PartnerBalanceFlat.String(), top.Discounts.Partner.String()})
	require.True(t, domain.ReceiptTotal(inv.Receipt).Equal(inv.Amount))
	require.Equal(t, domain.PayerPartner, inv.Payer())

	evs := b.events(t, inv.ID)
	require.Len(t, evs, 1)
	for k, v := range map[string]any{"payer": "partner", "client_amount": "1642", "amount": "642",
		"partner_balance_used": "1000", "hold_id": "hold-1", "partner_company_id": float64(100), "currency": "RUB"} {
		require.Equal(t, v, evs[0].Payload[k], k)
	}
	// Its reward base is after the percent discounts, the balance part in.
	items := evs[0].Payload["items"].([]any)
	require.Equal(t, "1592", items[0].(map[string]any)["amount_after_percent_discounts"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM mail_outbox WHERE subject = $1 AND to_addrs = ARRAY['partner@example.test']
		AND body LIKE '%Amount: 642.00 RUB%Client amount: 1642.00 RUB%Payment URL: http://x%'`, fmt.Sprintf("Invoice %d", inv.ID)))

	again := b.invoice(t, r)
	require.Equal(t, inv.ID, again.ID)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM invoices`))

	found, ok, err := b.svc.ResolveHold(ctx, "hold-1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, inv.ID, found.ID)
}

// TestPartnerInvoiceHoldGivenUp: a hold billing was asked about before
// any invoice came is given up; the late call stores nothing.
func TestPartnerInvoiceHoldGivenUp(t *testing.T) {
	ctx := context.Background()
	b := partnerInvoiceEnv(t)
	_, ok, err := b.svc.ResolveHold(ctx, "hold-late")
	require.NoError(t, err)
	require.False(t, ok)
	r := card(1, 1, dialogsItem(10))
	r.Partner = partnerCtx("10", "hold-late")
	r.Preview = false
	_, err = b.svc.CreateInvoice(ctx, r)
	e, isAPI := apierr.FromError(err)
	require.True(t, isAPI, "%v", err)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)
	require.Zero(t, b.count(t, `SELECT count(*) FROM invoices`))
	require.Zero(t, b.count(t, `SELECT count(*) FROM mail_outbox`))
}

// TestPartnerInvoiceAllByBalance: an invoice the balance pays in full is
// PARTNER_BALANCE, paid as soon as stored, without a link.
func TestPartnerInvoiceAllByBalance(t *testing.T) {
	b := partnerInvoiceEnv(t)
	r := card(1, 1, dialogsItem(10))
	r.Partner = partnerCtx("5000", "hold-all")
	inv := b.invoice(t, r)
	require.Equal(t, domain.StatusPaid, inv.Status)
	require.Equal(t, domain.MethodPartnerBalance, inv.PaymentMethod)
	require.Nil(t, inv.PaymentURL)
	require.True(t, inv.Amount.IsZero())
	require.Equal(t, "50", inv.Partner.BalanceUsed.String())
	require.Empty(t, inv.Receipt)
	require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
}
