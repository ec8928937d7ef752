package app_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

const (
	testPeriod = 72 * time.Hour
	whatsapp   = domain.SubscriptionType("CONNECTION_WHATSAPP")
	telegram   = domain.SubscriptionType("CONNECTION_TELEGRAM")
	// knownCompanies: identity knows the companies 1..knownCompanies.
	knownCompanies = 1000
)

type env struct {
	svc       *app.Service
	conns     *apptest.Connections
	companies *apptest.Companies
	clock     *apptest.Clock
	db        *pgxpool.Pool
}

func newEnv(t *testing.T) env {
	t.Helper()
	return envOn(t, pgtest.New(t, migrations.FS))
}

func envOn(t *testing.T, db *pgxpool.Pool) env {
	t.Helper()
	e := env{conns: apptest.NewConnections(), companies: apptest.NewCompanies(knownCompanies), clock: apptest.NewClock(), db: db}
	e.svc = app.New(postgres.New(db), e.conns, e.companies, app.Config{TestPeriod: testPeriod, Now: e.clock.Now})
	return e
}

// ensure creates (or finds) a subscription and answers its id.
func (e env) ensure(t *testing.T, company int64, typ domain.SubscriptionType) int64 {
	t.Helper()
	i, err := e.svc.EnsureSubscription(context.Background(), company, string(typ))
	require.NoError(t, err)
	return i.ID
}

func ptr[T any](v T) *T { return &v }

// apiErr asserts err is the catalogue error def.
func apiErr(t *testing.T, err error, def apierr.Def) *apierr.Error {
	t.Helper()
	require.Error(t, err)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
	require.Equal(t, def.Status, e.Status)
	return e
}

// fieldErr asserts err is a 422 and answers its one field error, with the
// location as JSON (["body","connections",1]) as the client reads it.
func fieldErr(t *testing.T, err error) (location, typ, message string) {
	t.Helper()
	e := apiErr(t, err, apierr.RequestValidation)
	b, err := json.Marshal(e.Detail)
	require.NoError(t, err)
	var d struct{ Errors []apierr.FieldError }
	require.NoError(t, json.Unmarshal(b, &d))
	require.Len(t, d.Errors, 1)
	loc, err := json.Marshal(d.Errors[0].Location)
	require.NoError(t, err)
	return string(loc), d.Errors[0].Type, d.Errors[0].Message
}

func TestEnsureCreatesAStartSubscriptionOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)

	first, err := e.svc.EnsureSubscription(ctx, 7, "CONNECTION_WHATSAPP")
	require.NoError(t, err)
	require.NotZero(t, first.ID)
	require.Equal(t, int64(7), first.CompanyID)
	require.Equal(t, whatsapp, first.Type)
	require.Equal(t, domain.PlanStart, first.Plan)
	require.Equal(t, int32(1), first.MaxSize)
	require.Nil(t, first.PaidUntil)
	require.NotNil(t, first.TestUntil)
	require.True(t, e.clock.Now().Add(testPeriod).Equal(*first.TestUntil), "%v", first.TestUntil)
	require.True(t, first.Paid, "in its test period")

	// Later calls find it and change nothing, even after time passed.
	e.clock.Advance(time.Hour)
	again, err := e.svc.EnsureSubscription(ctx, 7, "CONNECTION_WHATSAPP")
	require.NoError(t, err)
	require.Equal(t, first.Subscription, again.Subscription)

	// Another type, another company: other subscriptions.
	require.NotEqual(t, first.ID, e.ensure(t, 7, telegram))
	require.NotEqual(t, first.ID, e.ensure(t, 8, whatsapp))

	for _, bad := range []string{"", "CONNECTION_AMOCRM", "connection_whatsapp", "WHATSAPP"} {
		_, err := e.svc.EnsureSubscription(ctx, 7, bad)
		loc, typ, _ := fieldErr(t, err)
		require.Equal(t, `["body","subscription_type"]`, loc, bad)
		require.Equal(t, "value_error", typ)
	}
	_, err = e.svc.EnsureSubscription(ctx, 0, "CONNECTION_WHATSAPP")
	loc, _, _ := fieldErr(t, err)
	require.Equal(t, `["body","company_id"]`, loc)
}

