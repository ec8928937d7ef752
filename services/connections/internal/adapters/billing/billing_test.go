package billing_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	billingv1.RegisterBillingInternalServiceServer(srv, f)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
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
