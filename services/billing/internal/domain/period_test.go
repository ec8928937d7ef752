package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(y int, m time.Month, d, h, mi, s, ns int) time.Time {
	return time.Date(y, m, d, h, mi, s, ns, time.UTC)
}

func TestAddMonths(t *testing.T) {
	msk := time.FixedZone("MSK", 3*60*60)
	cases := []struct {
		name   string
		from   time.Time
		months int32
		want   time.Time
	}{
		{"plain", utc(2025, 6, 1, 12, 0, 0, 0), 1, utc(2025, 7, 1, 12, 0, 0, 0)},
		{"Jan 31 to Feb 28", utc(2025, 1, 31, 10, 0, 0, 0), 1, utc(2025, 2, 28, 10, 0, 0, 0)},
		{"Jan 31 to Feb 29 in a leap year", utc(2024, 1, 31, 10, 0, 0, 0), 1, utc(2024, 2, 29, 10, 0, 0, 0)},
		{"Feb 29 + a year", utc(2024, 2, 29, 0, 0, 0, 0), 12, utc(2025, 2, 28, 0, 0, 0, 0)},
		{"Feb 29 + 4 years", utc(2024, 2, 29, 0, 0, 0, 0), 48, utc(2028, 2, 29, 0, 0, 0, 0)},
		{"2100 is not leap", utc(2100, 1, 31, 0, 0, 0, 0), 1, utc(2100, 2, 28, 0, 0, 0, 0)},
		{"2000 is leap", utc(2000, 1, 30, 0, 0, 0, 0), 1, utc(2000, 2, 29, 0, 0, 0, 0)},
		{"Jan 31 + 2 counts from Jan 31", utc(2025, 1, 31, 0, 0, 0, 0), 2, utc(2025, 3, 31, 0, 0, 0, 0)},
		{"Aug 31 to Sep 30", utc(2025, 8, 31, 23, 59, 59, 999999999), 1, utc(2025, 9, 30, 23, 59, 59, 999999999)},
		{"Dec to Jan", utc(2024, 12, 15, 8, 30, 0, 0), 1, utc(2025, 1, 15, 8, 30, 0, 0)},
		{"Dec 31 + 1", utc(2024, 12, 31, 0, 0, 0, 0), 1, utc(2025, 1, 31, 0, 0, 0, 0)},
		{"Nov 30 + 3 into a leap Feb", utc(2023, 11, 30, 0, 0, 0, 0), 3, utc(2024, 2, 29, 0, 0, 0, 0)},
		{"Dec 31 + 12", utc(2024, 12, 31, 6, 0, 0, 0), 12, utc(2025, 12, 31, 6, 0, 0, 0)},
		{"Mar 31 + 6", utc(2025, 3, 31, 0, 0, 0, 0), 6, utc(2025, 9, 30, 0, 0, 0, 0)},
		{"zero months", utc(2025, 1, 31, 0, 0, 0, 0), 0, utc(2025, 1, 31, 0, 0, 0, 0)},
		{"backwards", utc(2025, 3, 31, 0, 0, 0, 0), -1, utc(2025, 2, 28, 0, 0, 0, 0)},
		// Feb 1 01:00 in Moscow is Jan 31 22:00 UTC: months count in UTC.
		{"UTC, not the zone", time.Date(2025, 2, 1, 1, 0, 0, 0, msk), 1, utc(2025, 2, 28, 22, 0, 0, 0)},
	}
	for _, c := range cases {
		got := AddMonths(c.from, c.months)
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, time.UTC, got.Location(), c.name)
	}
}

func TestApplyPayment(t *testing.T) {
	day := 24 * time.Hour

	// A running period extends from its end.
	s := Subscription{Plan: PlanStandard, MaxSize: 3, PaidUntil: at(10 * day)}
	s.ApplyPayment(PlanStandard, 5, 1, true, now)
	require.Equal(t, utc(2025, 7, 11, 12, 0, 0, 0), *s.PaidUntil)
	require.Equal(t, int32(5), s.MaxSize)
	require.True(t, s.HasPayment)

	// An ended one, or none, from now.
	s = Subscription{Plan: PlanStart, MaxSize: 1, PaidUntil: at(-10 * day), TestUntil: at(day)}
	s.ApplyPayment(PlanStandard, 2, 3, true, now)
	require.Equal(t, utc(2025, 9, 1, 12, 0, 0, 0), *s.PaidUntil)
	require.Equal(t, PlanStandard, s.Plan)
	s = Subscription{Plan: PlanStart, MaxSize: 1}
	s.ApplyPayment(PlanStart, 1, 12, true, now)
	require.Equal(t, utc(2026, 6, 1, 12, 0, 0, 0), *s.PaidUntil)

	// A free invoice is no payment, but a payment once made stays made.
	s = Subscription{Plan: PlanStart, MaxSize: 1}
	s.ApplyPayment(PlanStart, 1, 1, false, now)
	require.False(t, s.HasPayment)
	s.HasPayment = true
	s.ApplyPayment(PlanStart, 1, 1, false, now)
	require.True(t, s.HasPayment)

	// FREE has no paid period.
	s = Subscription{Type: "CONNECTION_TELEGRAM_BOT", Plan: PlanStart, MaxSize: 1, PaidUntil: at(day)}
	s.ApplyPayment(PlanFree, 3, 1, false, now)
	require.Nil(t, s.PaidUntil)
	require.Equal(t, PlanFree, s.Plan)
	require.Equal(t, int32(3), s.MaxSize)
	require.True(t, s.Paid(now))

	// The result does not share memory with the old paid_until.
	old := *at(day)
	s = Subscription{Plan: PlanStart, MaxSize: 1, PaidUntil: &old}
	s.ApplyPayment(PlanStart, 1, 1, true, now)
	require.Equal(t, *at(day), old)
}

