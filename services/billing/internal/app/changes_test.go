package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// monthly is a plan's price for size slots, in whole roubles.
func monthly(plan domain.Plan, size int32) int64 {
	return domain.DefaultPrices().Monthly(plan, size).IntPart()
}

// setAdvance gives a subscription an active advance directly in the
// database (from, until).
func (b benv) setAdvance(t *testing.T, id int64, from, until time.Time) {
	t.Helper()
	_, err := b.db.Exec(context.Background(), `UPDATE subscriptions SET advance_from = $2, advance_until = $3, advance_repaid = false WHERE id = $1`,
		id, from, until)
	require.NoError(t, err)
}

// setTest puts a subscription in its test period: test_until later, no
// paid_until.
func (b benv) setTest(t *testing.T, id int64, until time.Time) {
	t.Helper()
	_, err := b.db.Exec(context.Background(), `UPDATE subscriptions SET test_until = $2, paid_until = NULL WHERE id = $1`, id, until)
	require.NoError(t, err)
}

func (b benv) members(t *testing.T, company int64) map[int64][]int64 {
	t.Helper()
	m, err := b.conns.Membership(context.Background(), company)
	require.NoError(t, err)
	for _, ids := range m {
		slices.Sort(ids)
	}
	return m
}

func sizeChange(company, id int64, size int32, preview bool) app.ChangeSize {
	return app.ChangeSize{CompanyID: company, SubscriptionID: id, NewMaxSize: size, Preview: preview}
}

func planChange(company, id int64, plan domain.Plan, preview bool) app.ChangePlan {
	return app.ChangePlan{CompanyID: company, SubscriptionID: id, NewPlan: plan, Preview: preview}
}

func TestBoughtHelper(t *testing.T) {
	// 10 days and 123457 µs at twice the price: half, 61728.5 µs cut to 61728.
	require.Equal(t, 5*day+61728*time.Microsecond, bought(10*day+123457*time.Microsecond, 2, 4))
	// 10 days at 1,990 spent at 990: 20.1010… days.
	require.Equal(t, time.Duration(1736727272727000), bought(10*day, 1990, 990))
}

// TestChangeSizeKeepsTheValuePaid: new_paid_until = now + value left /
// new monthly price, to the microsecond; a preview answers it and changes
// nothing.
func TestChangeSizeKeepsTheValuePaid(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	left := 10*day + 123457*time.Microsecond
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 2, at(now.Add(left)))

	want := now.Add(bought(left, monthly(domain.PlanStandard, 2), monthly(domain.PlanStandard, 4)))
	require.Equal(t, now.Add(5*day+61728*time.Microsecond), want)
	res, err := b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 4, true))
	require.NoError(t, err)
	require.Equal(t, app.ChangeResult{Preview: true, Source: app.Side{ID: sub.ID, Type: whatsapp, OldMaxSize: 2, NewMaxSize: 4,
		OldPlan: domain.PlanStandard, NewPlan: domain.PlanStandard, OldPaid: sub.PaidUntil, NewPaid: &want}}, res)
	require.Equal(t, sub, b.stored(t, 1, sub.ID), "a preview changes nothing")

	res, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 4, false))
	require.NoError(t, err)
	require.False(t, res.Preview)
	require.Equal(t, want, *res.Source.NewPaid)
	got := b.stored(t, 1, sub.ID)
	require.Equal(t, int32(4), got.MaxSize)
	require.Equal(t, want, *got.PaidUntil)

	// Later, back down to one slot: the value left buys four times the
	// time (cut to the microsecond).
	b.clock.Advance(time.Hour + 7*time.Microsecond)
	now = b.clock.Now()
	left = want.Sub(now)
	want = now.Add(bought(left, monthly(domain.PlanStandard, 4), monthly(domain.PlanStandard, 1)))
	require.Equal(t, now.Add(4*left), want)
	res, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 1, false))
	require.NoError(t, err)
	require.Equal(t, want, *res.Source.NewPaid)
	got = b.stored(t, 1, sub.ID)
	require.Equal(t, int32(1), got.MaxSize)
	require.Equal(t, want, *got.PaidUntil)

	// The same size: nothing moves.
	res, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 1, false))
	require.NoError(t, err)
	require.Equal(t, want, *res.Source.NewPaid)
	require.Equal(t, got, b.stored(t, 1, sub.ID))

	// Below the connections held: 22019, until they are taken out.
	c1 := b.conns.Add(1, whatsapp, 0)
	c2 := b.conns.Add(1, whatsapp, 0)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 2, false))
	require.NoError(t, err)
	_, err = b.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: 1, SubscriptionID: sub.ID, ConnectionIDs: []int64{c1, c2}})
	require.NoError(t, err)
	before := b.stored(t, 1, sub.ID)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 1, true))
	apiErr(t, err, apierr.SubscriptionSizeBelowCurrent)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 1, false))
	apiErr(t, err, apierr.SubscriptionSizeBelowCurrent)
	require.Equal(t, before, b.stored(t, 1, sub.ID))

	// No value left (the period ended): paid_until stays.
	ended := now.Add(-time.Hour)
	b.adjust(t, 1, sub.ID, domain.PlanStandard, 2, &ended)
	res, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 3, false))
	require.NoError(t, err)
	require.Equal(t, ended, *res.Source.NewPaid)
	require.Equal(t, ended, *b.stored(t, 1, sub.ID).PaidUntil)
	require.Equal(t, int32(3), b.stored(t, 1, sub.ID).MaxSize)

	// Another company's subscription is unknown.
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(2, sub.ID, 3, false))
	apiErr(t, err, apierr.SubscriptionNotFound)
}

