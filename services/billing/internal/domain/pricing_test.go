package domain

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// requireMoney compares by value: "5.5" and "5.50" are the same money.
func requireMoney(t *testing.T, want string, got decimal.Decimal, msgAndArgs ...any) {
	t.Helper()
	require.Truef(t, dec(want).Equal(got), "want %s, got %s %v", want, got, msgAndArgs)
}

func requireAmount(t *testing.T, amount, discount string, got Amount, msg string) {
	t.Helper()
	requireMoney(t, amount, got.Amount, msg+" amount")
	requireMoney(t, discount, got.Discount, msg+" discount")
}

// percents builds Discounts from percents in the order period, quantity,
// promo, partner, test period.
func percents(period, quantity, promo, partner, test string) Discounts {
	return Discounts{Period: dec(period), Quantity: dec(quantity), Promo: dec(promo), Partner: dec(partner), TestPeriod: dec(test)}
}

func requireDiscounts(t *testing.T, want, got Discounts, msg string) {
	t.Helper()
	require.Truef(t, want.Period.Equal(got.Period), "%s period: %s", msg, got.Period)
	require.Truef(t, want.Quantity.Equal(got.Quantity), "%s quantity: %s", msg, got.Quantity)
	require.Truef(t, want.Promo.Equal(got.Promo), "%s promo: %s", msg, got.Promo)
	require.Truef(t, want.Partner.Equal(got.Partner), "%s partner: %s", msg, got.Partner)
	require.Truef(t, want.TestPeriod.Equal(got.TestPeriod), "%s test: %s", msg, got.TestPeriod)
	require.Truef(t, want.PartnerBalanceFlat.Equal(got.PartnerBalanceFlat), "%s flat: %s", msg, got.PartnerBalanceFlat)
}

func TestRoundMoney(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "1.004": "1", "1.005": "1.01", "1.0049999": "1", "2.675": "2.68",
		"0.125": "0.13", "0.115": "0.12", "99.995": "100", "7": "7",
	} {
		requireMoney(t, want, RoundMoney(dec(in)), in)
	}
}

func TestPeriodDiscount(t *testing.T) {
	for months, want := range map[int32]string{1: "0", 3: "5", 6: "10", 12: "20"} {
		got, ok := PeriodDiscount(months)
		require.True(t, ok, months)
		requireMoney(t, want, got, months)
	}
	for _, months := range []int32{-1, 0, 2, 4, 5, 7, 11, 13, 24} {
		got, ok := PeriodDiscount(months)
		require.False(t, ok, months)
		require.True(t, got.IsZero(), months)
	}
}

func TestQuantityDiscount(t *testing.T) {
	for size, want := range map[int32]string{
		0: "0", 1: "0", 4: "0", 5: "5", 9: "5", 10: "10", 49: "10", 50: "15", 1000: "15",
	} {
		requireMoney(t, want, QuantityDiscount(size), size)
	}
}

func TestDiscounted(t *testing.T) {
	cases := []struct {
		name             string
		undiscounted     string
		d                Discounts
		amount, discount string
	}{
		{"no discount", "5970", Discounts{}, "5970", "0"},
		{"period and quantity", "29850", percents("5", "5", "0", "0", "0"), "26865", "2985"},
		{"exactly the cap", "238800", percents("20", "10", "10", "0", "10"), "119400", "119400"},
		// 20+15+10+25+10 = 80 %: the money stops at 50 %.
		{"cap cuts the sum", "1194000", percents("20", "15", "10", "25", "10"), "597000", "597000"},
		// 990 × 0.15 % = 1.485: half up to 1.49.
		{"discount half up", "990", percents("0", "0", "0", "0.15", "0"), "988.51", "1.49"},
		{"discount just below half", "990", percents("0", "0", "0", "0.1499", "0"), "988.52", "1.48"},
		// The value is rounded first, then the discount of the rounded value.
		{"value half up", "100.005", percents("0", "0", "10", "0", "0"), "90.01", "10"},
		{"zero still shows discounts", "0", percents("5", "5", "10", "0", "10"), "0", "0"},
		{"negative sum takes nothing", "100", percents("0", "0", "0", "-20", "0"), "100", "0"},
		{"fractional partner percent", "5940", percents("10", "0", "0", "12.5", "0"), "4603.5", "1336.5"},
	}
	for _, c := range cases {
		got := Discounted(dec(c.undiscounted), c.d)
		requireAmount(t, c.amount, c.discount, got, c.name)
		requireDiscounts(t, c.d, got.Discounts, c.name)
		requireMoney(t, RoundMoney(dec(c.undiscounted)).String(), got.Undiscounted(), c.name)
	}
	// PercentSum is uncapped: Discounts shows what applies, Discount what is taken.
	requireMoney(t, "80", percents("20", "15", "10", "25", "10").PercentSum())
	// The flat balance part is not a percent.
	withFlat := Discounts{Promo: dec("10"), PartnerBalanceFlat: dec("500")}
	requireMoney(t, "10", withFlat.PercentSum())
	requireAmount(t, "900", "100", Discounted(dec("1000"), withFlat), "flat ignored")
}

