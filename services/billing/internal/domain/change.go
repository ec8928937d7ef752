package domain

import (
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// A plan or size change keeps the money already paid and recomputes the
// time it buys (billing.md "Plan and size changes"): the value left of the
// paid period is spent at the new monthly price.

// ValuePlaces is the precision of ValueLeft: 20 decimal places of a
// rouble. The exact value is a fraction with a factor 3 in its
// denominator, so it must be cut somewhere; it is only ever turned back
// into time (ExtendBy), where 20 places are off by at most 0.5e-20 RUB,
// which is under 0.002 ns even at a monthly price of one kopeck. ExtendBy
// rounds to the nanosecond, so converting value to time at the rate it was
// computed at gives back exactly the time it came from. Twelve places
// would be off by up to 1.3 ns at START's 990 RUB, enough to lose a
// microsecond of it.
const ValuePlaces = 20

// ValueLeft is what is left of the paid period at now, in money at the
// subscription's own monthly price: remaining days × Monthly / 30, not
// rounded to kopecks (ValuePlaces). 0 when nothing is left, and for FREE.
func (p Prices) ValueLeft(s Subscription, now time.Time) decimal.Decimal {
	return prorate(p.Monthly(s.Plan, s.MaxSize), s.remainingNanos(now), ValuePlaces)
}

// maxExtend is the longest time ExtendBy gives: the largest Duration in
// whole microseconds, about 292 years.
const maxExtend = time.Duration(math.MaxInt64) / time.Microsecond * time.Microsecond

// ExtendBy is the time value buys at a monthly rate: value / monthly × 30
// days, rounded half up to the nanosecond (which absorbs ValueLeft's
// rounding) and then truncated to whole microseconds, which is what
// PostgreSQL keeps: cutting down never gives time that was not paid for.
// It stops at about 292 years, the longest Duration. monthly must be
// positive: it panics otherwise, like a division by zero.
func ExtendBy(value, monthly decimal.Decimal) time.Duration {
	if !monthly.IsPositive() {
		panic("domain.ExtendBy: monthly price must be positive")
	}
	if !value.IsPositive() {
		return 0
	}
	nanos := value.Mul(pricingMonthNanos).DivRound(monthly, 0)
	if nanos.GreaterThan(decimal.NewFromInt(int64(maxExtend))) {
		return maxExtend
	}
	return time.Duration(nanos.IntPart()).Truncate(time.Microsecond)
}

// Rechange is paid_until after s changes to newPlan and newSize at now:
// the value left is spent from now at the new monthly price. Without value
// left (no paid period, or it has ended) paid_until stays. FREE has no
// paid period: nil. Size 0 is the source of a move: its value goes to the
// target (MoveValue) and it keeps nothing: nil. A new plan without a
// positive price (misconfigured) has no rate to spend value at: unchanged.
// The result never shares memory with s.
func (p Prices) Rechange(s Subscription, newPlan Plan, newSize int32, now time.Time) *time.Time {
	if newPlan == PlanFree || newSize == 0 {
		return nil
	}
	value := p.ValueLeft(s, now)
	monthly := p.Monthly(newPlan, newSize)
	if !value.IsPositive() || !monthly.IsPositive() {
		return clone(s.PaidUntil)
	}
	paid := now.Add(ExtendBy(value, monthly))
	return &paid
}

// MoveValue is the target's paid_until after it receives value (the value
// left of a source that moves to it): value bought at the target's own
// monthly price, from max(now, its paid_until). A FREE or empty target has
// no price to spend value at, and value 0 buys nothing: unchanged. The
// result never shares memory with target.
func (p Prices) MoveValue(target Subscription, value decimal.Decimal, now time.Time) *time.Time {
	monthly := p.Monthly(target.Plan, target.MaxSize)
	if !value.IsPositive() || !monthly.IsPositive() {
		return clone(target.PaidUntil)
	}
	from := now
	if after(target.PaidUntil, now) {
		from = *target.PaidUntil
	}
	paid := from.Add(ExtendBy(value, monthly))
	return &paid
}

func clone(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