// TestChangePlanKeepsTheValuePaid: the value left is spent at the new
// plan's price; FREE has no paid period; in the test period the plan
// changes and test_until stays.
func TestChangePlanKeepsTheValuePaid(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	left := 10 * day
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(now.Add(left)))

	want := now.Add(bought(left, 1990, 990))
	require.Equal(t, now.Add(1736727272727*time.Microsecond), want)
	res, err := b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStart, true))
	require.NoError(t, err)
	require.Equal(t, app.ChangeResult{Preview: true, Source: app.Side{ID: sub.ID, Type: whatsapp, OldMaxSize: 1, NewMaxSize: 1,
		OldPlan: domain.PlanStandard, NewPlan: domain.PlanStart, OldPaid: sub.PaidUntil, NewPaid: &want}}, res)
	require.Equal(t, sub, b.stored(t, 1, sub.ID), "a preview changes nothing")

	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStart, false))
	require.NoError(t, err)
	got := b.stored(t, 1, sub.ID)
	require.Equal(t, domain.PlanStart, got.Plan)
	require.Equal(t, want, *got.PaidUntil)

	// And back, a little later.
	b.clock.Advance(3*time.Hour + 3*time.Microsecond)
	now = b.clock.Now()
	back := now.Add(bought(want.Sub(now), 990, 1990))
	res, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStandard, false))
	require.NoError(t, err)
	require.Equal(t, back, *res.Source.NewPaid)
	require.Equal(t, back, *b.stored(t, 1, sub.ID).PaidUntil)

	// An ADVANCED subscription of 3 slots moves to STANDARD: 8,970 → 5,970.
	adv := b.subscription(t, 1, telegram, domain.PlanAdvanced, 3, at(now.Add(7*day+time.Microsecond)))
	res, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(1, adv.ID, domain.PlanStandard, false))
	require.NoError(t, err)
	require.Equal(t, now.Add(bought(7*day+time.Microsecond, 8970, 5970)), *res.Source.NewPaid)
	require.Equal(t, *res.Source.NewPaid, *b.stored(t, 1, adv.ID).PaidUntil)

	// To FREE (a bot): no paid period.
	free := b.subscription(t, 1, bot, domain.PlanStandard, 2, at(now.Add(day)))
	res, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(1, free.ID, domain.PlanFree, false))
	require.NoError(t, err)
	require.Nil(t, res.Source.NewPaid)
	got = b.stored(t, 1, free.ID)
	require.Equal(t, domain.PlanFree, got.Plan)
	require.Nil(t, got.PaidUntil)

	// In the test period: the plan changes, test_until stays; a size
	// change is 22015.
	trial := b.ensure(t, 2, whatsapp)
	before := b.stored(t, 2, trial)
	require.True(t, before.InTest(now))
	res, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, trial, domain.PlanStandard, false))
	require.NoError(t, err)
	require.Nil(t, res.Source.NewPaid)
	got = b.stored(t, 2, trial)
	require.Equal(t, domain.PlanStandard, got.Plan)
	require.Equal(t, before.TestUntil, got.TestUntil)
	require.Nil(t, got.PaidUntil)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(2, trial, 3, false))
	apiErr(t, err, apierr.SubscriptionInTest)

	// Plan rules: ADVANCED never, FREE only for bots, START one slot.
	for _, c := range []struct {
		id   int64
		plan domain.Plan
	}{{sub.ID, domain.PlanAdvanced}, {sub.ID, domain.PlanFree}, {adv.ID, domain.PlanStart}} {
		before := b.stored(t, 1, c.id)
		_, err := b.svc.ChangeSubscriptionPlan(ctx, planChange(1, c.id, c.plan, false))
		loc, _, _ := fieldErr(t, err)
		require.Equal(t, `["body","new_subscription_plan"]`, loc, c.plan)
		require.Equal(t, before, b.stored(t, 1, c.id))
	}
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, sub.ID, domain.PlanStandard, false))
	apiErr(t, err, apierr.SubscriptionNotFound)
}