func TestMonthly(t *testing.T) {
	p := DefaultPrices()
	requireMoney(t, "0", p.Monthly(PlanFree, 5))
	requireMoney(t, "990", p.Monthly(PlanStart, 1))
	requireMoney(t, "5970", p.Monthly(PlanStandard, 3))
	requireMoney(t, "29900", p.Monthly(PlanAdvanced, 10))
	requireMoney(t, "0", p.Monthly(PlanStandard, 0))
	requireMoney(t, "5", p.WabaDialog)

	// FREE is free even when configured otherwise.
	p.Slot[PlanFree] = dec("100")
	requireMoney(t, "0", p.Monthly(PlanFree, 1))
}

func TestInTestAndRemaining(t *testing.T) {
	require.True(t, Subscription{TestUntil: at(time.Second)}.InTest(now))
	require.False(t, Subscription{TestUntil: at(0)}.InTest(now), "ends at its instant")
	require.False(t, Subscription{TestUntil: at(time.Hour), PaidUntil: at(-time.Hour)}.InTest(now), "once paid, never in test")
	require.False(t, Subscription{}.InTest(now))

	require.Equal(t, time.Duration(0), Subscription{}.Remaining(now))
	require.Equal(t, time.Duration(0), Subscription{PaidUntil: at(0)}.Remaining(now))
	require.Equal(t, time.Duration(0), Subscription{PaidUntil: at(-time.Hour)}.Remaining(now))
	d := 10*24*time.Hour + 3*time.Hour + 17*time.Nanosecond
	require.Equal(t, d, Subscription{PaidUntil: at(d)}.Remaining(now))

	// Far beyond a Duration's range the amounts still see the exact time.
	far := time.Date(2400, 6, 1, 12, 0, 0, 1, time.UTC)
	s := Subscription{PaidUntil: &far}
	requireMoney(t, "11833862400000000001", s.remainingNanos(now)) // 375 × 365 + 91 leap days = 136966 days, + 1 ns
}