func TestAdvanceThenPayment(t *testing.T) {
	day := 24 * time.Hour
	s := Subscription{Plan: PlanStandard, MaxSize: 2, HasPayment: true, PaidUntil: at(day)}
	require.NoError(t, s.GrantAdvance(now))
	require.Equal(t, *at(6 * day), *s.PaidUntil)
	require.Equal(t, *at(day), *s.Advance.From)
	require.Equal(t, *at(6 * day), *s.Advance.Until)
	require.True(t, s.Advance.Active())
	require.False(t, s.AdvanceAvailable(now.Add(5*day)), "one advance at a time")
	require.ErrorIs(t, s.GrantAdvance(now.Add(5*day)), ErrAdvanceNotAllowed)

	// From and Until are copies: moving paid_until leaves them be.
	*s.PaidUntil = s.PaidUntil.Add(time.Hour)
	require.Equal(t, *at(6 * day), *s.Advance.Until)

	// Paying soon after the advance: a month from where paid_until was
	// before it (June 2), not from its end (June 7).
	s.ApplyPayment(PlanStandard, 2, 1, true, now.Add(12*time.Hour))
	require.Equal(t, utc(2025, 7, 2, 12, 0, 0, 0), *s.PaidUntil)
	require.True(t, s.Advance.Repaid)
	require.False(t, s.Advance.Active())

	// Paying on a borrowed day: still from where paid_until was before
	// the advance (June 2): the borrowed days are repaid.
	s = Subscription{Plan: PlanStandard, MaxSize: 1, HasPayment: true, PaidUntil: at(day)}
	require.NoError(t, s.GrantAdvance(now))
	s.ApplyPayment(PlanStandard, 1, 1, true, now.Add(3*day))
	require.Equal(t, utc(2025, 7, 2, 12, 0, 0, 0), *s.PaidUntil)

	s = Subscription{Plan: PlanStandard, MaxSize: 1, HasPayment: true, PaidUntil: at(2 * day)}
	require.NoError(t, s.GrantAdvance(now))
	// After the borrowed days ran out (June 8), paid on June 11: from now
	// less the five borrowed days (June 6), not charging June 8 to 11.
	s.ApplyPayment(PlanStandard, 1, 3, true, now.Add(10*day))
	require.Equal(t, utc(2025, 9, 6, 12, 0, 0, 0), *s.PaidUntil)
	require.True(t, s.Advance.Repaid)

	// An advance stored before From was recorded: Until − 5 days.
	s = Subscription{Plan: PlanStandard, MaxSize: 1, HasPayment: true, PaidUntil: at(5 * day), Advance: Advance{Until: at(5 * day)}}
	s.ApplyPayment(PlanStandard, 1, 1, true, now)
	require.Equal(t, utc(2025, 7, 1, 12, 0, 0, 0), *s.PaidUntil)

	// A repaid advance is history: the next payment counts from paid_until.
	s = Subscription{Plan: PlanStandard, MaxSize: 1, HasPayment: true, PaidUntil: at(5 * day), Advance: Advance{From: at(-30 * day), Until: at(-25 * day), Repaid: true}}
	s.ApplyPayment(PlanStandard, 1, 1, true, now)
	require.Equal(t, utc(2025, 7, 6, 12, 0, 0, 0), *s.PaidUntil)
}

func TestGrantAdvanceRefused(t *testing.T) {
	for name, s := range map[string]Subscription{
		"free plan":      {Plan: PlanFree, HasPayment: true, PaidUntil: at(time.Hour)},
		"never paid":     {Plan: PlanStart, PaidUntil: at(time.Hour)},
		"no paid period": {Plan: PlanStart, HasPayment: true},
		"too early":      {Plan: PlanStart, HasPayment: true, PaidUntil: at(AdvanceWindow + time.Nanosecond)},
		"ended":          {Plan: PlanStart, HasPayment: true, PaidUntil: at(0)},
		"unrepaid":       {Plan: PlanStart, HasPayment: true, PaidUntil: at(time.Hour), Advance: Advance{Until: at(-time.Hour)}},
	} {
		before := s
		require.ErrorIs(t, s.GrantAdvance(now), ErrAdvanceNotAllowed, name)
		require.Equal(t, before, s, name+": nothing changes")
	}
	s := Subscription{Plan: PlanStart, HasPayment: true, PaidUntil: at(AdvanceWindow)}
	require.NoError(t, s.GrantAdvance(now), "exactly 48h left")
	require.Equal(t, *at(AdvanceWindow + AdvanceCredit), *s.PaidUntil)
}