// TestChangeSizeMovesToATarget: size 0 moves the connections and the value
// left to another subscription of the type, which spends it from its own
// paid_until; the source keeps size 0 and no paid period.
func TestChangeSizeMovesToATarget(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	src := b.subscription(t, 1, whatsapp, domain.PlanStandard, 3, at(now.Add(10*day+5*time.Microsecond)))
	s1, s2 := b.conns.Add(1, whatsapp, src.ID), b.conns.Add(1, whatsapp, src.ID)
	tv, err := b.svc.AddSubscription(ctx, app.CreateSubscription{CompanyID: 1, Type: string(whatsapp), Plan: domain.PlanStandard,
		MaxSize: 5, PaidUntil: at(now.Add(3 * day))})
	require.NoError(t, err)
	dst := tv.Subscription
	d1 := b.conns.Add(1, whatsapp, dst.ID)
	membersBefore := b.members(t, 1)

	move := app.ChangeSize{CompanyID: 1, SubscriptionID: src.ID, NewMaxSize: 0, TargetID: &dst.ID, Preview: true}
	// 10 days (and 5 µs) of 3 slots are 6 days (and 3 µs) of 5, after
	// the target's own 3 days.
	wantDst := now.Add(3*day + 6*day + 3*time.Microsecond)
	require.Equal(t, wantDst, now.Add(3*day+bought(10*day+5*time.Microsecond, 5970, 9950)))
	res, err := b.svc.ChangeSubscriptionSize(ctx, move)
	require.NoError(t, err)
	require.Equal(t, app.ChangeResult{Preview: true,
		Source: app.Side{ID: src.ID, Type: whatsapp, OldMaxSize: 3, NewMaxSize: 0, OldPlan: domain.PlanStandard, NewPlan: domain.PlanStandard,
			OldPaid: src.PaidUntil, NewPaid: nil},
		Target: &app.Side{ID: dst.ID, Type: whatsapp, OldMaxSize: 5, NewMaxSize: 5, OldPlan: domain.PlanStandard, NewPlan: domain.PlanStandard,
			OldPaid: dst.PaidUntil, NewPaid: &wantDst}}, res)
	require.Equal(t, src, b.stored(t, 1, src.ID), "a preview changes nothing")
	require.Equal(t, dst, b.stored(t, 1, dst.ID))
	require.Equal(t, membersBefore, b.members(t, 1))

	move.Preview = false
	res, err = b.svc.ChangeSubscriptionSize(ctx, move)
	require.NoError(t, err)
	require.Equal(t, wantDst, *res.Target.NewPaid)
	gotSrc, gotDst := b.stored(t, 1, src.ID), b.stored(t, 1, dst.ID)
	require.Equal(t, int32(0), gotSrc.MaxSize)
	require.Nil(t, gotSrc.PaidUntil)
	require.Equal(t, domain.PlanStandard, gotSrc.Plan)
	require.Equal(t, int32(5), gotDst.MaxSize)
	require.Equal(t, wantDst, *gotDst.PaidUntil)
	want := []int64{s1, s2, d1}
	slices.Sort(want)
	require.Equal(t, map[int64][]int64{dst.ID: want}, b.members(t, 1), "the connections moved")

	// The empty source moves again: no value, no connections, nothing
	// changes at the target.
	res, err = b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 1, SubscriptionID: src.ID, TargetID: &dst.ID})
	require.NoError(t, err)
	require.Equal(t, wantDst, *res.Target.NewPaid)
	require.Equal(t, gotDst, b.stored(t, 1, dst.ID))

	// A target with an ended period spends the value from now.
	src2 := b.subscription(t, 1, telegram, domain.PlanStandard, 1, at(now.Add(2*day)))
	t2v, err := b.svc.AddSubscription(ctx, app.CreateSubscription{CompanyID: 1, Type: string(telegram), Plan: domain.PlanStandard,
		MaxSize: 2, PaidUntil: at(now.Add(-day))})
	require.NoError(t, err)
	res, err = b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 1, SubscriptionID: src2.ID, TargetID: &t2v.ID})
	require.NoError(t, err)
	require.Equal(t, now.Add(day), *res.Target.NewPaid)
	require.Equal(t, now.Add(day), *b.stored(t, 1, t2v.ID).PaidUntil)

	// Refusals.
	src3 := b.subscription(t, 2, whatsapp, domain.PlanStandard, 2, at(now.Add(day)))
	b.conns.Add(2, whatsapp, src3.ID)
	b.conns.Add(2, whatsapp, src3.ID)
	small, err := b.svc.AddSubscription(ctx, app.CreateSubscription{CompanyID: 2, Type: string(whatsapp), Plan: domain.PlanStandard, MaxSize: 2})
	require.NoError(t, err)
	b.conns.Add(2, whatsapp, small.ID) // room for 1, not 2
	otherType := b.ensure(t, 2, telegram)
	otherCompany := dst.ID
	for name, c := range map[string]struct {
		target *int64
		check  func(error)
	}{
		"no target": {nil, func(err error) {
			loc, typ, _ := fieldErr(t, err)
			require.Equal(t, `["body","target_subscription_id"]`, loc)
			require.Equal(t, "missing", typ)
		}},
		"itself": {&src3.ID, func(err error) {
			loc, _, _ := fieldErr(t, err)
			require.Equal(t, `["body","target_subscription_id"]`, loc)
		}},
		"another type": {&otherType, func(err error) {
			loc, _, _ := fieldErr(t, err)
			require.Equal(t, `["body","target_subscription_id"]`, loc)
		}},
		"unknown":         {ptr(int64(999999)), func(err error) { apiErr(t, err, apierr.SubscriptionNotFound) }},
		"another company": {&otherCompany, func(err error) { apiErr(t, err, apierr.SubscriptionNotFound) }},
		"no room":         {&small.ID, func(err error) { apiErr(t, err, apierr.SubscriptionSizeBelowCurrent) }},
	} {
		before := b.members(t, 2)
		_, err := b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 2, SubscriptionID: src3.ID, TargetID: c.target})
		t.Log(name)
		c.check(err)
		require.Equal(t, before, b.members(t, 2), name)
		require.Equal(t, int32(2), b.stored(t, 2, src3.ID).MaxSize, name)
	}
}

