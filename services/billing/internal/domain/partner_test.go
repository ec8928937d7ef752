package domain

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// TestSpendBalance: a partner's balance pays the items in order, each
// subscription's top-up before its upgrade; each part's share is its
// flat discount, taken off its amount and added to its discount, so
// amount + discount stays the undiscounted value; what is spent is at
// most the balance and at most the invoice.
func TestSpendBalance(t *testing.T) {
	d := decimal.RequireFromString
	amount := func(a, disc string) Amount {
		return Amount{Amount: d(a), Discount: d(disc), Discounts: Discounts{Partner: d("20")}}
	}
	invoice := func() Invoice {
		return Invoice{Items: []InvoiceItem{
			{Kind: ItemSubscription, TopUp: amount("100.00", "25.00"), Upgrade: amount("50.00", "12.50")},
			{Kind: ItemWabaDialogs, TopUp: amount("30.00", "0")},
		}}
	}
	for _, c := range []struct {
		available, spent   string
		top, upgrade, waba string // flats
	}{
		{"0", "0", "0", "0", "0"},
		{"60.00", "60.00", "60.00", "0", "0"},
		{"120.00", "120.00", "100.00", "20.00", "0"},
		{"165.50", "165.50", "100.00", "50.00", "15.50"},
		{"1000", "180.00", "100.00", "50.00", "30.00"},
		{"-5", "0", "0", "0", "0"},
	} {
		inv := invoice()
		before := []decimal.Decimal{inv.Items[0].TopUp.Undiscounted(), inv.Items[0].Upgrade.Undiscounted(), inv.Items[1].TopUp.Undiscounted()}
		spent := inv.SpendBalance(d(c.available))
		require.True(t, spent.Equal(d(c.spent)), "%s: spent %s", c.available, spent)
		parts := []Amount{inv.Items[0].TopUp, inv.Items[0].Upgrade, inv.Items[1].TopUp}
		for i, want := range []string{c.top, c.upgrade, c.waba} {
			require.True(t, parts[i].Discounts.PartnerBalanceFlat.Equal(d(want)), "%s: part %d flat %s", c.available, i, parts[i].Discounts.PartnerBalanceFlat)
			require.True(t, parts[i].Undiscounted().Equal(before[i]), "%s: part %d undiscounted", c.available, i)
			require.False(t, parts[i].Amount.IsNegative())
		}
		require.True(t, inv.Sum().Equal(d("180.00").Sub(spent)), "%s: sum %s", c.available, inv.Sum())
	}
}
