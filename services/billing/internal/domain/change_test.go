package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValueLeft(t *testing.T) {
	p := DefaultPrices()
	day := 24 * time.Hour
	// 5970 × 15 / 30.
	requireMoney(t, "2985", p.ValueLeft(Subscription{Plan: PlanStandard, MaxSize: 3, PaidUntil: at(15 * day)}, now))
	requireMoney(t, "33", p.ValueLeft(Subscription{Plan: PlanStart, MaxSize: 1, PaidUntil: at(day)}, now))
	// 1990 / 2 592 000 = 0.000767746913580246913580…: kept to 20 places.
	requireMoney(t, "0.00076774691358024691", p.ValueLeft(Subscription{Plan: PlanStandard, MaxSize: 1, PaidUntil: at(time.Second)}, now))
	requireMoney(t, "0", p.ValueLeft(Subscription{Plan: PlanStandard, MaxSize: 1}, now))
	requireMoney(t, "0", p.ValueLeft(Subscription{Plan: PlanStandard, MaxSize: 1, PaidUntil: at(0)}, now))
	requireMoney(t, "0", p.ValueLeft(Subscription{Plan: PlanFree, MaxSize: 1, PaidUntil: at(day)}, now))
}

func TestExtendBy(t *testing.T) {
	require.Equal(t, 30*24*time.Hour, ExtendBy(dec("990"), dec("990")))
	require.Equal(t, 10*24*time.Hour, ExtendBy(dec("1"), dec("3")))
	// 30 days / 7 = 370 285 714 285 714.28… ns: whole microseconds only.
	require.Equal(t, 370285714285*time.Microsecond, ExtendBy(dec("1"), dec("7")))
	require.Equal(t, time.Duration(0), ExtendBy(dec("0"), dec("990")))
	require.Equal(t, time.Duration(0), ExtendBy(dec("-5"), dec("990")))
	// About 292 years is as far as a Duration goes.
	require.Equal(t, maxExtend, ExtendBy(dec("1000000000"), dec("1")))
	require.Equal(t, time.Duration(0), maxExtend%time.Microsecond)
	require.Panics(t, func() { ExtendBy(dec("1"), dec("0")) })
}

func TestRechange(t *testing.T) {
	p := DefaultPrices()
	day := 24 * time.Hour
	s := Subscription{Plan: PlanStandard, MaxSize: 3, PaidUntil: at(15 * day)} // 2985 left

	// 2985 at 9950 a month: 9 days.
	require.Equal(t, *at(9 * day), *p.Rechange(s, PlanStandard, 5, now))
	// 2985 at 990 a month: 90.4545… days = 90 d 39272.727272 s (µs truncated).
	require.Equal(t, *at(90*day + 39272727272*time.Microsecond), *p.Rechange(s, PlanStart, 1, now))
	// 2985 at 1990: 45 days.
	require.Equal(t, *at(45 * day), *p.Rechange(s, PlanStandard, 1, now))
	// ADVANCED (kept by old subscriptions) to STANDARD: 199 days × 2990 / 1990.
	adv := Subscription{Plan: PlanAdvanced, MaxSize: 1, PaidUntil: at(199 * day)}
	require.Equal(t, *at(299 * day), *p.Rechange(adv, PlanStandard, 1, now))

	// Same plan and size: the same paid_until, also for odd times.
	odd := 12*day + 5*time.Hour + 7*time.Minute + 3123456*time.Microsecond
	same := Subscription{Plan: PlanStart, MaxSize: 1, PaidUntil: at(odd)}
	require.Equal(t, *at(odd), *p.Rechange(same, PlanStart, 1, now))
	// Nanoseconds past the microsecond are not kept.
	same.PaidUntil = at(odd + 999)
	require.Equal(t, *at(odd), *p.Rechange(same, PlanStart, 1, now))

	require.Nil(t, p.Rechange(s, PlanFree, 3, now), "FREE has no paid period")
	require.Nil(t, p.Rechange(s, PlanStandard, 0, now), "size 0 gives its value away")

	// No value left: paid_until stays, in a copy.
	ended := Subscription{Plan: PlanStandard, MaxSize: 3, PaidUntil: at(-day)}
	got := p.Rechange(ended, PlanStandard, 5, now)
	require.Equal(t, *ended.PaidUntil, *got)
	require.NotSame(t, ended.PaidUntil, got)
	require.Nil(t, p.Rechange(Subscription{Plan: PlanStart, MaxSize: 1, TestUntil: at(day)}, PlanStandard, 1, now),
		"test period: no paid period, test_until is the app's")
	require.Nil(t, p.Rechange(Subscription{Type: "CONNECTION_TELEGRAM_BOT", Plan: PlanFree, MaxSize: 1}, PlanStart, 1, now))
}

func TestMoveValue(t *testing.T) {
	p := DefaultPrices()
	day := 24 * time.Hour
	value := dec("2985")

	// 2985 at 3980 a month: 22.5 days, after the target's running period.
	target := Subscription{Plan: PlanStandard, MaxSize: 2, PaidUntil: at(5 * day)}
	require.Equal(t, *at(27*day + 12*time.Hour), *p.MoveValue(target, value, now))
	// An ended target period: from now.
	target.PaidUntil = at(-5 * day)
	require.Equal(t, *at(22*day + 12*time.Hour), *p.MoveValue(target, value, now))
	// No period yet (test period): from now.
	target = Subscription{Plan: PlanStart, MaxSize: 1, TestUntil: at(day)}
	require.Equal(t, *at(90*day + 39272727272*time.Microsecond), *p.MoveValue(target, value, now))

	// Nothing to spend, or nothing to spend it on: unchanged, in a copy.
	target = Subscription{Plan: PlanStandard, MaxSize: 2, PaidUntil: at(5 * day)}
	got := p.MoveValue(target, dec("0"), now)
	require.Equal(t, *target.PaidUntil, *got)
	require.NotSame(t, target.PaidUntil, got)
	require.Nil(t, p.MoveValue(Subscription{Type: "CONNECTION_MAX_BOT", Plan: PlanFree, MaxSize: 3}, value, now))
	require.Equal(t, *at(5 * day), *p.MoveValue(Subscription{Plan: PlanStandard, MaxSize: 0, PaidUntil: at(5 * day)}, value, now))

	// A whole move at equal prices carries the time over exactly.
	source := Subscription{Plan: PlanStandard, MaxSize: 2, PaidUntil: at(17*day + 1234567*time.Microsecond)}
	target = Subscription{Plan: PlanStandard, MaxSize: 2, PaidUntil: at(3 * day)}
	require.Equal(t, *at(20*day + 1234567*time.Microsecond), *p.MoveValue(target, p.ValueLeft(source, now), now))
}