func TestParallelEnsuresMakeOneSubscription(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const n = 20
	ids := make([]int64, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			info, err := e.svc.EnsureSubscription(ctx, 42, "CONNECTION_TELEGRAM_BOT")
			ids[i], errs[i] = info.ID, err
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], ids[i])
	}
	var rows int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT count(*) FROM subscriptions`).Scan(&rows))
	require.Equal(t, 1, rows)
}

func TestGetSubscriptions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	tg := e.ensure(t, 1, telegram)
	other := e.ensure(t, 2, whatsapp)

	all, err := e.svc.GetSubscriptions(ctx, 1, nil)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, wa, all[0].ID)
	require.Equal(t, tg, all[1].ID)

	// Ids of another company are not found through this one.
	some, err := e.svc.GetSubscriptions(ctx, 1, []int64{tg, other, 999999})
	require.NoError(t, err)
	require.Len(t, some, 1)
	require.Equal(t, tg, some[0].ID)

	// Paid follows the clock: the test period ends.
	require.True(t, some[0].Paid)
	e.clock.Advance(testPeriod)
	some, err = e.svc.GetSubscriptions(ctx, 1, []int64{tg})
	require.NoError(t, err)
	require.False(t, some[0].Paid)

	none, err := e.svc.GetSubscriptions(ctx, 3, nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestListSubscriptionsWithMembership(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	tg := e.ensure(t, 1, telegram)
	other := e.ensure(t, 2, whatsapp)
	_, err := e.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 1, SubscriptionID: tg,
		Adjustment: domain.Adjustment{Plan: ptr(domain.PlanStandard), MaxSize: ptr(int32(3))}})
	require.NoError(t, err)
	w1 := e.conns.Add(1, whatsapp, wa)
	t1 := e.conns.Add(1, telegram, tg)
	t2 := e.conns.Add(1, telegram, tg)
	e.conns.Add(1, telegram, 0) // in no subscription
	e.conns.Add(2, whatsapp, other)

	calls := e.conns.MembershipCalls.Load()
	list, err := e.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, calls+1, e.conns.MembershipCalls.Load(), "one membership call per request")
	require.Len(t, list, 2)

	require.Equal(t, wa, list[0].ID)
	require.Equal(t, []int64{w1}, list[0].Connections)
	require.Equal(t, domain.PlanStart, list[0].Plan)
	require.Equal(t, int32(1), list[0].MaxSize)

	require.Equal(t, tg, list[1].ID)
	require.Equal(t, []int64{t1, t2}, list[1].Connections, "ascending")
	require.Equal(t, domain.PlanStandard, list[1].Plan)
	require.Equal(t, int32(3), list[1].MaxSize)
	require.False(t, list[1].AdvanceActive)
	require.False(t, list[1].AdvanceAvailable)

	empty, err := e.svc.ListSubscriptions(ctx, 3)
	require.NoError(t, err)
	require.NotNil(t, empty)
	require.Empty(t, empty)

	// A subscription without connections lists an empty array, not nil.
	_, err = e.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: 1, SubscriptionID: wa, ConnectionIDs: []int64{}})
	require.NoError(t, err)
	list, err = e.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.NotNil(t, list[0].Connections)
	require.Empty(t, list[0].Connections)
}

func TestAdvanceFlags(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	id := e.ensure(t, 1, whatsapp)
	now := e.clock.Now()

	// No API records payments or advances yet: set the columns directly.
	_, err := e.db.Exec(ctx, `UPDATE subscriptions SET has_payment = true, paid_until = $2 WHERE id = $1`,
		id, now.Add(24*time.Hour))
	require.NoError(t, err)
	list, err := e.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.True(t, list[0].AdvanceAvailable)
	require.False(t, list[0].AdvanceActive)

	_, err = e.db.Exec(ctx, `UPDATE subscriptions SET advance_until = $2 WHERE id = $1`, id, now.Add(5*24*time.Hour))
	require.NoError(t, err)
	list, err = e.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.True(t, list[0].AdvanceActive)
	require.False(t, list[0].AdvanceAvailable)

	_, err = e.db.Exec(ctx, `UPDATE subscriptions SET advance_repaid = true, paid_until = $2 WHERE id = $1`,
		id, now.Add(30*24*time.Hour))
	require.NoError(t, err)
	list, err = e.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.False(t, list[0].AdvanceActive)
	require.False(t, list[0].AdvanceAvailable, "30 days left")
}

func TestSetConnections(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	tg := e.ensure(t, 1, telegram)
	other := e.ensure(t, 2, whatsapp)
	w1 := e.conns.Add(1, whatsapp, 0)
	w2 := e.conns.Add(1, whatsapp, 0)
	w3 := e.conns.Add(1, whatsapp, 0)
	t1 := e.conns.Add(1, telegram, 0)
	foreign := e.conns.Add(2, whatsapp, 0)

	set := func(company, sub int64, preview bool, ids ...int64) (app.View, error) {
		return e.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: company, SubscriptionID: sub, ConnectionIDs: ids, Preview: preview})
	}
	members := func(sub int64) []int64 {
		list, err := e.svc.ListSubscriptions(ctx, 1)
		require.NoError(t, err)
		for _, v := range list {
			if v.ID == sub {
				return v.Connections
			}
		}
		t.Fatalf("subscription %d not listed", sub)
		return nil
	}

	// Unknown, or another company's: not found.
	_, err := set(1, 999999, false, w1)
	apiErr(t, err, apierr.SubscriptionNotFound)
	_, err = set(1, other, false, w1)
	apiErr(t, err, apierr.SubscriptionNotFound)
	_, err = set(2, wa, false)
	apiErr(t, err, apierr.SubscriptionNotFound)

	// A duplicate is refused at its second place.
	_, err = set(1, wa, false, w1, w2, w1)
	loc, typ, _ := fieldErr(t, err)
	require.Equal(t, `["body","connections",2]`, loc)
	require.Equal(t, "value_error", typ)

	// More than max_size (1 on START).
	_, err = set(1, wa, false, w1, w2)
	loc, typ, msg := fieldErr(t, err)
	require.Equal(t, `["body","connections"]`, loc)
	require.Equal(t, "too_long", typ)
	require.Contains(t, msg, "at most 1 item")

	// Connections of another type or company: the connections service's
	// 422, passed on unchanged.
	_, err = set(1, wa, false, t1)
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","connections",0]`, loc)
	_, err = set(1, wa, false, foreign)
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","connections",0]`, loc)
	require.Empty(t, members(wa))

	// Preview answers the result and changes nothing.
	v, err := set(1, wa, true, w2)
	require.NoError(t, err)
	require.Equal(t, []int64{w2}, v.Connections)
	require.Equal(t, wa, v.ID)
	require.Equal(t, whatsapp, v.Type)
	require.Empty(t, members(wa))

	v, err = set(1, wa, false, w2)
	require.NoError(t, err)
	require.Equal(t, []int64{w2}, v.Connections)
	require.Equal(t, []int64{w2}, members(wa))

	// Raise the size; the new list replaces the old one.
	_, err = e.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 1, SubscriptionID: wa,
		Adjustment: domain.Adjustment{Plan: ptr(domain.PlanStandard), MaxSize: ptr(int32(2))}})
	require.NoError(t, err)
	v, err = set(1, wa, false, w3, w1)
	require.NoError(t, err)
	require.Equal(t, []int64{w1, w3}, v.Connections, "ascending")
	require.Equal(t, []int64{w1, w3}, members(wa))

	// Preview of an emptying shows it empty; applying empties it.
	v, err = set(1, wa, true)
	require.NoError(t, err)
	require.Empty(t, v.Connections)
	require.Equal(t, []int64{w1, w3}, members(wa))
	v, err = set(1, wa, false)
	require.NoError(t, err)
	require.NotNil(t, v.Connections)
	require.Empty(t, v.Connections)
	require.Empty(t, members(wa))

	// The other subscription of the company was never touched.
	require.Empty(t, members(tg))
}

