package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

func TestUpdateSubscription(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)
	test := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
	sub, err := r.EnsureSubscription(ctx, domain.Subscription{CompanyID: 1, Type: "CONNECTION_WHATSAPP", Plan: domain.PlanStart, MaxSize: 1, TestUntil: &test})
	require.NoError(t, err)
	// Stored at PostgreSQL's microsecond precision, in UTC.
	require.Equal(t, test.Truncate(time.Microsecond), *sub.TestUntil)

	updatedAt := func() time.Time {
		var at time.Time
		require.NoError(t, db.QueryRow(ctx, `SELECT updated_at FROM subscriptions WHERE id = $1`, sub.ID).Scan(&at))
		return at
	}
	// updated_at is the transaction's start time: set it in the past to
	// see whether a later transaction rewrote the row.
	_, err = db.Exec(ctx, `UPDATE subscriptions SET updated_at = '2000-01-01Z' WHERE id = $1`, sub.ID)
	require.NoError(t, err)
	old := updatedAt()

	// Another company's id is not found, and update never runs.
	_, err = r.UpdateSubscription(ctx, 2, sub.ID, func(*domain.Subscription) error {
		t.Fatal("update ran for another company")
		return nil
	})
	require.ErrorIs(t, err, domain.ErrNotFound)

	// Nothing changed: nothing written.
	got, err := r.UpdateSubscription(ctx, 1, sub.ID, func(*domain.Subscription) error { return nil })
	require.NoError(t, err)
	require.Equal(t, sub, got)
	require.Equal(t, old, updatedAt())

	// An error from update rolls back what it changed.
	boom := errors.New("boom")
	_, err = r.UpdateSubscription(ctx, 1, sub.ID, func(s *domain.Subscription) error {
		s.MaxSize = 9
		return boom
	})
	require.ErrorIs(t, err, boom)
	again, err := r.Subscription(ctx, 1, sub.ID)
	require.NoError(t, err)
	require.Equal(t, sub, again)

	// Every stored field round-trips.
	paid := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	advance := paid.Add(5 * 24 * time.Hour)
	got, err = r.UpdateSubscription(ctx, 1, sub.ID, func(s *domain.Subscription) error {
		s.Plan, s.MaxSize, s.PaidUntil, s.TestUntil = domain.PlanAdvanced, 7, &paid, nil
		s.HasPayment, s.Advance = true, domain.Advance{Until: &advance, Repaid: true}
		return nil
	})
	require.NoError(t, err)
	require.NotEqual(t, old, updatedAt())
	stored, err := r.Subscription(ctx, 1, sub.ID)
	require.NoError(t, err)
	require.Equal(t, got, stored)
	require.Equal(t, domain.Subscription{
		ID: sub.ID, CompanyID: 1, Type: "CONNECTION_WHATSAPP", Plan: domain.PlanAdvanced, MaxSize: 7,
		PaidUntil: &paid, HasPayment: true, Advance: domain.Advance{Until: &advance, Repaid: true},
	}, stored)

	_, err = r.Subscription(ctx, 2, sub.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// TestCompaniesReads: the subscriptions and balances of several companies,
// each in one query; companies without rows are absent.
func TestCompaniesReads(t *testing.T) {
	ctx := context.Background()
	r := postgres.New(pgtest.New(t, migrations.FS))
	ensure := func(company int64, typ domain.SubscriptionType) domain.Subscription {
		s, err := r.EnsureSubscription(ctx, domain.Subscription{CompanyID: company, Type: typ, Plan: domain.PlanStart, MaxSize: 1})
		require.NoError(t, err)
		return s
	}
	a2 := ensure(2, "CONNECTION_WHATSAPP")
	a1 := ensure(1, "CONNECTION_TELEGRAM")
	b2 := ensure(2, "CONNECTION_TELEGRAM")
	ensure(3, "CONNECTION_WHATSAPP")

	subs, err := r.CompaniesSubscriptions(ctx, []int64{2, 9, 1})
	require.NoError(t, err)
	require.Equal(t, []domain.Subscription{a1, a2, b2}, subs, "by company, then id")
	subs, err = r.CompaniesSubscriptions(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, subs)

	_, err = r.AddWabaDialogs(ctx, 1, 4)
	require.NoError(t, err)
	_, err = r.AddWabaDialogs(ctx, 3, -2)
	require.NoError(t, err)
	_, err = r.AddWabaDialogs(ctx, 5, 1)
	require.NoError(t, err)
	balances, err := r.WabaDialogsBalances(ctx, []int64{1, 2, 3})
	require.NoError(t, err)
	require.Equal(t, map[int64]int64{1: 4, 3: -2}, balances)
	balances, err = r.WabaDialogsBalances(ctx, []int64{})
	require.NoError(t, err)
	require.Empty(t, balances)
}