// TestChangeErrorOrder: body 422, 404, 22017, 22015, plan 422, 22019
// (billing.md), each shown by a request that breaks it and every later
// rule.
func TestChangeErrorOrder(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()

	// change_size. A START subscription in its test period, with an
	// active advance, holding 3 connections (more than it may).
	sub := b.ensure(t, 1, whatsapp)
	for range 3 {
		b.conns.Add(1, whatsapp, sub)
	}
	b.setAdvance(t, sub, now.Add(-day), now.Add(4*day))
	b.setTest(t, sub, now.Add(day))

	// Body 422 before 404: no target for size 0 of an unknown subscription.
	_, err := b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 1, SubscriptionID: 999999})
	loc, _, _ := fieldErr(t, err)
	require.Equal(t, `["body","target_subscription_id"]`, loc)
	// 404 before 22017: an unknown target.
	_, err = b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 1, SubscriptionID: sub, TargetID: ptr(int64(999999))})
	apiErr(t, err, apierr.SubscriptionNotFound)
	// 22017 before 22015, plan 422 and 22019.
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub, 2, true))
	apiErr(t, err, apierr.SubscriptionAdvanceActive)
	// 22015 before plan 422 and 22019.
	_, err = b.db.Exec(ctx, `UPDATE subscriptions SET advance_repaid = true WHERE id = $1`, sub)
	require.NoError(t, err)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub, 2, true))
	apiErr(t, err, apierr.SubscriptionInTest)
	// Plan 422 before 22019: START cannot have 2 (and 2 is below 3).
	_, err = b.db.Exec(ctx, `UPDATE subscriptions SET test_until = NULL WHERE id = $1`, sub)
	require.NoError(t, err)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub, 2, true))
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","new_max_size"]`, loc)
	// Then 22019.
	_, err = b.db.Exec(ctx, `UPDATE subscriptions SET subscription_plan = 'STANDARD' WHERE id = $1`, sub)
	require.NoError(t, err)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub, 2, true))
	apiErr(t, err, apierr.SubscriptionSizeBelowCurrent)
	// The target's advance counts too.
	tv, err := b.svc.AddSubscription(ctx, app.CreateSubscription{CompanyID: 1, Type: string(whatsapp), Plan: domain.PlanStandard, MaxSize: 9})
	require.NoError(t, err)
	b.setAdvance(t, tv.ID, now.Add(-day), now.Add(4*day))
	_, err = b.svc.ChangeSubscriptionSize(ctx, app.ChangeSize{CompanyID: 1, SubscriptionID: sub, TargetID: &tv.ID})
	apiErr(t, err, apierr.SubscriptionAdvanceActive)

	// change_plan: 404, 22017, plan 422, 22019.
	p := b.ensure(t, 2, whatsapp) // START 1
	b.conns.Add(2, whatsapp, p)
	b.conns.Add(2, whatsapp, p) // 2 held in a size of 1
	b.setAdvance(t, p, now.Add(-day), now.Add(4*day))
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, 999999, domain.PlanAdvanced, true))
	apiErr(t, err, apierr.SubscriptionNotFound)
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, p, domain.PlanAdvanced, true))
	apiErr(t, err, apierr.SubscriptionAdvanceActive)
	_, err = b.db.Exec(ctx, `UPDATE subscriptions SET advance_repaid = true WHERE id = $1`, p)
	require.NoError(t, err)
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, p, domain.PlanAdvanced, true))
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","new_subscription_plan"]`, loc)
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(2, p, domain.PlanStandard, true))
	apiErr(t, err, apierr.SubscriptionSizeBelowCurrent)
}