func TestAdjustSubscription(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	other := e.ensure(t, 2, whatsapp)
	adjust := func(company, sub int64, a domain.Adjustment) (app.View, error) {
		return e.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: company, SubscriptionID: sub, Adjustment: a})
	}

	_, err := adjust(1, other, domain.Adjustment{MaxSize: ptr(int32(1))})
	apiErr(t, err, apierr.SubscriptionNotFound)
	_, err = adjust(1, 999999, domain.Adjustment{})
	apiErr(t, err, apierr.SubscriptionNotFound)

	// START holds one connection only.
	_, err = adjust(1, wa, domain.Adjustment{MaxSize: ptr(int32(2))})
	loc, typ, _ := fieldErr(t, err)
	require.Equal(t, `["body","max_size"]`, loc)
	require.Equal(t, "value_error", typ)
	_, err = adjust(1, wa, domain.Adjustment{MaxSize: ptr(int32(0))})
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","max_size"]`, loc)

	paid := e.clock.Now().Add(30 * 24 * time.Hour)
	v, err := adjust(1, wa, domain.Adjustment{Plan: ptr(domain.PlanStandard), MaxSize: ptr(int32(3)), PaidUntil: &paid, ClearTestUntil: true})
	require.NoError(t, err)
	require.Equal(t, domain.PlanStandard, v.Plan)
	require.Equal(t, int32(3), v.MaxSize)
	require.True(t, paid.Equal(*v.PaidUntil))
	require.Nil(t, v.TestUntil)
	require.Empty(t, v.Connections)

	// Stored, not only answered.
	got, err := e.svc.GetSubscriptions(ctx, 1, []int64{wa})
	require.NoError(t, err)
	require.Equal(t, v.Subscription, got[0].Subscription)

	// Fill it, then try to shrink it below its connections.
	w1, w2, w3 := e.conns.Add(1, whatsapp, 0), e.conns.Add(1, whatsapp, 0), e.conns.Add(1, whatsapp, 0)
	_, err = e.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: 1, SubscriptionID: wa, ConnectionIDs: []int64{w1, w2, w3}})
	require.NoError(t, err)
	_, err = adjust(1, wa, domain.Adjustment{MaxSize: ptr(int32(2))})
	loc, _, msg := fieldErr(t, err)
	require.Equal(t, `["body","max_size"]`, loc)
	require.Contains(t, msg, "3 connections")
	// Back to START keeps size 3: refused too.
	_, err = adjust(1, wa, domain.Adjustment{Plan: ptr(domain.PlanStart)})
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","max_size"]`, loc)
	// Refused changes left the row alone.
	got, err = e.svc.GetSubscriptions(ctx, 1, []int64{wa})
	require.NoError(t, err)
	require.Equal(t, v.Subscription, got[0].Subscription)

	// The answer carries the connections; size equal to them is fine.
	v, err = adjust(1, wa, domain.Adjustment{MaxSize: ptr(int32(3)), ClearPaidUntil: true, TestUntil: &paid})
	require.NoError(t, err)
	require.Equal(t, []int64{w1, w2, w3}, v.Connections)
	require.Nil(t, v.PaidUntil)
	require.True(t, paid.Equal(*v.TestUntil))

	_, err = adjust(1, wa, domain.Adjustment{PaidUntil: &paid, ClearPaidUntil: true})
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","clear_paid_until"]`, loc)
	_, err = adjust(1, wa, domain.Adjustment{TestUntil: &paid, ClearTestUntil: true})
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","clear_test_until"]`, loc)
	_, err = adjust(1, wa, domain.Adjustment{Plan: ptr(domain.Plan("GOLD"))})
	loc, _, _ = fieldErr(t, err)
	require.Equal(t, `["body","subscription_plan"]`, loc)
}

