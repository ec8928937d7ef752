package domain

import "github.com/shopspring/decimal"

// Money is decimal roubles, never float: amounts are exact and have two
// decimals (kopecks), each rounded half up once (billing.md, first lines).

// moneyPlaces is the kopeck: the places every amount is rounded to.
const moneyPlaces = 2

// RoundMoney rounds half up to kopecks. decimal's Round is half away from
// zero, which is half up for the non-negative amounts billing deals in.
func RoundMoney(d decimal.Decimal) decimal.Decimal { return d.Round(moneyPlaces) }

// Discount rules in percent (billing.md "Discounts").
const (
	// DiscountCapPercent caps the sum of the percents, not each of them.
	DiscountCapPercent = 50
	// PromoDiscountPercent is what a valid promo code gives.
	PromoDiscountPercent = 10
	// TestPeriodDiscountPercent is what a subscription in its test period
	// gets when the invoice is made.
	TestPeriodDiscountPercent = 10
)

// Discounts of one amount: the percents that apply (JSON numbers) and the
// flat partner-balance part in roubles.
type Discounts struct {
	Period, Quantity, Promo, Partner, TestPeriod decimal.Decimal
	// PartnerBalanceFlat is the part a partner's balance pays, in
	// roubles: 0 unless a partner invoice uses the balance. It is set by
	// whoever splits the balance over the invoice; Discounted ignores it.
	PartnerBalanceFlat decimal.Decimal
}

// PercentSum adds the percents, uncapped: the cap applies to the money
// (Discounted), while Discounts shows every percent that applies.
func (d Discounts) PercentSum() decimal.Decimal {
	return d.Period.Add(d.Quantity).Add(d.Promo).Add(d.Partner).Add(d.TestPeriod)
}

// Amount is one priced part of an invoice: top_up_amount, upgrade_amount.
type Amount struct {
	Amount    decimal.Decimal // after discounts
	Discount  decimal.Decimal // money taken off
	Discounts Discounts
}

// Undiscounted is the value before discounts, in kopecks.
func (a Amount) Undiscounted() decimal.Decimal { return a.Amount.Add(a.Discount) }

// PeriodDiscount is the percent for period_months: 1 (the default) 0, 3 5,
// 6 10, 12 20. Any other value is not a period (422): ok is false.
func PeriodDiscount(months int32) (percent decimal.Decimal, ok bool) {
	switch months {
	case 1:
		return decimal.Zero, true
	case 3:
		return decimal.NewFromInt(5), true
	case 6:
		return decimal.NewFromInt(10), true
	case 12:
		return decimal.NewFromInt(20), true
	}
	return decimal.Zero, false
}

// QuantityDiscount is the percent for the new size: 1-4 0, 5-9 5, 10-49
// 10, 50 and more 15.
func QuantityDiscount(size int32) decimal.Decimal {
	switch {
	case size >= 50:
		return decimal.NewFromInt(15)
	case size >= 10:
		return decimal.NewFromInt(10)
	case size >= 5:
		return decimal.NewFromInt(5)
	}
	return decimal.Zero
}

// Discounted applies the percents of d to an undiscounted value: the value
// is rounded half up to kopecks, the discount is value × min(sum, 50) / 100
// rounded half up, and the amount is their difference, so amount +
// discount is always the rounded value and neither is rounded twice. A sum
// below 0 takes nothing off: a discount never raises a price.
func Discounted(undiscounted decimal.Decimal, d Discounts) Amount {
	value := RoundMoney(undiscounted)
	percent := decimal.Min(d.PercentSum(), decimal.NewFromInt(DiscountCapPercent))
	percent = decimal.Max(percent, decimal.Zero)
	// Shift(-2) divides by 100 exactly; Div would round at 16 places.
	discount := RoundMoney(value.Mul(percent).Shift(-2))
	return Amount{Amount: value.Sub(discount), Discount: discount, Discounts: d}
}
