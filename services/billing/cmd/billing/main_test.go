package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/config"
	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/billing/migrations"
)

// connectionsPeer is a connections service with no connections.
type connectionsPeer struct {
	connectionsv1.UnimplementedConnectionsInternalServiceServer
}

func (connectionsPeer) ListSubscriptionConnections(context.Context, *connectionsv1.ListSubscriptionConnectionsRequest) (*connectionsv1.ListSubscriptionConnectionsResponse, error) {
	return &connectionsv1.ListSubscriptionConnectionsResponse{}, nil
}

func (connectionsPeer) GetConnectionInternal(context.Context, *connectionsv1.GetConnectionInternalRequest) (*connectionsv1.GetConnectionInternalResponse, error) {
	return nil, apierr.ConnectionNotFound.E()
}

// identityPeer is an identity service that knows company 3 only.
type identityPeer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
}

func (identityPeer) CheckCompanies(_ context.Context, req *identityv1.CheckCompaniesRequest) (*identityv1.CheckCompaniesResponse, error) {
	out := &identityv1.CheckCompaniesResponse{}
	for _, id := range req.GetCompanyIds() {
		if id != 3 {
			out.UnknownCompanyIds = append(out.UnknownCompanyIds, id)
		}
	}
	return out, nil
}

// partnersPeer is a partners service that keeps the events billing's
// relay hands it, with the internal token each batch came with.
type partnersPeer struct {
	partnersv1.UnimplementedPartnersInternalServiceServer
	mu     sync.Mutex
	events []*partnersv1.BillingEvent
	tokens []string
}

func (p *partnersPeer) IngestBillingEvents(ctx context.Context, req *partnersv1.IngestBillingEventsRequest) (*partnersv1.IngestBillingEventsResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	p.tokens = append(p.tokens, md.Get(auth.HeaderInternalToken)...)
	p.events = append(p.events, req.GetEvents()...)
	return &partnersv1.IngestBillingEventsResponse{Applied: int32(len(req.GetEvents()))}, nil
}