// TestChangeRacesPay: a plan or size change and a payment of the same
// subscription started at once end as one of the two serial orders, and
// neither fails other than as documented.
func TestChangeRacesPay(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	now := b.clock.Now()
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	paidUntil := now.Add(10 * day)

	type state struct {
		plan domain.Plan
		size int32
		paid time.Time
	}
	type scenario struct {
		name           string
		from           state
		invPlan        domain.Plan
		invSize        int32
		change         func() error
		changeThenPay  state
		payThenChange  state
		payFirstRefuse *apierr.Def // the change's error when it runs after the payment
	}
	st := domain.PlanStandard
	scenarios := []scenario{{
		name: "size", from: state{st, 2, paidUntil}, invPlan: st, invSize: 3,
		change: func() error {
			_, err := b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 4, false))
			return err
		},
		changeThenPay: state{st, 3, domain.AddMonths(now.Add(bought(10*day, 3980, 7960)), 1)},
		payThenChange: state{st, 4, now.Add(bought(domain.AddMonths(paidUntil, 1).Sub(now), 5970, 7960))},
	}, {
		name: "plan", from: state{st, 1, paidUntil}, invPlan: st, invSize: 1,
		change: func() error {
			_, err := b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStart, false))
			return err
		},
		changeThenPay: state{st, 1, domain.AddMonths(now.Add(bought(10*day, 1990, 990)), 1)},
		payThenChange: state{domain.PlanStart, 1, now.Add(bought(domain.AddMonths(paidUntil, 1).Sub(now), 1990, 990))},
	}, {
		name: "plan refused after the payment", from: state{st, 1, paidUntil}, invPlan: st, invSize: 2,
		change: func() error {
			_, err := b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStart, false))
			return err
		},
		changeThenPay:  state{st, 2, domain.AddMonths(now.Add(bought(10*day, 1990, 990)), 1)},
		payThenChange:  state{st, 2, domain.AddMonths(paidUntil, 1)},
		payFirstRefuse: &apierr.RequestValidation,
	}}
	const rounds = 8
	for _, sc := range scenarios {
		seen := map[string]int{}
		for range rounds {
			b.adjust(t, 1, sub.ID, sc.from.plan, sc.from.size, &sc.from.paid)
			inv := b.invoice(t, card(1, 1, subItem(sub.ID, sc.invPlan, sc.invSize)))
			// Both wait for the subscription's lock; who gets it first is
			// up to the server.
			errs := b.racer().race(t, 2, `SELECT 1 FROM subscriptions WHERE id = $1 FOR UPDATE`, []any{sub.ID}, func(i int) error {
				if i == 0 {
					_, err := b.svc.PayInvoice(ctx, inv.ID)
					return err
				}
				return sc.change()
			})
			require.NoError(t, errs[0], sc.name)
			got := b.stored(t, 1, sub.ID)
			gs := state{got.Plan, got.MaxSize, *got.PaidUntil}
			switch {
			case errs[1] != nil:
				require.NotNil(t, sc.payFirstRefuse, "%s: %v", sc.name, errs[1])
				apiErr(t, errs[1], *sc.payFirstRefuse)
				require.Equal(t, sc.payThenChange, gs, sc.name)
				seen["pay, change refused"]++
			case gs == sc.changeThenPay:
				seen["change, pay"]++
			case gs == sc.payThenChange && sc.payFirstRefuse == nil:
				seen["pay, change"]++
			default:
				t.Fatalf("%s: %+v is neither serial order (change then pay %+v, pay then change %+v)", sc.name, gs, sc.changeThenPay, sc.payThenChange)
			}
			require.Equal(t, []string{"->new", "new>paid"}, b.transitions(t, inv.ID))
		}
		t.Logf("%s: %v", sc.name, seen)
	}
}

