package domain

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// The property tests generate orders from fixed seeds (deterministic) and
// check the money rules against an oracle in math/big rationals, which
// shares no code with the decimal implementation.

const propertyRuns = 20000

// halfUpKopecks rounds a non-negative rational half up to kopecks.
func halfUpKopecks(x *big.Rat) decimal.Decimal {
	n := new(big.Rat).Mul(x, big.NewRat(100, 1))
	n.Add(n, big.NewRat(1, 2))
	k := new(big.Int).Quo(n.Num(), n.Denom()) // floor: n ≥ 0
	return decimal.NewFromBigInt(k, -2)
}

// oracleAmount is billing.md's rule on an exact undiscounted value.
func oracleAmount(undiscounted *big.Rat, percentSum decimal.Decimal) (amount, discount decimal.Decimal) {
	value := halfUpKopecks(undiscounted)
	pct := percentSum.Rat()
	if pct.Cmp(big.NewRat(DiscountCapPercent, 1)) > 0 {
		pct = big.NewRat(DiscountCapPercent, 1)
	}
	if pct.Sign() < 0 {
		pct = new(big.Rat)
	}
	off := new(big.Rat).Mul(value.Rat(), pct)
	off.Quo(off, big.NewRat(100, 1))
	discount = halfUpKopecks(off)
	return value.Sub(discount), discount
}

func twoPlaces(d decimal.Decimal) bool { return d.Equal(d.Round(2)) }

// checkAmount checks the invariants of every amount against its exact
// undiscounted value.
func checkAmount(t *testing.T, a Amount, undiscounted *big.Rat, what string, run int) {
	t.Helper()
	wantAmount, wantDiscount := oracleAmount(undiscounted, a.Discounts.PercentSum())
	require.Truef(t, a.Amount.Equal(wantAmount), "run %d %s: amount %s, oracle %s", run, what, a.Amount, wantAmount)
	require.Truef(t, a.Discount.Equal(wantDiscount), "run %d %s: discount %s, oracle %s", run, what, a.Discount, wantDiscount)

	require.Truef(t, twoPlaces(a.Amount) && twoPlaces(a.Discount), "run %d %s: more than two places: %s %s", run, what, a.Amount, a.Discount)
	require.Falsef(t, a.Amount.IsNegative() || a.Discount.IsNegative(), "run %d %s: negative", run, what)
	value := halfUpKopecks(undiscounted)
	require.Truef(t, a.Amount.Add(a.Discount).Equal(value), "run %d %s: %s + %s != %s", run, what, a.Amount, a.Discount, value)
	limit := value.Mul(decimal.NewFromInt(DiscountCapPercent)).Shift(-2).Add(dec("0.005"))
	require.Truef(t, a.Discount.LessThanOrEqual(limit), "run %d %s: discount %s over half of %s", run, what, a.Discount, value)
}

func randomPrices(rnd *rand.Rand) Prices {
	if rnd.IntN(2) == 0 {
		return DefaultPrices()
	}
	kopecks := func() decimal.Decimal { return decimal.New(1+rnd.Int64N(500000), -2) }
	return Prices{
		Slot:       map[Plan]decimal.Decimal{PlanFree: decimal.Zero, PlanStart: kopecks(), PlanStandard: kopecks(), PlanAdvanced: kopecks()},
		WabaDialog: decimal.New(1+rnd.Int64N(100000), -3), // a third place now and then
	}
}

func randomSubscription(rnd *rand.Rand) Subscription {
	plans := []Plan{PlanFree, PlanStart, PlanStandard, PlanAdvanced}
	s := Subscription{Type: "CONNECTION_TELEGRAM_BOT", Plan: plans[rnd.IntN(len(plans))], MaxSize: rnd.Int32N(61)}
	if s.Plan == PlanStart {
		s.MaxSize = 1
	}
	day := int64(24 * time.Hour)
	if rnd.IntN(5) > 0 {
		s.PaidUntil = at(time.Duration(rnd.Int64N(430*day) - 30*day))
	}
	if rnd.IntN(2) == 0 {
		s.TestUntil = at(time.Duration(rnd.Int64N(20*day) - 10*day))
	}
	return s
}