func TestCheckConnectionPaid(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	in := e.conns.Add(1, whatsapp, wa)
	loose := e.conns.Add(1, whatsapp, 0)

	// In its test period.
	c, err := e.svc.CheckConnectionPaid(ctx, in)
	require.NoError(t, err)
	require.Equal(t, int64(1), c.CompanyID)
	require.Equal(t, in, c.ConnectionID)
	require.Equal(t, wa, *c.SubscriptionID)
	require.True(t, c.Paid)
	require.Nil(t, c.PaidUntil)
	require.True(t, e.clock.Now().Add(testPeriod).Equal(*c.TestUntil))

	// The test period ends.
	e.clock.Advance(testPeriod)
	c, err = e.svc.CheckConnectionPaid(ctx, in)
	require.NoError(t, err)
	require.False(t, c.Paid)

	// Paid for a month.
	paid := e.clock.Now().Add(30 * 24 * time.Hour)
	_, err = e.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 1, SubscriptionID: wa, Adjustment: domain.Adjustment{PaidUntil: &paid}})
	require.NoError(t, err)
	c, err = e.svc.CheckConnectionPaid(ctx, in)
	require.NoError(t, err)
	require.True(t, c.Paid)
	require.True(t, paid.Equal(*c.PaidUntil))

	// The month is over.
	e.clock.Advance(31 * 24 * time.Hour)
	c, err = e.svc.CheckConnectionPaid(ctx, in)
	require.NoError(t, err)
	require.False(t, c.Paid)
	require.NotNil(t, c.PaidUntil)

	// In no subscription: never paid.
	c, err = e.svc.CheckConnectionPaid(ctx, loose)
	require.NoError(t, err)
	require.False(t, c.Paid)
	require.Nil(t, c.SubscriptionID)
	require.Equal(t, int64(1), c.CompanyID)

	_, err = e.svc.CheckConnectionPaid(ctx, 424242)
	apiErr(t, err, apierr.ConnectionNotFound)
}