// TestAdvanceRepaidByTheNextPayment: the advance needs a real payment and
// at most two days left; it adds 120 hours once; the next payment repays
// it: its top-up starts from paid_until before the advance.
func TestAdvanceRepaidByTheNextPayment(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	t0 := time.Date(2031, 1, 10, 12, 0, 0, 0, time.UTC)
	b.clock.Set(t0)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, at(t0.Add(day)))

	// No real payment yet (the operator's paid_until is none).
	_, err := b.svc.GrantAdvance(ctx, 1, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)

	b.adjust(t, 1, sub.ID, domain.PlanStandard, 1, nil)
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	end := time.Date(2031, 2, 10, 12, 0, 0, 0, time.UTC)
	require.Equal(t, end, *b.stored(t, 1, sub.ID).PaidUntil)

	// More than two days left.
	b.clock.Set(end.Add(-48*time.Hour - time.Microsecond))
	_, err = b.svc.GrantAdvance(ctx, 1, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	b.clock.Set(end.Add(-48 * time.Hour))
	list, err := b.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.True(t, list[0].AdvanceAvailable)

	b.clock.Set(end.Add(-day))
	v, err := b.svc.GrantAdvance(ctx, 1, sub.ID)
	require.NoError(t, err)
	require.Equal(t, end.Add(120*time.Hour), *v.PaidUntil)
	require.True(t, v.AdvanceActive)
	require.False(t, v.AdvanceAvailable)
	got := b.stored(t, 1, sub.ID)
	require.Equal(t, end, *got.Advance.From)
	require.Equal(t, end.Add(120*time.Hour), *got.Advance.Until)
	_, err = b.svc.GrantAdvance(ctx, 1, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	_, err = b.svc.ChangeSubscriptionSize(ctx, sizeChange(1, sub.ID, 2, true))
	apiErr(t, err, apierr.SubscriptionAdvanceActive)
	_, err = b.svc.ChangeSubscriptionPlan(ctx, planChange(1, sub.ID, domain.PlanStart, true))
	apiErr(t, err, apierr.SubscriptionAdvanceActive)

	// The next payment, before the old end: a month from the old end,
	// not from the advance's.
	next := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	decEq(t, "1990", next.Amount)
	_, err = b.svc.PayInvoice(ctx, next.ID)
	require.NoError(t, err)
	got = b.stored(t, 1, sub.ID)
	require.Equal(t, time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC), *got.PaidUntil)
	require.True(t, got.Advance.Repaid)
	require.False(t, got.Advance.Active())
}

