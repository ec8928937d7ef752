package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time {
	t := now.Add(d)
	return &t
}

func TestSubscriptionTypes(t *testing.T) {
	types := SubscriptionTypes()
	require.Len(t, types, 19)
	for _, s := range []string{"CONNECTION_WHATSAPP", "CONNECTION_TELEGRAM_BOT", "CONNECTION_MAX_PERSONAL", "CONNECTION_KEEPZ", "CONNECTION_ODNOKLASSNIKI"} {
		got, ok := ParseSubscriptionType(s)
		require.True(t, ok, s)
		require.Equal(t, SubscriptionType(s), got)
	}
	for _, s := range []string{"", "CONNECTION_", "CONNECTION_AMOCRM", "CONNECTION_BITRIX24", "connection_whatsapp", "WHATSAPP", "CONNECTION_WHATSAPP "} {
		_, ok := ParseSubscriptionType(s)
		require.False(t, ok, s)
	}
}

func TestPlanValid(t *testing.T) {
	for _, p := range []Plan{PlanFree, PlanStart, PlanStandard, PlanAdvanced} {
		require.True(t, p.Valid(), p)
	}
	require.False(t, Plan("").Valid())
	require.False(t, Plan("start").Valid())
}

func TestPaid(t *testing.T) {
	cases := []struct {
		name       string
		paid, test *time.Time
		want       bool
	}{
		{"nothing", nil, nil, false},
		{"paid period", at(time.Hour), nil, true},
		{"test period", nil, at(time.Hour), true},
		{"both ended", at(-time.Hour), at(-time.Hour), false},
		{"paid ended, test running", at(-time.Hour), at(time.Second), true},
		{"test ended, paid running", at(time.Second), at(-time.Hour), true},
		// The period ends at its instant: paid_until == now is not paid.
		{"ends now", at(0), at(0), false},
	}
	for _, c := range cases {
		s := Subscription{Plan: PlanStandard, PaidUntil: c.paid, TestUntil: c.test}
		require.Equal(t, c.want, s.Paid(now), c.name)
	}
	// FREE counts as paid with paid_until null.
	require.True(t, Subscription{Plan: PlanFree}.Paid(now))
}

// PaidThrough is the instant Paid turns false by time: Paid holds at every
// moment before it and not at it.
func TestPaidThrough(t *testing.T) {
	cases := []struct {
		name       string
		paid, test *time.Time
		want       *time.Time
	}{
		{"nothing", nil, nil, nil},
		{"paid period", at(time.Hour), nil, at(time.Hour)},
		{"test period", nil, at(time.Hour), at(time.Hour)},
		{"both ended", at(-time.Hour), at(-time.Hour), nil},
		{"paid ended, test running", at(-time.Hour), at(time.Second), at(time.Second)},
		{"test ended, paid running", at(time.Second), at(-time.Hour), at(time.Second)},
		{"both running, test later", at(time.Minute), at(time.Hour), at(time.Hour)},
		{"both running, paid later", at(time.Hour), at(time.Minute), at(time.Hour)},
		{"ends now", at(0), at(0), nil},
	}
	for _, c := range cases {
		s := Subscription{Plan: PlanStandard, PaidUntil: c.paid, TestUntil: c.test}
		got := s.PaidThrough(now)
		require.Equal(t, c.want, got, c.name)
		if got != nil {
			require.True(t, s.Paid(got.Add(-time.Nanosecond)), c.name)
			require.False(t, s.Paid(*got), c.name)
		}
	}
	// FREE does not end by time, even with dates past.
	require.Nil(t, Subscription{Plan: PlanFree, PaidUntil: at(-time.Hour)}.PaidThrough(now))
}

func TestAdvanceActive(t *testing.T) {
	require.False(t, Advance{}.Active())
	require.True(t, Advance{Until: at(5 * 24 * time.Hour)}.Active())
	// An unrepaid advance whose five days are over is still a debt.
	require.True(t, Advance{Until: at(-time.Hour)}.Active())
	require.False(t, Advance{Until: at(time.Hour), Repaid: true}.Active())
}

func TestAdvanceAvailable(t *testing.T) {
	ok := Subscription{Plan: PlanStandard, HasPayment: true, PaidUntil: at(24 * time.Hour)}
	require.True(t, ok.AdvanceAvailable(now))

	cases := map[string]func(*Subscription){
		"free plan":          func(s *Subscription) { s.Plan = PlanFree },
		"never paid":         func(s *Subscription) { s.HasPayment = false },
		"no paid period":     func(s *Subscription) { s.PaidUntil = nil },
		"more than 48h left": func(s *Subscription) { s.PaidUntil = at(48*time.Hour + time.Nanosecond) },
		"unrepaid advance":   func(s *Subscription) { s.Advance = Advance{Until: at(time.Hour)} },
		// An ended period has no days left to borrow against.
		"ends now":     func(s *Subscription) { s.PaidUntil = at(0) },
		"period ended": func(s *Subscription) { s.PaidUntil = at(-time.Hour) },
	}
	for name, change := range cases {
		s := ok
		change(&s)
		require.False(t, s.AdvanceAvailable(now), name)
	}

	for name, s := range map[string]Subscription{
		"exactly 48h left":     {Plan: PlanStart, HasPayment: true, PaidUntil: at(48 * time.Hour)},
		"a nanosecond left":    {Plan: PlanStart, HasPayment: true, PaidUntil: at(time.Nanosecond)},
		"advanced plan counts": {Plan: PlanAdvanced, HasPayment: true, PaidUntil: at(time.Hour)},
		"advance repaid":       {Plan: PlanStandard, HasPayment: true, PaidUntil: at(time.Hour), Advance: Advance{Until: at(-time.Hour), Repaid: true}},
	} {
		require.True(t, s.AdvanceAvailable(now), name)
	}
}

