package billing_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/pkg/server/servertest"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/connections/internal/adapters/billing"
	"switchboard.dev/services/connections/internal/app"
)

// fakeBilling answers like the billing service would, and records what it
// was asked.
type fakeBilling struct {
	billingv1.UnimplementedBillingInternalServiceServer
	ensured []*billingv1.EnsureSubscriptionRequest
	got     []*billingv1.GetSubscriptionsRequest
	fail    error
}

var paid = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func (f *fakeBilling) EnsureSubscription(_ context.Context, req *billingv1.EnsureSubscriptionRequest) (*billingv1.SubscriptionInfo, error) {
	f.ensured = append(f.ensured, req)
	if f.fail != nil {
		return nil, f.fail
	}
	return &billingv1.SubscriptionInfo{
		Id: 11, CompanyId: req.GetCompanyId(), SubscriptionType: req.GetSubscriptionType(),
		SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_START, MaxSize: 1,
	}, nil
}

func (f *fakeBilling) GetSubscriptions(_ context.Context, req *billingv1.GetSubscriptionsRequest) (*billingv1.GetSubscriptionsResponse, error) {
	f.got = append(f.got, req)
	if f.fail != nil {
		return nil, f.fail
	}
	return &billingv1.GetSubscriptionsResponse{Subscriptions: []*billingv1.SubscriptionInfo{
		{Id: 11, SubscriptionType: "CONNECTION_WHATSAPP", SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD, MaxSize: 4, PaidUntil: timestamppb.New(paid)},
	}}, nil
}

func serve(t *testing.T, f *fakeBilling) *billing.Client {
	t.Helper()
	conn := servertest.Serve(t, "", func(g *grpc.Server) { billingv1.RegisterBillingInternalServiceServer(g, f) })
	return billing.New(conn)
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	f := &fakeBilling{}
	c := serve(t, f)

	sub, err := c.EnsureSubscription(ctx, 3, "CONNECTION_TELEGRAM_BOT")
	require.NoError(t, err)
	require.Equal(t, app.Subscription{ID: 11, Type: "CONNECTION_TELEGRAM_BOT", Plan: "START", MaxSize: 1}, sub)
	require.Equal(t, int64(3), f.ensured[0].GetCompanyId())

	subs, err := c.GetSubscriptions(ctx, 3, []int64{11, 12})
	require.NoError(t, err)
	require.Equal(t, []app.Subscription{{ID: 11, Type: "CONNECTION_WHATSAPP", Plan: "STANDARD", MaxSize: 4, PaidUntil: &paid}}, subs)
	require.Equal(t, []int64{11, 12}, f.got[0].GetIds())
}

func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	f := &fakeBilling{fail: apierr.SubscriptionNotFound.Msg("no such subscription")}
	c := serve(t, f)

	// Billing's API errors pass through unchanged.
	_, err := c.EnsureSubscription(ctx, 3, "CONNECTION_WHATSAPP")
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, apierr.SubscriptionNotFound.Code, e.Code)
	require.Equal(t, "no such subscription", e.Message)

	// An unreachable billing is a 503, other failures stay plain errors (500).
	f.fail = status.Error(codes.Unavailable, "down")
	_, err = c.GetSubscriptions(ctx, 3, nil)
	e, ok = apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, apierr.ServiceUnavailable.Code, e.Code)

	f.fail = status.Error(codes.Internal, "boom")
	_, err = c.GetSubscriptions(ctx, 3, nil)
	_, ok = apierr.FromError(err)
	require.False(t, ok)
	require.ErrorContains(t, err, "boom")
}

// TestSummariesKeptUntilAnnounced: summaries come from memory while the
// cache listens, and from billing again once billing announces a change
// of the company; another company's announcement leaves them kept.
func TestSummariesKeptUntilAnnounced(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	f := &fakeBilling{}
	cache := billing.NewSummaries(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cache.Ping = 200 * time.Millisecond
	c := serve(t, f).WithSummaries(cache)
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Run(run, rdb)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	require.Eventually(t, cache.Live, 5*time.Second, 5*time.Millisecond)

	// Other tests announce on the shared channel too: company ids of our
	// own tell ours apart.
	company := time.Now().UnixNano()
	want := []app.Subscription{{ID: 11, Type: "CONNECTION_WHATSAPP", Plan: "STANDARD", MaxSize: 4, PaidUntil: &paid}}
	for range 3 {
		subs, err := c.SubscriptionSummaries(ctx, company)
		require.NoError(t, err)
		require.Equal(t, want, subs)
	}
	require.Len(t, f.got, 1, "asked billing again though nothing changed")
	require.Equal(t, company, f.got[0].GetCompanyId())
	require.Empty(t, f.got[0].GetIds(), "summaries are all the company's subscriptions")

	heard := func(key int64) {
		gen := cache.Generation()
		require.NoError(t, localcache.Announce(ctx, rdb, peers.SubscriptionsChannel, strconv.FormatInt(key, 10)))
		require.Eventually(t, func() bool { return cache.Generation() > gen }, 2*time.Second, time.Millisecond)
	}
	heard(company + 1)
	_, err := c.SubscriptionSummaries(ctx, company)
	require.NoError(t, err)
	require.Len(t, f.got, 1)

	heard(company)
	_, err = c.SubscriptionSummaries(ctx, company)
	require.NoError(t, err)
	require.Len(t, f.got, 2, "an announced change did not drop the company's summaries")

	// Limits never come from the copy.
	_, err = c.GetSubscriptions(ctx, company, nil)
	require.NoError(t, err)
	require.Len(t, f.got, 3)
}