// TestResizeWaitsForMembershipChange shows the row lock: an operator
// shrinking a subscription while a PATCH is adding a connection to it must
// see the connection the PATCH added, not the membership before it.
func TestResizeWaitsForMembershipChange(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	wa := e.ensure(t, 1, whatsapp)
	w1 := e.conns.Add(1, whatsapp, 0)

	// The PATCH pauses inside SetMembership (row locked) until the resize
	// either finished (it did not wait: no lock) or waits on a row lock.
	entered, release := make(chan struct{}), make(chan struct{})
	e.conns.BeforeSet = func() {
		close(entered)
		<-release
	}
	patched := make(chan error, 1)
	go func() {
		_, err := e.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: 1, SubscriptionID: wa, ConnectionIDs: []int64{w1}})
		patched <- err
	}()
	<-entered

	resized := make(chan error, 1)
	go func() {
		_, err := e.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 1, SubscriptionID: wa,
			Adjustment: domain.Adjustment{Plan: ptr(domain.PlanFree), MaxSize: ptr(int32(0))}})
		resized <- err
	}()
	var resizeErr error
	resizeDone := false
	for !resizeDone && !lockWaiting(t, e.db) {
		select {
		case resizeErr = <-resized:
			resizeDone = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(release)
	require.NoError(t, <-patched)
	if !resizeDone {
		resizeErr = <-resized
	}
	loc, _, _ := fieldErr(t, resizeErr)
	require.Equal(t, `["body","max_size"]`, loc)
}

// lockWaiting reports whether a session of this database waits for a lock.
func lockWaiting(t *testing.T, db *pgxpool.Pool) bool {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE NOT l.granted AND a.datname = current_database()`).Scan(&n))
	return n > 0
}