func TestCheckSize(t *testing.T) {
	require.NoError(t, CheckSize(PlanStart, 1, 0))
	require.NoError(t, CheckSize(PlanStart, 1, 1))
	require.ErrorIs(t, CheckSize(PlanStart, 2, 0), ErrStartSize)
	require.ErrorIs(t, CheckSize(PlanStart, 0, 0), ErrStartSize)
	require.NoError(t, CheckSize(PlanStandard, 0, 0))
	require.NoError(t, CheckSize(PlanStandard, 5, 5))
	require.ErrorIs(t, CheckSize(PlanStandard, 4, 5), ErrBelowInUse)
	require.ErrorIs(t, CheckSize(PlanFree, 0, 1), ErrBelowInUse)
}

func TestCheckPlanFor(t *testing.T) {
	const bot, maxBot, wa = SubscriptionType("CONNECTION_TELEGRAM_BOT"), SubscriptionType("CONNECTION_MAX_BOT"), SubscriptionType("CONNECTION_WHATSAPP")
	cases := []struct {
		plan Plan
		typ  SubscriptionType
		size int32
		want error
	}{
		{PlanStart, wa, 1, nil},
		{PlanStart, wa, 0, nil}, // the source of a move keeps its plan
		{PlanStart, wa, 2, ErrStartSize},
		{PlanStandard, wa, 100, nil},
		{PlanFree, bot, 3, nil},
		{PlanFree, maxBot, 1, nil},
		{PlanFree, wa, 1, ErrFreeNotBot},
		{PlanFree, "CONNECTION_MAX_PERSONAL", 1, ErrFreeNotBot},
		{PlanAdvanced, wa, 1, ErrPlanNotInvoiceable},
		{PlanAdvanced, bot, 1, ErrPlanNotInvoiceable},
		{"GOLD", wa, 1, ErrUnknownPlan},
	}
	for _, c := range cases {
		err := CheckPlanFor(c.plan, c.typ, c.size)
		if c.want == nil {
			require.NoError(t, err, "%s %s %d", c.plan, c.typ, c.size)
		} else {
			require.ErrorIs(t, err, c.want, "%s %s %d", c.plan, c.typ, c.size)
		}
	}
}

func TestApply(t *testing.T) {
	plan := PlanStandard
	size := int32(3)
	s := Subscription{Plan: PlanStart, MaxSize: 1, TestUntil: at(time.Hour)}
	require.NoError(t, s.Apply(Adjustment{Plan: &plan, MaxSize: &size, PaidUntil: at(24 * time.Hour), ClearTestUntil: true}, 1))
	require.Equal(t, PlanStandard, s.Plan)
	require.Equal(t, int32(3), s.MaxSize)
	require.Equal(t, *at(24 * time.Hour), *s.PaidUntil)
	require.Nil(t, s.TestUntil)

	// Absent fields stay.
	require.NoError(t, s.Apply(Adjustment{}, 3))
	require.Equal(t, int32(3), s.MaxSize)
	require.NotNil(t, s.PaidUntil)

	require.NoError(t, s.Apply(Adjustment{ClearPaidUntil: true, TestUntil: at(time.Minute)}, 0))
	require.Nil(t, s.PaidUntil)
	require.Equal(t, *at(time.Minute), *s.TestUntil)

	// Back to START without shrinking the size breaks the START rule.
	start := PlanStart
	require.ErrorIs(t, s.Apply(Adjustment{Plan: &start}, 0), ErrStartSize)

	smaller := int32(1)
	s = Subscription{Plan: PlanStandard, MaxSize: 3}
	require.ErrorIs(t, s.Apply(Adjustment{MaxSize: &smaller}, 2), ErrBelowInUse)
}

func TestFirstDuplicate(t *testing.T) {
	require.Equal(t, -1, FirstDuplicate(nil))
	require.Equal(t, -1, FirstDuplicate([]int64{1, 2, 3}))
	require.Equal(t, 2, FirstDuplicate([]int64{4, 5, 4, 5}))
	require.Equal(t, 1, FirstDuplicate([]int64{7, 7}))
}
