package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

// heard records the companies announced.
type heard struct {
	mu        sync.Mutex
	companies []int64
}

func (h *heard) SubscriptionsChanged(_ context.Context, companyID int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.companies = append(h.companies, companyID)
}

func (h *heard) take() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.companies
	h.companies = nil
	return out
}

// TestChangesAreAnnounced: every stored change to a company's
// subscriptions is announced with the company, after it is stored; a
// refused change is not.
func TestChangesAreAnnounced(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	h := &heard{}
	clock := apptest.NewClock()
	svc := app.New(postgres.New(db), apptest.NewConnections(), apptest.NewCompanies(knownCompanies),
		app.Config{TestPeriod: testPeriod, Now: clock.Now, Announcer: h})

	info, err := svc.EnsureSubscription(ctx, 5, string(whatsapp))
	require.NoError(t, err)
	require.Equal(t, []int64{5}, h.take())

	paid := clock.Now().Add(24 * time.Hour)
	_, err = svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 5, SubscriptionID: info.ID,
		Adjustment: domain.Adjustment{Plan: ptr(domain.PlanStandard), MaxSize: ptr(int32(3)), PaidUntil: &paid}})
	require.NoError(t, err)
	require.Equal(t, []int64{5}, h.take())

	// Refused: too large for START; and another company's subscription.
	_, err = svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 5, SubscriptionID: info.ID,
		Adjustment: domain.Adjustment{Plan: ptr(domain.PlanStart), MaxSize: ptr(int32(2))}})
	require.Error(t, err)
	_, err = svc.AdjustSubscription(ctx, app.Adjust{CompanyID: 6, SubscriptionID: info.ID,
		Adjustment: domain.Adjustment{MaxSize: ptr(int32(1))}})
	apiErr(t, err, apierr.SubscriptionNotFound)
	require.Empty(t, h.take())

	// Reads announce nothing.
	_, err = svc.GetSubscriptions(ctx, 5, nil)
	require.NoError(t, err)
	_, err = svc.ListSubscriptions(ctx, 5)
	require.NoError(t, err)
	require.Empty(t, h.take())
}
