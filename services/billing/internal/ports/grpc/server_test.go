package grpc_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	"switchboard.dev/services/billing/internal/domain"
	grpcport "switchboard.dev/services/billing/internal/ports/grpc"
	"switchboard.dev/services/billing/migrations"
)

func newServer(t *testing.T) (*grpcport.Server, *apptest.Connections, *apptest.Clock) {
	t.Helper()
	conns, clock := apptest.NewConnections(), apptest.NewClock()
	a := app.New(postgres.New(pgtest.New(t, migrations.FS)), conns, apptest.NewCompanies(1000), app.Config{TestPeriod: 72 * time.Hour, Now: clock.Now})
	return grpcport.New(a, nil), conns, clock
}

// fieldErr asserts a 422 and answers its field error's location (as JSON)
// and type.
func fieldErr(t *testing.T, err error) (string, string) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, int32(1), e.Code, e.Error())
	b, err := json.Marshal(e.Detail)
	require.NoError(t, err)
	var d struct{ Errors []apierr.FieldError }
	require.NoError(t, json.Unmarshal(b, &d))
	require.Len(t, d.Errors, 1)
	loc, err := json.Marshal(d.Errors[0].Location)
	require.NoError(t, err)
	return string(loc), d.Errors[0].Type
}

func list(t *testing.T, values ...any) *structpb.ListValue {
	t.Helper()
	l, err := structpb.NewList(values)
	require.NoError(t, err)
	return l
}

func TestUpdateSubscriptionReadsConnections(t *testing.T) {
	ctx := context.Background()
	s, conns, _ := newServer(t)
	info, err := s.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{CompanyId: 1, SubscriptionType: "CONNECTION_MAX_BOT"})
	require.NoError(t, err)
	c := conns.Add(1, domain.SubscriptionType("CONNECTION_MAX_BOT"), 0)
	patch := func(l *structpb.ListValue, preview *bool) (*billingv1.Subscription, error) {
		return s.UpdateSubscription(ctx, &billingv1.UpdateSubscriptionRequest{CompanyId: 1, SubscriptionId: info.GetId(), Connections: l, Preview: preview})
	}

	// Absent is not empty.
	_, err = patch(nil, nil)
	e, _ := apierr.FromError(err)
	require.Equal(t, "Field required", e.Message)
	loc, typ := fieldErr(t, err)
	require.Equal(t, `["body","connections"]`, loc)
	require.Equal(t, "missing", typ)

	for name, tc := range map[string]struct {
		l   *structpb.ListValue
		loc string
	}{
		"fraction":   {list(t, 1.5), `["body","connections",0]`},
		"string":     {list(t, float64(c), "7"), `["body","connections",1]`},
		"bool":       {list(t, true), `["body","connections",0]`},
		"null":       {list(t, float64(c), nil), `["body","connections",1]`},
		"object":     {list(t, map[string]any{"id": 1}), `["body","connections",0]`},
		"huge":       {list(t, 1e300), `["body","connections",0]`},
		"nested":     {list(t, []any{1}), `["body","connections",0]`},
		"duplicates": {list(t, float64(c), float64(c)), `["body","connections",1]`},
	} {
		_, err := patch(tc.l, nil)
		loc, typ := fieldErr(t, err)
		require.Equal(t, tc.loc, loc, name)
		if name != "duplicates" {
			require.Equal(t, "int_parsing", typ, name)
		}
	}

	// preview true changes nothing; absent means applied.
	sub, err := patch(list(t, float64(c)), proto(true))
	require.NoError(t, err)
	require.Equal(t, []int64{c}, sub.GetConnections())
	require.Equal(t, int32(1), sub.GetCurrentSize())
	got, err := s.ListSubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 1})
	require.NoError(t, err)
	require.Empty(t, got.GetSubscriptions()[0].GetConnections())

	sub, err = patch(list(t, float64(c)), nil)
	require.NoError(t, err)
	require.Equal(t, []int64{c}, sub.GetConnections())
	got, err = s.ListSubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 1})
	require.NoError(t, err)
	require.Equal(t, []int64{c}, got.GetSubscriptions()[0].GetConnections())

	// An empty array takes every connection out.
	sub, err = patch(list(t), proto(false))
	require.NoError(t, err)
	require.NotNil(t, sub.GetConnections())
	require.Empty(t, sub.GetConnections())
	require.Zero(t, sub.GetCurrentSize())

	_, err = s.UpdateSubscription(ctx, &billingv1.UpdateSubscriptionRequest{CompanyId: 2, SubscriptionId: info.GetId(), Connections: list(t)})
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, apierr.SubscriptionNotFound.Code, e.Code)
}

