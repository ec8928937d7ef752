package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// Prices is the price list (configuration; billing.md "Prices").
type Prices struct {
	Slot       map[Plan]decimal.Decimal // per connection slot per month
	WabaDialog decimal.Decimal          // per business dialog
}

// DefaultPrices is billing.md's price list.
func DefaultPrices() Prices {
	return Prices{
		Slot: map[Plan]decimal.Decimal{
			PlanFree:     decimal.Zero,
			PlanStart:    decimal.NewFromInt(990),
			PlanStandard: decimal.NewFromInt(1990),
			PlanAdvanced: decimal.NewFromInt(2990),
		},
		WabaDialog: decimal.RequireFromString("5.00"),
	}
}

// Monthly is the price of a plan and size for one month: price × size.
// FREE is 0 whatever the configuration says: its paid_until stays null, so
// money paid for it would buy nothing.
func (p Prices) Monthly(plan Plan, size int32) decimal.Decimal {
	if plan == PlanFree {
		return decimal.Zero
	}
	return p.Slot[plan].Mul(decimal.NewFromInt32(size))
}

// pricingMonth is the month of prorated amounts (upgrade, value left):
// 30 days, whatever the calendar says.
const pricingMonth = 30 * 24 * time.Hour

var pricingMonthNanos = decimal.NewFromInt(int64(pricingMonth))

// InTest reports the test period: test_until later than now and no paid
// period yet (billing.md "Amounts of a SUBSCRIPTION item").
func (s Subscription) InTest(now time.Time) bool {
	return after(s.TestUntil, now) && s.PaidUntil == nil
}

// Remaining is what is left of the paid period at now, exactly: 0 when
// there is no paid period or it has ended. A time.Duration saturates about
// 292 years out; the amounts use remainingNanos, which does not.
func (s Subscription) Remaining(now time.Time) time.Duration {
	if !after(s.PaidUntil, now) {
		return 0
	}
	return s.PaidUntil.Sub(now)
}

// remainingNanos is Remaining in nanoseconds as a decimal, exact however
// far paid_until is (an operator may set any date).
func (s Subscription) remainingNanos(now time.Time) decimal.Decimal {
	if !after(s.PaidUntil, now) {
		return decimal.Zero
	}
	secs := decimal.NewFromInt(s.PaidUntil.Unix() - now.Unix())
	return secs.Shift(9).Add(decimal.NewFromInt(int64(s.PaidUntil.Nanosecond() - now.Nanosecond())))
}

// prorate is monthly × remaining / 30 days, exact before it is rounded to
// places (half up): DivRound divides exactly and rounds once.
func prorate(monthly, remainingNanos decimal.Decimal, places int32) decimal.Decimal {
	return monthly.Mul(remainingNanos).DivRound(pricingMonthNanos, places)
}

// SubscriptionOrder is the order of one SUBSCRIPTION item of an invoice.
type SubscriptionOrder struct {
	Sub     Subscription // as stored now (old plan = Sub.Plan, old size = Sub.MaxSize)
	NewPlan Plan
	NewSize int32
}

// SubscriptionQuote holds the two amounts of a SUBSCRIPTION item.
type SubscriptionQuote struct {
	TopUp, Upgrade Amount
}

// QuoteSubscription prices one SUBSCRIPTION item for period months.
// shared carries the invoice-wide percents (Promo, Partner); the item's own
// ones are filled here: Period from months, Quantity from the new size,
// TestPeriod when the subscription is in its test period at now. Months
// must be valid (PeriodDiscount ok; the caller answers 422 otherwise); an
// invalid one gets no period discount. The flat partner-balance part is
// left at 0: it is split over the invoice later.
//
// The top-up is new size × new price × months. The upgrade is the growth of
// the monthly price (new minus old, when positive) for the exact time left
// of the paid period, in days / 30, rounded once to kopecks; 0 when nothing
// grows or nothing is left. Both get the same discounts, and a zero amount
// still shows them.
func QuoteSubscription(p Prices, o SubscriptionOrder, months int32, shared Discounts, now time.Time) SubscriptionQuote {
	d := shared
	d.Period, _ = PeriodDiscount(months)
	d.Quantity = QuantityDiscount(o.NewSize)
	d.TestPeriod = decimal.Zero
	if o.Sub.InTest(now) {
		d.TestPeriod = decimal.NewFromInt(TestPeriodDiscountPercent)
	}
	d.PartnerBalanceFlat = decimal.Zero

	newMonthly := p.Monthly(o.NewPlan, o.NewSize)
	topUp := newMonthly.Mul(decimal.NewFromInt32(months))

	upgrade := decimal.Zero
	if growth := newMonthly.Sub(p.Monthly(o.Sub.Plan, o.Sub.MaxSize)); growth.IsPositive() {
		upgrade = prorate(growth, o.Sub.remainingNanos(now), moneyPlaces)
	}
	return SubscriptionQuote{TopUp: Discounted(topUp, d), Upgrade: Discounted(upgrade, d)}
}

// QuoteDialogs prices a WABA_DIALOGS item: count × the dialog price. No
// percent applies to dialogs; only a partner balance may pay part of them.
func QuoteDialogs(p Prices, count int32) Amount {
	return Discounted(p.WabaDialog.Mul(decimal.NewFromInt32(count)), Discounts{})
}