func TestQuoteSubscription(t *testing.T) {
	p := DefaultPrices()
	const wa = SubscriptionType("CONNECTION_WHATSAPP")
	none := Discounts{}
	promo := Discounts{Promo: dec("10")}
	day := 24 * time.Hour

	cases := []struct {
		name            string
		sub             Subscription
		plan            Plan
		size, months    int32
		shared          Discounts
		topUp, topUpOff string
		up, upOff       string
		discounts       Discounts
	}{
		{
			name: "renewal, nothing grows",
			sub:  Subscription{Type: wa, Plan: PlanStandard, MaxSize: 3, PaidUntil: at(10 * day)},
			plan: PlanStandard, size: 3, months: 1, shared: none,
			topUp: "5970", topUpOff: "0", up: "0", upOff: "0",
			discounts: percents("0", "0", "0", "0", "0"),
		},
		{
			// growth 9950 − 5970 = 3980 for 10.5 of 30 days = 1393; 5 % off.
			name: "size grows for 10.5 days",
			sub:  Subscription{Type: wa, Plan: PlanStandard, MaxSize: 3, PaidUntil: at(10*day + 12*time.Hour)},
			plan: PlanStandard, size: 5, months: 1, shared: none,
			topUp: "9452.5", topUpOff: "497.5", up: "1323.35", upOff: "69.65",
			discounts: percents("0", "5", "0", "0", "0"),
		},
		{
			// 1000 × 7 d 3 h 20 min / 30 d = 237.96296…: 237.96; 5 % = 11.898: 11.90.
			name: "plan grows for fractional days",
			sub:  Subscription{Type: wa, Plan: PlanStart, MaxSize: 1, PaidUntil: at(7*day + 3*time.Hour + 20*time.Minute)},
			plan: PlanStandard, size: 1, months: 3, shared: none,
			topUp: "5671.5", topUpOff: "298.5", up: "226.06", upOff: "11.9",
			discounts: percents("5", "0", "0", "0", "0"),
		},
		{
			// 1000 × (3 d + 12.96 s) / 30 d = 100.005 exactly: half up to 100.01.
			name: "upgrade rounds half up",
			sub:  Subscription{Type: wa, Plan: PlanStart, MaxSize: 1, PaidUntil: at(3*day + 12960*time.Millisecond)},
			plan: PlanStandard, size: 1, months: 1, shared: none,
			topUp: "1990", topUpOff: "0", up: "100.01", upOff: "0",
			discounts: percents("0", "0", "0", "0", "0"),
		},
		{
			// 1 ns less is below the half kopeck.
			name: "upgrade just below half",
			sub:  Subscription{Type: wa, Plan: PlanStart, MaxSize: 1, PaidUntil: at(3*day + 12960*time.Millisecond - time.Nanosecond)},
			plan: PlanStandard, size: 1, months: 1, shared: none,
			topUp: "1990", topUpOff: "0", up: "100", upOff: "0",
			discounts: percents("0", "0", "0", "0", "0"),
		},
		{
			name: "downgrade: no upgrade, discounts still shown",
			sub:  Subscription{Type: wa, Plan: PlanStandard, MaxSize: 3, PaidUntil: at(20 * day)},
			plan: PlanStart, size: 1, months: 6, shared: promo,
			topUp: "4752", topUpOff: "1188", up: "0", upOff: "0",
			discounts: percents("10", "0", "10", "0", "0"),
		},
		{
			// 3980 − 10 % test period; no paid period, so nothing to upgrade.
			name: "test period",
			sub:  Subscription{Type: wa, Plan: PlanStart, MaxSize: 1, TestUntil: at(3 * day)},
			plan: PlanStandard, size: 2, months: 1, shared: none,
			topUp: "3582", topUpOff: "398", up: "0", upOff: "0",
			discounts: percents("0", "0", "0", "0", "10"),
		},
		{
			name: "test period over",
			sub:  Subscription{Type: wa, Plan: PlanStart, MaxSize: 1, TestUntil: at(0)},
			plan: PlanStart, size: 1, months: 1, shared: none,
			topUp: "990", topUpOff: "0", up: "0", upOff: "0",
			discounts: percents("0", "0", "0", "0", "0"),
		},
		{
			// 20+15+10+25 = 70 %, capped at 50: 1 194 000 / 2. The growth
			// 99500 − 1990 for 30 days is 97510, halved too. No test
			// discount: a subscription with a paid period is not in test.
			name: "cap cuts the sum",
			sub:  Subscription{Type: wa, Plan: PlanStandard, MaxSize: 1, PaidUntil: at(30 * day), TestUntil: at(day)},
			plan: PlanStandard, size: 50, months: 12, shared: Discounts{Promo: dec("10"), Partner: dec("25")},
			topUp: "597000", topUpOff: "597000", up: "48755", upOff: "48755",
			discounts: percents("20", "15", "10", "25", "0"),
		},
		{
			// 20+10+10+7.5 = 47.5 % of 238 800 = 113 430.
			name: "promo and partner, 10 slots, a year",
			sub:  Subscription{Type: wa, Plan: PlanStandard, MaxSize: 10, PaidUntil: at(-day)},
			plan: PlanStandard, size: 10, months: 12, shared: Discounts{Promo: dec("10"), Partner: dec("7.5")},
			topUp: "125370", topUpOff: "113430", up: "0", upOff: "0",
			discounts: percents("20", "10", "10", "7.5", "0"),
		},
		{
			name: "FREE bot",
			sub:  Subscription{Type: "CONNECTION_TELEGRAM_BOT", Plan: PlanStart, MaxSize: 1, PaidUntil: at(10 * day)},
			plan: PlanFree, size: 3, months: 1, shared: promo,
			topUp: "0", topUpOff: "0", up: "0", upOff: "0",
			discounts: percents("0", "0", "10", "0", "0"),
		},
		{
			// FREE → START: the old monthly price is 0, but FREE has no paid period.
			name: "from FREE",
			sub:  Subscription{Type: "CONNECTION_TELEGRAM_BOT", Plan: PlanFree, MaxSize: 1},
			plan: PlanStart, size: 1, months: 3, shared: none,
			topUp: "2821.5", topUpOff: "148.5", up: "0", upOff: "0",
			discounts: percents("5", "0", "0", "0", "0"),
		},
	}
	for _, c := range cases {
		o := SubscriptionOrder{Sub: c.sub, NewPlan: c.plan, NewSize: c.size}
		q := QuoteSubscription(p, o, c.months, c.shared, now)
		requireAmount(t, c.topUp, c.topUpOff, q.TopUp, c.name+" top-up")
		requireAmount(t, c.up, c.upOff, q.Upgrade, c.name+" upgrade")
		requireDiscounts(t, c.discounts, q.TopUp.Discounts, c.name+" top-up")
		requireDiscounts(t, c.discounts, q.Upgrade.Discounts, c.name+" upgrade")
	}
}

func TestQuoteSubscriptionIgnoresSharedFlatAndItemPercents(t *testing.T) {
	// The item's own percents come from the order, whatever shared says.
	shared := Discounts{Period: dec("99"), Quantity: dec("99"), TestPeriod: dec("99"), Promo: dec("10"), PartnerBalanceFlat: dec("100")}
	o := SubscriptionOrder{Sub: Subscription{Plan: PlanStart, MaxSize: 1}, NewPlan: PlanStart, NewSize: 1}
	q := QuoteSubscription(DefaultPrices(), o, 1, shared, now)
	requireDiscounts(t, percents("0", "0", "10", "0", "0"), q.TopUp.Discounts, "top-up")
	requireAmount(t, "891", "99", q.TopUp, "top-up")
}

func TestQuoteDialogs(t *testing.T) {
	p := DefaultPrices()
	a := QuoteDialogs(p, 7)
	requireAmount(t, "35", "0", a, "7 dialogs")
	requireDiscounts(t, Discounts{}, a.Discounts, "7 dialogs")
	requireAmount(t, "5000000", "0", QuoteDialogs(p, 1_000_000), "a million")

	// A price with a third decimal is rounded once, on the amount.
	p.WabaDialog = dec("4.995")
	requireAmount(t, "14.99", "0", QuoteDialogs(p, 3), "14.985")
}