func proto[T any](v T) *T { return &v }

func TestSubscriptionShape(t *testing.T) {
	ctx := context.Background()
	s, conns, clock := newServer(t)
	info, err := s.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{CompanyId: 5, SubscriptionType: "CONNECTION_WABA"})
	require.NoError(t, err)
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_START, info.GetSubscriptionPlan())
	require.Equal(t, "CONNECTION_WABA", info.GetSubscriptionType())
	require.Equal(t, int64(5), info.GetCompanyId())
	require.True(t, info.GetPaid())
	require.Nil(t, info.GetPaidUntil())
	require.Equal(t, clock.Now().Add(72*time.Hour), info.GetTestUntil().AsTime())

	got, err := s.ListSubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 5})
	require.NoError(t, err)
	require.Len(t, got.GetSubscriptions(), 1)
	sub := got.GetSubscriptions()[0]
	require.Equal(t, info.GetId(), sub.GetId())
	require.NotNil(t, sub.GetConnections(), "an empty array, not null")
	require.Equal(t, int32(1), sub.GetMaxSize())
	require.Nil(t, sub.GetPaidUntil(), "null until paid")
	require.NotNil(t, sub.GetAdvance())
	require.False(t, sub.GetAdvance().GetIsActive())
	require.False(t, sub.GetAdvance().GetIsAvailable())

	empty, err := s.ListSubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 6})
	require.NoError(t, err)
	require.NotNil(t, empty.GetSubscriptions())
	require.Empty(t, empty.GetSubscriptions())

	// Operator: plan by enum, dates as timestamps, clear flags.
	paid := clock.Now().Add(24 * time.Hour)
	adj, err := s.AdjustSubscription(ctx, &billingv1.AdjustSubscriptionRequest{
		CompanyId: 5, SubscriptionId: info.GetId(),
		SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_ADVANCED.Enum(),
		MaxSize:          proto(int32(4)),
		PaidUntil:        timestamppb.New(paid),
		ClearTestUntil:   true,
	})
	require.NoError(t, err)
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_ADVANCED, adj.GetSubscriptionPlan())
	require.Equal(t, int32(4), adj.GetMaxSize())
	require.Equal(t, paid, adj.GetPaidUntil().AsTime())
	require.Nil(t, adj.GetTestUntil())

	// Absent fields stay.
	adj, err = s.AdjustSubscription(ctx, &billingv1.AdjustSubscriptionRequest{CompanyId: 5, SubscriptionId: info.GetId()})
	require.NoError(t, err)
	require.Equal(t, int32(4), adj.GetMaxSize())
	require.Equal(t, paid, adj.GetPaidUntil().AsTime())

	_, err = s.AdjustSubscription(ctx, &billingv1.AdjustSubscriptionRequest{CompanyId: 5, SubscriptionId: info.GetId(),
		SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_UNSPECIFIED.Enum()})
	loc, typ := fieldErr(t, err)
	require.Equal(t, `["body","subscription_plan"]`, loc)
	require.Equal(t, "enum", typ)

	// Internal reads.
	c := conns.Add(5, "CONNECTION_WABA", info.GetId())
	paidResp, err := s.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: c})
	require.NoError(t, err)
	require.True(t, paidResp.GetPaid())
	require.Equal(t, info.GetId(), paidResp.GetSubscriptionId())
	require.Equal(t, int64(5), paidResp.GetCompanyId())
	require.Equal(t, paid, paidResp.GetPaidUntil().AsTime())
	require.Nil(t, paidResp.GetTestUntil())

	loose := conns.Add(5, "CONNECTION_WABA", 0)
	paidResp, err = s.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: loose})
	require.NoError(t, err)
	require.False(t, paidResp.GetPaid())
	require.Nil(t, paidResp.SubscriptionId)

	subs, err := s.GetSubscriptions(ctx, &billingv1.GetSubscriptionsRequest{CompanyId: 5, Ids: []int64{info.GetId()}})
	require.NoError(t, err)
	require.Len(t, subs.GetSubscriptions(), 1)
	require.True(t, subs.GetSubscriptions()[0].GetPaid())
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_ADVANCED, subs.GetSubscriptions()[0].GetSubscriptionPlan())
}