func TestPropertySubscriptionAmounts(t *testing.T) {
	rnd := rand.New(rand.NewPCG(20250601, 1))
	newPlans := []Plan{PlanFree, PlanStart, PlanStandard}
	periods := []int32{1, 3, 6, 12}
	monthNanos := new(big.Rat).SetInt64(int64(pricingMonth))

	for run := range propertyRuns {
		p := randomPrices(rnd)
		o := SubscriptionOrder{Sub: randomSubscription(rnd), NewPlan: newPlans[rnd.IntN(len(newPlans))], NewSize: 1 + rnd.Int32N(120)}
		if o.NewPlan == PlanStart {
			o.NewSize = 1
		}
		months := periods[rnd.IntN(len(periods))]
		var shared Discounts
		if rnd.IntN(2) == 0 {
			shared.Promo = decimal.NewFromInt(PromoDiscountPercent)
		}
		if rnd.IntN(3) > 0 {
			shared.Partner = decimal.New(rnd.Int64N(6001), -2) // 0.00..60.00 %
		}

		q := QuoteSubscription(p, o, months, shared, now)

		// The expected percents, from the tables.
		period, ok := PeriodDiscount(months)
		require.True(t, ok)
		want := shared
		want.Period, want.Quantity = period, QuantityDiscount(o.NewSize)
		if o.Sub.TestUntil != nil && o.Sub.TestUntil.After(now) && o.Sub.PaidUntil == nil {
			want.TestPeriod = decimal.NewFromInt(TestPeriodDiscountPercent)
		}
		requireDiscounts(t, want, q.TopUp.Discounts, "top-up")
		requireDiscounts(t, want, q.Upgrade.Discounts, "upgrade")

		// top-up: new size × price × months; FREE 0.
		price := p.Slot[o.NewPlan].Rat()
		if o.NewPlan == PlanFree {
			price = new(big.Rat)
		}
		newMonthly := new(big.Rat).Mul(price, big.NewRat(int64(o.NewSize), 1))
		topUp := new(big.Rat).Mul(newMonthly, big.NewRat(int64(months), 1))
		checkAmount(t, q.TopUp, topUp, "top-up", run)

		// upgrade: positive growth × exact remaining nanoseconds / 30 days.
		oldPrice := p.Slot[o.Sub.Plan].Rat()
		if o.Sub.Plan == PlanFree {
			oldPrice = new(big.Rat)
		}
		growth := new(big.Rat).Sub(newMonthly, new(big.Rat).Mul(oldPrice, big.NewRat(int64(o.Sub.MaxSize), 1)))
		upgrade := new(big.Rat)
		if growth.Sign() > 0 && o.Sub.PaidUntil != nil && o.Sub.PaidUntil.After(now) {
			upgrade.Mul(growth, new(big.Rat).SetInt64(int64(o.Sub.PaidUntil.Sub(now))))
			upgrade.Quo(upgrade, monthNanos)
		}
		checkAmount(t, q.Upgrade, upgrade, "upgrade", run)

		// The receipt adds up to the item, one positive line per part.
		lines := SubscriptionReceipt(o, months, q)
		total := q.TopUp.Amount.Add(q.Upgrade.Amount)
		require.Truef(t, ReceiptTotal(lines).Equal(total), "run %d: receipt %s, amount %s", run, ReceiptTotal(lines), total)
		for _, l := range lines {
			require.Equal(t, int64(1), l.Quantity)
			require.True(t, l.Price.IsPositive() && twoPlaces(l.Price))
		}
	}
}

