package domain

import (
	"errors"
	"time"
)

// AddMonths adds calendar months in UTC: the same day and time of day, or
// the month's last day when it is shorter (Jan 31 + 1 month = Feb 28 or
// 29). Each call counts from t, so Jan 31 + 2 months is Mar 31, not the
// Mar 28 of two single steps.
func AddMonths(t time.Time, months int32) time.Time {
	t = t.UTC()
	year, month, day := t.Date()
	target := month + time.Month(months) // time.Date normalises the year
	// Day 0 of the month after target is target's last day.
	if last := time.Date(year, target+1, 0, 0, 0, 0, 0, time.UTC).Day(); day > last {
		day = last
	}
	return time.Date(year, target, day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// ApplyPayment applies a paid invoice item to the subscription: plan and
// size become the invoiced ones and paid_until moves by months calendar
// months from max(now, paid_until), or, while an advance is active, from
// max(now - 5 days, the paid_until before the advance): the paid months
// replace the borrowed days instead of coming on top of them, whenever the
// payment comes; the advance is repaid. FREE has
// no paid period: paid_until becomes null. realPayment (an invoice of
// non-zero amount) makes the subscription one that has really been paid,
// which the advance requires; a free invoice is no payment.
func (s *Subscription) ApplyPayment(newPlan Plan, newSize int32, months int32, realPayment bool, now time.Time) {
	base := s.PaidUntil
	repaying := s.Advance.Active()
	if repaying {
		base = s.Advance.base()
		s.Advance.Repaid = true
	}
	s.Plan, s.MaxSize = newPlan, newSize
	if realPayment {
		s.HasPayment = true
	}
	if newPlan == PlanFree {
		s.PaidUntil = nil
		return
	}
	// Without an advance the period runs on from the later of now and
	// paid_until. With one it starts where paid_until was before the
	// advance, so the five days are repaid; paid after the advance ran out,
	// from now less those five days: the borrowed days are repaid, the
	// unpaid time after them is not charged.
	from := now
	if repaying && base != nil {
		from = now.Add(-AdvanceCredit)
	}
	if base != nil && base.After(from) {
		from = *base
	}
	paid := AddMonths(from, months)
	s.PaidUntil = &paid
}

// AdvanceCredit is what an advance adds to paid_until: five days.
const AdvanceCredit = 120 * time.Hour

// ErrAdvanceNotAllowed: the advance conditions are not met (400 22016).
var ErrAdvanceNotAllowed = errors.New("advance not allowed")

// GrantAdvance gives the five days of credit when AdvanceAvailable allows
// it: paid_until moves by AdvanceCredit, and the advance records where
// paid_until was (From) and where it ends (Until).
func (s *Subscription) GrantAdvance(now time.Time) error {
	if !s.AdvanceAvailable(now) {
		return ErrAdvanceNotAllowed
	}
	from := *s.PaidUntil
	until := from.Add(AdvanceCredit)
	s.Advance = Advance{From: &from, Until: &until}
	paid := until
	s.PaidUntil = &paid
	return nil
}

// base is paid_until as it was before the advance. An advance stored
// before From was recorded has only Until, which GrantAdvance always sets
// to From + AdvanceCredit.
func (a Advance) base() *time.Time {
	if a.From != nil {
		return a.From
	}
	if a.Until == nil {
		return nil
	}
	from := a.Until.Add(-AdvanceCredit)
	return &from
}