// received are the event types received so far, and the tokens.
func (p *partnersPeer) received() ([]string, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var types []string
	for _, e := range p.events {
		types = append(types, fmt.Sprintf("%d %s %t", e.GetCompanyId(), e.GetEventType(), e.GetPayload().GetFields()["at"].GetStringValue() != ""))
	}
	return types, append([]string(nil), p.tokens...)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

// TestServiceWiring starts the real service (config, migrations, auth and
// validation interceptors, the three registered services, the connections
// and identity clients) and calls it over gRPC.
func TestServiceWiring(t *testing.T) {
	redisAddr := os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	if redisAddr == "" {
		t.Fatal("SWITCHBOARD_TEST_REDIS_ADDR is not set (source /tmp/sbenv or run make test)")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	peer := grpc.NewServer()
	connectionsv1.RegisterConnectionsInternalServiceServer(peer, connectionsPeer{})
	identityv1.RegisterIdentityInternalServiceServer(peer, identityPeer{})
	partners := &partnersPeer{}
	partnersv1.RegisterPartnersInternalServiceServer(peer, partners)
	go peer.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(peer.Stop)

	addr := freeAddr(t)
	environ := map[string]string{
		"SWITCHBOARD_GRPC_ADDR":        addr,
		"SWITCHBOARD_DATABASE_URL":     pgtest.NewDSN(t, migrations.FS),
		"SWITCHBOARD_REDIS_ADDR":       redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN":   "internal",
		"SWITCHBOARD_ADMIN_TOKEN":      "operator",
		"SWITCHBOARD_CONNECTIONS_ADDR": lis.Addr().String(),
		"SWITCHBOARD_TEST_PERIOD":      "1h",
		"SWITCHBOARD_PARTNERS_ADDR":    lis.Addr().String(),
		// Internal and operator calls only: no API key is checked, and
		// identity is asked only which companies exist.
		"SWITCHBOARD_IDENTITY_ADDR": lis.Addr().String(),
	}
	var s settings
	require.NoError(t, config.Load(&s, environ))
	require.Equal(t, time.Hour, s.TestPeriod)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sp, err := spec(s)
	require.NoError(t, err)
	go func() { done <- service.Run(ctx, sp, environ, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	conn, err := server.DialInternal(addr, "internal")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	internal := billingv1.NewBillingInternalServiceClient(conn)

	callCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	before := time.Now()
	info, err := internal.EnsureSubscription(callCtx, &billingv1.EnsureSubscriptionRequest{CompanyId: 3, SubscriptionType: "CONNECTION_AVITO"},
		grpc.WaitForReady(true))
	require.NoError(t, err)
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_START, info.GetSubscriptionPlan())
	require.True(t, info.GetPaid())
	testUntil := info.GetTestUntil().AsTime()
	require.False(t, testUntil.Before(before.Add(time.Hour).Truncate(time.Microsecond)), "SWITCHBOARD_TEST_PERIOD applies")
	require.False(t, testUntil.After(time.Now().Add(time.Hour)))

	// The connections service's 404 reaches the caller through both hops.
	_, err = internal.CheckConnectionPaid(callCtx, &billingv1.CheckConnectionPaidRequest{ConnectionId: 5})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.ConnectionNotFound.Code, e.Code)

	// The internal API wants the internal token.
	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	_, err = billingv1.NewBillingInternalServiceClient(plain).GetSubscriptions(callCtx, &billingv1.GetSubscriptionsRequest{CompanyId: 3})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)

	// Operator: the bearer token, protovalidate rules, then the use case.
	operator := billingv1.NewBillingOperatorServiceClient(plain)
	opCtx := metadata.AppendToOutgoingContext(callCtx, auth.HeaderAuthorization, "Bearer operator")
	negative := int32(-1)
	_, err = operator.AdjustSubscription(opCtx, &billingv1.AdjustSubscriptionRequest{CompanyId: 3, SubscriptionId: info.GetId(), MaxSize: &negative})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code)

	size := int32(5)
	sub, err := operator.AdjustSubscription(opCtx, &billingv1.AdjustSubscriptionRequest{CompanyId: 3, SubscriptionId: info.GetId(),
		SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum(), MaxSize: &size})
	require.NoError(t, err)
	require.Equal(t, int32(5), sub.GetMaxSize())
	require.Empty(t, sub.GetConnections())

	subs, err := internal.GetSubscriptions(callCtx, &billingv1.GetSubscriptionsRequest{CompanyId: 3})
	require.NoError(t, err)
	require.Len(t, subs.GetSubscriptions(), 1)
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD, subs.GetSubscriptions()[0].GetSubscriptionPlan())

	// Business dialogs: the operator adds for a company identity knows; a
	// missing count is refused by the proto's rule; unknown companies are
	// 404 8000.
	count := func(n int32) *int32 { return &n }
	bal, err := operator.AddWabaDialogs(opCtx, &billingv1.AddWabaDialogsRequest{CompanyId: 3, Count: count(5)})
	require.NoError(t, err)
	require.Equal(t, int64(5), bal.GetWabaDialogsBalance())
	_, err = operator.AddWabaDialogs(opCtx, &billingv1.AddWabaDialogsRequest{CompanyId: 3})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code)
	require.Equal(t, map[string]any{"errors": []any{map[string]any{
		"location": []any{"body", "count"}, "message": "Field required", "type": "missing",
	}}}, e.Detail)
	for _, id := range []int64{4, 0, -1} {
		_, err = operator.AddWabaDialogs(opCtx, &billingv1.AddWabaDialogsRequest{CompanyId: id, Count: count(1)})
		e, ok = apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, apierr.CompanyNotFound.Code, e.Code, "company %d", id)
	}
	// The operator route wants the operator token.
	_, err = operator.AddWabaDialogs(callCtx, &billingv1.AddWabaDialogsRequest{CompanyId: 3, Count: count(1)})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)

	// Messaging's calls.
	got, err := internal.GetWabaDialogsBalance(callCtx, &billingv1.GetWabaDialogsBalanceRequest{CompanyId: 3})
	require.NoError(t, err)
	require.Equal(t, int64(5), got.GetWabaDialogsBalance())
	take, err := internal.TakeWabaDialog(callCtx, &billingv1.TakeWabaDialogRequest{CompanyId: 3, IdempotencyKey: "6f1c2e0a-message"})
	require.NoError(t, err)
	require.True(t, take.GetTaken())
	require.Equal(t, int64(4), take.GetWabaDialogsBalance())
	take, err = internal.TakeWabaDialog(callCtx, &billingv1.TakeWabaDialogRequest{CompanyId: 3, IdempotencyKey: "6f1c2e0a-message"})
	require.NoError(t, err)
	require.True(t, take.GetTaken())
	require.Equal(t, int64(4), take.GetWabaDialogsBalance())
	for _, req := range []*billingv1.TakeWabaDialogRequest{
		{CompanyId: 3},
		{CompanyId: 0, IdempotencyKey: "k"},
	} {
		_, err = internal.TakeWabaDialog(callCtx, req)
		e, ok = apierr.FromError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, int32(1), e.Code, "%v", req)
	}
	_, err = billingv1.NewBillingInternalServiceClient(plain).TakeWabaDialog(callCtx, &billingv1.TakeWabaDialogRequest{CompanyId: 3, IdempotencyKey: "x"})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)
	// The dialog taken is an outbox event, which the relay hands to the
	// partners service (SWITCHBOARD_PARTNERS_ADDR) with the internal token.
	require.Eventually(t, func() bool {
		types, _ := partners.received()
		return len(types) > 0
	}, 30*time.Second, 10*time.Millisecond)
	types, tokens := partners.received()
	require.Equal(t, []string{"3 waba_dialogs.opened true"}, types)
	require.Equal(t, []string{"internal"}, tokens)

	// The partner programme's calls.
	companies, err := internal.GetCompaniesBilling(callCtx, &billingv1.GetCompaniesBillingRequest{CompanyIds: []int64{4, 3}})
	require.NoError(t, err)
	require.Len(t, companies.GetCompanies(), 2)
	require.Equal(t, int64(4), companies.GetCompanies()[0].GetCompanyId())
	require.Empty(t, companies.GetCompanies()[0].GetSubscriptions())
	require.Zero(t, companies.GetCompanies()[0].GetWabaDialogsBalance())
	require.Equal(t, int64(3), companies.GetCompanies()[1].GetCompanyId())
	require.Len(t, companies.GetCompanies()[1].GetSubscriptions(), 1)
	require.Equal(t, info.GetId(), companies.GetCompanies()[1].GetSubscriptions()[0].GetId())
	require.Equal(t, int64(4), companies.GetCompanies()[1].GetWabaDialogsBalance())
	_, err = internal.GetCompaniesBilling(callCtx, &billingv1.GetCompaniesBillingRequest{CompanyIds: make([]int64, 10001)})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code, "at most 10000 companies")
	_, err = billingv1.NewBillingInternalServiceClient(plain).GetCompaniesBilling(callCtx, &billingv1.GetCompaniesBillingRequest{CompanyIds: []int64{3}})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)

	listed, err := internal.ListCompanySubscriptions(callCtx, &billingv1.ListSubscriptionsRequest{CompanyId: 3})
	require.NoError(t, err)
	require.Len(t, listed.GetSubscriptions(), 1)
	require.Equal(t, int32(5), listed.GetSubscriptions()[0].GetMaxSize())
	require.False(t, listed.GetSubscriptions()[0].GetAdvance().GetIsAvailable())
	_, err = internal.GrantAdvanceInternal(callCtx, &billingv1.GrantAdvanceRequest{CompanyId: 3, SubscriptionId: info.GetId()})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.SubscriptionAdvanceNotAllowed.Code, e.Code, "no real payment")
	_, err = internal.ChangeSizeInternal(callCtx, &billingv1.ChangeSizeRequest{CompanyId: 3, SubscriptionId: info.GetId()})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code, "new_max_size is required")
	changed, err := internal.ChangePlanInternal(callCtx, &billingv1.ChangePlanRequest{CompanyId: 3, SubscriptionId: info.GetId(),
		NewSubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum()})
	require.NoError(t, err)
	require.True(t, changed.GetPreview())
	requisites, err := internal.ListCompanyRequisites(callCtx, &billingv1.ListRequisitesRequest{CompanyId: 3})
	require.NoError(t, err)
	require.Empty(t, requisites.GetRequisites())
}