func TestPropertyDialogs(t *testing.T) {
	rnd := rand.New(rand.NewPCG(20250601, 2))
	for run := range propertyRuns {
		p := randomPrices(rnd)
		count := 1 + rnd.Int32N(100000)
		a := QuoteDialogs(p, count)
		checkAmount(t, a, new(big.Rat).Mul(p.WabaDialog.Rat(), big.NewRat(int64(count), 1)), "dialogs", run)
		require.True(t, a.Discounts.PercentSum().IsZero())

		// Part of the amount paid from a partner balance, sometimes all.
		if rnd.IntN(2) == 0 {
			flat := a.Amount
			if rnd.IntN(4) > 0 {
				flat = decimal.New(rnd.Int64N(a.Amount.Shift(2).IntPart()+1), -2)
			}
			a.Amount, a.Discount, a.Discounts.PartnerBalanceFlat = a.Amount.Sub(flat), a.Discount.Add(flat), flat
		}
		lines := DialogsReceipt(p, count, a)
		require.Truef(t, ReceiptTotal(lines).Equal(a.Amount), "run %d: receipt %s, amount %s", run, ReceiptTotal(lines), a.Amount)
		for _, l := range lines {
			require.True(t, l.Quantity >= 1 && l.Price.IsPositive() && twoPlaces(l.Price))
		}
	}
}

// A change spends the value left, and at most a microsecond's worth of it
// is lost to the truncation; none is created.
func TestPropertyChanges(t *testing.T) {
	rnd := rand.New(rand.NewPCG(20250601, 3))
	microsecond := decimal.NewFromInt(int64(time.Microsecond))
	for run := range propertyRuns {
		p := randomPrices(rnd)
		s := randomSubscription(rnd)
		plans := []Plan{PlanStart, PlanStandard, PlanAdvanced}
		newPlan := plans[rnd.IntN(len(plans))]
		newSize := 1 + rnd.Int32N(60)
		if newPlan == PlanStart {
			newSize = 1
		}

		value := p.ValueLeft(s, now)
		got := p.Rechange(s, newPlan, newSize, now)
		if !value.IsPositive() {
			require.Equal(t, s.PaidUntil, got, "run %d: no value, no change", run)
			continue
		}
		if got.Sub(now) == maxExtend {
			continue // cut at about 292 years (a kopeck-priced target)
		}
		changed := Subscription{Plan: newPlan, MaxSize: newSize, PaidUntil: got}
		spent := p.ValueLeft(changed, now)
		// One microsecond at the new price, plus the 20th place of both values.
		slack := p.Monthly(newPlan, newSize).Mul(microsecond).DivRound(pricingMonthNanos, ValuePlaces).Add(decimal.New(1, -ValuePlaces+1))
		require.Truef(t, spent.LessThanOrEqual(value.Add(decimal.New(1, -ValuePlaces+1))), "run %d: %s bought more than %s", run, spent, value)
		require.Truef(t, value.Sub(spent).LessThanOrEqual(slack), "run %d: %s of %s lost", run, value.Sub(spent), value)
		require.Equal(t, time.Duration(0), got.Sub(now)%time.Microsecond, "run %d: whole microseconds", run)

		// Unchanged plan and size: paid_until to the microsecond.
		if same := p.Rechange(s, s.Plan, s.MaxSize, now); s.Plan != PlanFree && s.MaxSize > 0 {
			require.Equal(t, now.Add(s.PaidUntil.Sub(now).Truncate(time.Microsecond)), *same, "run %d", run)
		}

		// Moving the value to a target of the same price carries the time.
		target := randomSubscription(rnd)
		target.Plan, target.MaxSize = s.Plan, s.MaxSize
		moved := p.MoveValue(target, value, now)
		from := now
		if target.PaidUntil != nil && target.PaidUntil.After(now) {
			from = *target.PaidUntil
		}
		require.Equal(t, from.Add(s.PaidUntil.Sub(now).Truncate(time.Microsecond)), *moved, "run %d", run)
	}
}