// TestAdvanceUsedThenPaid: a payment that comes while the advance's days
// are being used repays them: billing.md "the next payment repays it (its
// top-up starts from the paid_until before the advance)".
func TestAdvanceUsedThenPaid(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	t0 := time.Date(2031, 1, 10, 12, 0, 0, 0, time.UTC)
	b.clock.Set(t0)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	_, err := b.svc.PayInvoice(ctx, b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1))).ID)
	require.NoError(t, err)
	end := time.Date(2031, 2, 10, 12, 0, 0, 0, time.UTC)
	b.clock.Set(end.Add(-day))
	_, err = b.svc.GrantAdvance(ctx, 1, sub.ID)
	require.NoError(t, err)

	// Three of the five days used.
	b.clock.Set(end.Add(3 * day))
	inv := b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	got := b.stored(t, 1, sub.ID)
	require.True(t, got.Advance.Repaid)
	require.Equal(t, time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC), *got.PaidUntil,
		"a month from the paid_until before the advance: the used advance days are repaid")

	// Paid ten days after the advance ran out (five days past its end):
	// the five borrowed days are repaid, the unpaid days after them are
	// not charged: a month from now less five days.
	_, err = b.svc.GrantAdvance(ctx, 1, sub.ID)
	require.ErrorContains(t, err, "advance", "more than two days left: no advance")
	b.clock.Set(time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC))
	_, err = b.svc.GrantAdvance(ctx, 1, sub.ID)
	require.NoError(t, err) // paid_until 2031-03-15 12:00
	late := time.Date(2031, 3, 25, 12, 0, 0, 0, time.UTC)
	b.clock.Set(late)
	inv = b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1)))
	_, err = b.svc.PayInvoice(ctx, inv.ID)
	require.NoError(t, err)
	got = b.stored(t, 1, sub.ID)
	require.Equal(t, time.Date(2031, 4, 20, 12, 0, 0, 0, time.UTC), *got.PaidUntil)
	require.False(t, got.Advance.Active())
}

// TestConcurrentAdvanceGrantsOnce: ten grants at once: one is granted,
// the rest are 22016; paid_until moves by 120 hours once.
func TestConcurrentAdvanceGrantsOnce(t *testing.T) {
	const n = 10
	ctx := context.Background()
	b := newBillingEnv(t)
	sub := b.subscription(t, 1, whatsapp, domain.PlanStandard, 1, nil)
	_, err := b.svc.PayInvoice(ctx, b.invoice(t, card(1, 1, subItem(sub.ID, domain.PlanStandard, 1))).ID)
	require.NoError(t, err)
	paid := *b.stored(t, 1, sub.ID).PaidUntil
	b.clock.Set(paid.Add(-day))

	errs := b.racer().race(t, n, `SELECT 1 FROM subscriptions WHERE id = $1 FOR UPDATE`, []any{sub.ID}, func(int) error {
		_, err := b.svc.GrantAdvance(ctx, 1, sub.ID)
		return err
	})
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	}
	require.Equal(t, 1, ok)
	got := b.stored(t, 1, sub.ID)
	require.Equal(t, paid.Add(120*time.Hour), *got.PaidUntil)
	require.Equal(t, paid, *got.Advance.From)
}
