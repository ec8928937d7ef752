package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSubscriptionReceipt(t *testing.T) {
	p := DefaultPrices()
	o := SubscriptionOrder{
		Sub:     Subscription{Type: "CONNECTION_WHATSAPP", Plan: PlanStart, MaxSize: 1, PaidUntil: at(15 * 24 * time.Hour)},
		NewPlan: PlanStandard,
		NewSize: 3,
	}
	q := QuoteSubscription(p, o, 1, Discounts{}, now)
	lines := SubscriptionReceipt(o, 1, q)
	require.Len(t, lines, 2)
	require.Equal(t, "Subscription CONNECTION_WHATSAPP, plan STANDARD, 3 connections, 1 month", lines[0].Name)
	require.Equal(t, int64(1), lines[0].Quantity)
	requireMoney(t, "5970", lines[0].Price)
	// (5970 − 990) × 15 / 30.
	require.Equal(t, "Upgrade of subscription CONNECTION_WHATSAPP to plan STANDARD, 3 connections", lines[1].Name)
	require.Equal(t, int64(1), lines[1].Quantity)
	requireMoney(t, "2490", lines[1].Price)
	requireMoney(t, "8460", ReceiptTotal(lines))

	// Nothing grows: the top-up alone.
	o = SubscriptionOrder{Sub: Subscription{Type: "CONNECTION_WHATSAPP", Plan: PlanStart, MaxSize: 1}, NewPlan: PlanStart, NewSize: 1}
	lines = SubscriptionReceipt(o, 12, QuoteSubscription(p, o, 12, Discounts{}, now))
	require.Len(t, lines, 1)
	require.Equal(t, "Subscription CONNECTION_WHATSAPP, plan START, 1 connection, 12 months", lines[0].Name)
	requireMoney(t, "9504", lines[0].Price) // 11880 − 20 %

	// FREE costs nothing: no line at all.
	o = SubscriptionOrder{Sub: Subscription{Type: "CONNECTION_MAX_BOT", Plan: PlanFree, MaxSize: 1}, NewPlan: PlanFree, NewSize: 2}
	require.Empty(t, SubscriptionReceipt(o, 1, QuoteSubscription(p, o, 1, Discounts{}, now)))
}

func TestDialogsReceipt(t *testing.T) {
	p := DefaultPrices()
	a := QuoteDialogs(p, 40)
	lines := DialogsReceipt(p, 40, a)
	require.Equal(t, []ReceiptLine{{Name: "Business dialogs (WABA)", Quantity: 40, Price: RoundMoney(p.WabaDialog)}}, lines)
	requireMoney(t, "200", ReceiptTotal(lines))

	// Part paid from a partner balance: 40 × 5 no longer adds up to the
	// amount, so the item is one line at its amount.
	flat := dec("33.33")
	a.Amount, a.Discount, a.Discounts.PartnerBalanceFlat = a.Amount.Sub(flat), a.Discount.Add(flat), flat
	lines = DialogsReceipt(p, 40, a)
	require.Len(t, lines, 1)
	require.Equal(t, "Business dialogs (WABA), 40 dialogs", lines[0].Name)
	require.Equal(t, int64(1), lines[0].Quantity)
	requireMoney(t, "166.67", lines[0].Price)
	requireMoney(t, "166.67", ReceiptTotal(lines))

	// Paid wholly from the balance: nothing to put on a receipt.
	a.Amount = dec("0")
	require.Empty(t, DialogsReceipt(p, 40, a))

	// A price with a third decimal does not fit count × price either.
	p.WabaDialog = dec("4.995")
	a = QuoteDialogs(p, 3)
	lines = DialogsReceipt(p, 3, a)
	require.Len(t, lines, 1)
	requireMoney(t, "14.99", ReceiptTotal(lines))

	requireMoney(t, "0", ReceiptTotal(nil))
}
