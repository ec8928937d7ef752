package domain

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// ReceiptLine is one line of an invoice's receipt. The lines of an invoice
// add up to its amount: Σ price × quantity (billing.md).
type ReceiptLine struct {
	Name     string
	Quantity int64
	Price    decimal.Decimal
}

// SubscriptionReceipt is the receipt of one SUBSCRIPTION item: a line for
// the top-up and one for the upgrade, each quantity 1 at its amount, and no
// line for a part that costs nothing.
func SubscriptionReceipt(o SubscriptionOrder, months int32, q SubscriptionQuote) []ReceiptLine {
	var lines []ReceiptLine
	if !q.TopUp.Amount.IsZero() {
		lines = append(lines, ReceiptLine{
			Name: fmt.Sprintf("Subscription %s, plan %s, %s, %s",
				o.Sub.Type, o.NewPlan, plural(int64(o.NewSize), "connection"), plural(int64(months), "month")),
			Quantity: 1,
			Price:    q.TopUp.Amount,
		})
	}
	if !q.Upgrade.Amount.IsZero() {
		lines = append(lines, ReceiptLine{
			Name: fmt.Sprintf("Upgrade of subscription %s to plan %s, %s",
				o.Sub.Type, o.NewPlan, plural(int64(o.NewSize), "connection")),
			Quantity: 1,
			Price:    q.Upgrade.Amount,
		})
	}
	return lines
}

// DialogsReceipt is the receipt of a WABA_DIALOGS item of count dialogs
// priced a: count at the dialog price while that is what a comes to. Once
// part of a is paid otherwise (a partner balance), count × price no longer
// adds up to it, and no whole price per dialog would; then the item is one
// line at its amount. Nothing to pay: no line.
func DialogsReceipt(p Prices, count int32, a Amount) []ReceiptLine {
	if a.Amount.IsZero() {
		return nil
	}
	price := RoundMoney(p.WabaDialog)
	if price.Mul(decimal.NewFromInt32(count)).Equal(a.Amount) {
		return []ReceiptLine{{Name: "Business dialogs (WABA)", Quantity: int64(count), Price: price}}
	}
	return []ReceiptLine{{Name: "Business dialogs (WABA), " + plural(int64(count), "dialog"), Quantity: 1, Price: a.Amount}}
}

// ReceiptTotal is Σ price × quantity.
func ReceiptTotal(lines []ReceiptLine) decimal.Decimal {
	total := decimal.Zero
	for _, l := range lines {
		total = total.Add(l.Price.Mul(decimal.NewFromInt(l.Quantity)))
	}
	return total
}

// plural writes n things in English: "1 month", "3 months".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
