package main

import (
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/config"
	"switchboard.dev/pkg/freeport"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/partners/migrations"
)

// identityPeer says company 7 is a referral client of partner 100.
type identityPeer struct {
	identityv1.UnimplementedIdentityInternalServiceServer
}

func (identityPeer) GetClientLink(_ context.Context, req *identityv1.GetClientLinkRequest) (*identityv1.ClientLink, error) {
	if req.GetCompanyId() != 7 {
		return &identityv1.ClientLink{CompanyId: req.GetCompanyId()}, nil
	}
	return &identityv1.ClientLink{CompanyId: 7, PartnerCompanyId: 100, ClientType: identityv1.ClientType_CLIENT_TYPE_REFERRAL}, nil
}

func (identityPeer) ListPartnerClients(_ context.Context, req *identityv1.ListPartnerClientsRequest) (*identityv1.ListPartnerClientsResponse, error) {
	out := &identityv1.ListPartnerClientsResponse{}
	if req.GetPartnerCompanyId() == 100 {
		out.Clients = append(out.Clients, &identityv1.PartnerClient{CompanyId: 7, Name: "Client Seven",
			ClientType: identityv1.ClientType_CLIENT_TYPE_REFERRAL})
	}
	return out, nil
}

// authPeer knows one API key, of partner company 100.
type authPeer struct {
	identityv1.UnimplementedAuthServiceServer
}

func (authPeer) Authenticate(_ context.Context, req *identityv1.AuthenticateRequest) (*identityv1.Principal, error) {
	if req.GetKeyHash() != auth.HashKey("partner-key") {
		return nil, auth.UnknownKey()
	}
	return &identityv1.Principal{CompanyId: 100, IntegrationId: 1, Scopes: []string{"partners"}, CompanyIsPartner: true}, nil
}

func TestPayoutMinSetting(t *testing.T) {
	for _, bad := range []string{"", "0", "-1", "10.001", "ten"} {
		_, err := spec(settings{PayoutMin: bad})
		require.ErrorContains(t, err, "SWITCHBOARD_PARTNER_PAYOUT_MIN", bad)
	}
	var s settings
	require.NoError(t, config.Load(&s, map[string]string{}))
	require.Equal(t, "1000.00", s.PayoutMin)
	_, err := spec(s)
	require.NoError(t, err)
}

// TestServiceWiring starts the real service and hands it billing's events
// as billing's relay does: the internal service is registered, wants the
// internal token, and applies what it is given once.
func TestServiceWiring(t *testing.T) {
	redisAddr := os.Getenv("SWITCHBOARD_TEST_REDIS_ADDR")
	if redisAddr == "" {
		t.Fatal("SWITCHBOARD_TEST_REDIS_ADDR is not set (source /tmp/sbenv or run make test)")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	peer := grpc.NewServer()
	identityv1.RegisterIdentityInternalServiceServer(peer, identityPeer{})
	identityv1.RegisterAuthServiceServer(peer, authPeer{})
	go peer.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(peer.Stop)

	addr, err := freeport.Addr()
	require.NoError(t, err)
	dsn := pgtest.NewDSN(t, migrations.FS)
	environ := map[string]string{
		"SWITCHBOARD_GRPC_ADDR":          addr,
		"SWITCHBOARD_DATABASE_URL":       dsn,
		"SWITCHBOARD_REDIS_ADDR":         redisAddr,
		"SWITCHBOARD_INTERNAL_TOKEN":     "internal",
		"SWITCHBOARD_ADMIN_TOKEN":        "operator",
		"SWITCHBOARD_IDENTITY_ADDR":      lis.Addr().String(),
		"SWITCHBOARD_BILLING_ADDR":       lis.Addr().String(),
		"SWITCHBOARD_CONNECTIONS_ADDR":   lis.Addr().String(),
		"SWITCHBOARD_PARTNER_PAYOUT_MIN": "500.00",
	}
	var s settings
	require.NoError(t, config.Load(&s, environ))
	sp, err := spec(s)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- service.Run(ctx, sp, environ, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	conn, err := server.DialInternal(addr, "internal")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	internal := partnersv1.NewPartnersInternalServiceClient(conn)
	callCtx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()

	// The payloads as billing's publisher makes them: its JSON as a Struct.
	payload := func(json string) *structpb.Struct {
		s := &structpb.Struct{}
		require.NoError(t, s.UnmarshalJSON([]byte(json)))
		return s
	}
	at := time.Date(2026, 5, 31, 23, 59, 59, 0, time.UTC)
	req := &partnersv1.IngestBillingEventsRequest{Events: []*partnersv1.BillingEvent{
		{Id: "6d1e0f5c-0000-4000-8000-000000000001", CompanyId: 7, EventType: "waba_dialogs.opened",
			Payload: payload(`{"company_id": 7, "at": "2026-05-31T23:00:00Z"}`), CreatedAt: timestamppb.New(at)},
		{Id: "6d1e0f5c-0000-4000-8000-000000000002", CompanyId: 7, EventType: "invoices.status_changed",
			Payload: payload(`{"invoice_id": 12, "company_id": 7, "status": "paid", "previous_status": "new",
				"amount": "2040", "payment_method": "CARD_RU", "at": "2026-05-31T23:59:59Z",
				"items": [{"type": "SUBSCRIPTION", "amount": "1990", "amount_after_percent_discounts": "1990",
				           "subscription_id": 3, "subscription_type": "CONNECTION_WHATSAPP", "period_months": 1},
				          {"type": "WABA_DIALOGS", "amount": "50", "amount_after_percent_discounts": "50", "count": 10}]}`),
			CreatedAt: timestamppb.New(at)},
	}}
	resp, err := internal.IngestBillingEvents(callCtx, req, grpc.WaitForReady(true))
	require.NoError(t, err)
	require.Equal(t, int32(2), resp.GetApplied())
	resp, err = internal.IngestBillingEvents(callCtx, req)
	require.NoError(t, err)
	require.Zero(t, resp.GetApplied(), "sent again, nothing new")

	db, err := pgx.Connect(callCtx, dsn)
	require.NoError(t, err)
	defer db.Close(callCtx)
	rows, err := db.Query(callCtx, `SELECT partner_company_id || ' ' || period || ' ' || company_id || ' ' || reward_type || ' ' ||
		period_topups_value || ' ' || period_spendings_value || ' ' || reward_value FROM rewards ORDER BY id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"100 2026-05 7 SUBSCRIPTIONS_REWARD 1990.00 1990.00 199.00",
		"100 2026-05 7 WABA_DIALOGS_REWARD 50.00 5.00 5.00",
	}, got)

	// The internal service wants the internal token; the proto's rules
	// hold.
	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	_, err = partnersv1.NewPartnersInternalServiceClient(plain).IngestBillingEvents(callCtx, req)
	e, ok := apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(401), e.Code)
	_, err = internal.IngestBillingEvents(callCtx, &partnersv1.IngestBillingEventsRequest{})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code, "at least one event")

	// The partner's routes: balance, rewards, payouts (the minimum is
	// SWITCHBOARD_PARTNER_PAYOUT_MIN's 500.00).
	public := partnersv1.NewPartnersServiceClient(plain)
	keyCtx := metadata.AppendToOutgoingContext(callCtx, auth.HeaderAPIKey, "partner-key")
	balance := func() string {
		b, err := public.GetBalance(keyCtx, &partnersv1.GetBalanceRequest{CompanyId: 100})
		require.NoError(t, err)
		return b.GetBalance().GetValue()
	}
	require.Equal(t, "204", balance())
	rewards, err := public.ListRewards(keyCtx, &partnersv1.ListRewardsRequest{CompanyId: 100})
	require.NoError(t, err)
	require.Len(t, rewards.GetRewards(), 2)
	r := rewards.GetRewards()[0]
	require.Equal(t, "2026-05", r.GetPeriod())
	require.Equal(t, int64(7), r.GetCompanyId())
	require.Equal(t, "Client Seven", r.GetCompanyName())
	require.Equal(t, "SUBSCRIPTIONS_REWARD", r.GetRewardType())
	require.Equal(t, []string{"1990", "1990", "199", "10"}, []string{r.GetPeriodTopupsValue().GetValue(),
		r.GetPeriodSpendingsValue().GetValue(), r.GetRewardValue().GetValue(), r.GetPartnerPercent().GetValue()})
	require.Equal(t, "CONNECTION_WHATSAPP", r.GetSubscriptionType())
	require.Equal(t, int32(1), r.GetPeriodMonths())
	require.True(t, at.Equal(r.GetCreatedAt().AsTime()))
	w := rewards.GetRewards()[1]
	require.Nil(t, w.SubscriptionType)
	require.Nil(t, w.PeriodMonths)
	_, err = public.ListRewards(keyCtx, &partnersv1.ListRewardsRequest{CompanyId: 100, Period: proto.String("2026-13")})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code, "a period is YYYY-MM")

	req1, err := public.CreatePartnerRequisite(keyCtx, &partnersv1.CreatePartnerRequisiteRequest{CompanyId: 100,
		Tin: "7707083893", Kpp: proto.String("773601001"), Name: "LLC Partner", Default: proto.Bool(true),
		Bic: proto.String("044525225"), CurrentAccount: proto.String("40702810900000000001")})
	require.NoError(t, err)
	_, err = public.CreatePayout(keyCtx, &partnersv1.CreatePayoutRequest{CompanyId: 100, RequisiteId: proto.Int64(req1.GetId())})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.PartnerPayoutInsufficientBalance.Code, e.Code, "204 is below 500.00")
	_, err = internal.IngestBillingEvents(callCtx, &partnersv1.IngestBillingEventsRequest{Events: []*partnersv1.BillingEvent{
		{Id: "6d1e0f5c-0000-4000-8000-000000000003", CompanyId: 7, EventType: "invoices.status_changed",
			Payload: payload(`{"invoice_id": 13, "company_id": 7, "status": "paid", "at": "2026-06-01T00:00:00Z",
				"items": [{"type": "SUBSCRIPTION", "amount": "3000.50", "subscription_type": "CONNECTION_WHATSAPP", "period_months": 3}]}`)},
	}})
	require.NoError(t, err)
	require.Equal(t, "504.05", balance())
	payout, err := public.CreatePayout(keyCtx, &partnersv1.CreatePayoutRequest{CompanyId: 100, RequisiteId: proto.Int64(req1.GetId())})
	require.NoError(t, err)
	require.Equal(t, "CREATED", payout.GetStatus())
	require.Equal(t, "PAYOUT", payout.GetPayoutType())
	require.Equal(t, "504.05", payout.GetValue().GetValue())
	require.Equal(t, req1.GetId(), payout.GetRequisiteId())
	require.Nil(t, payout.Comment)
	require.Equal(t, "0", balance())

	operator := partnersv1.NewPartnersOperatorServiceClient(plain)
	opCtx := metadata.AppendToOutgoingContext(callCtx, auth.HeaderAuthorization, "Bearer operator")
	rejected, err := operator.UpdatePayout(opCtx, &partnersv1.UpdatePayoutRequest{PayoutId: payout.GetId(), Status: "REJECTED",
		Comment: proto.String("the account is closed")})
	require.NoError(t, err)
	require.Equal(t, "REJECTED", rejected.GetStatus())
	require.Equal(t, "the account is closed", rejected.GetComment())
	require.Equal(t, "504.05", balance())
	_, err = operator.UpdatePayout(opCtx, &partnersv1.UpdatePayoutRequest{PayoutId: payout.GetId(), Status: "PAID"})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.PartnerPayoutNotActive.Code, e.Code)
	_, err = operator.UpdatePayout(opCtx, &partnersv1.UpdatePayoutRequest{PayoutId: payout.GetId() + 1, Status: "PAID"})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, apierr.PartnerPayoutNotFound.Code, e.Code)
	_, err = operator.UpdatePayout(opCtx, &partnersv1.UpdatePayoutRequest{PayoutId: payout.GetId(), Status: "CREATED"})
	e, ok = apierr.FromError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, int32(1), e.Code, "PAID or REJECTED only")
	payouts, err := public.ListPayouts(keyCtx, &partnersv1.ListPayoutsRequest{CompanyId: 100})
	require.NoError(t, err)
	require.Len(t, payouts.GetPayouts(), 1)
	require.Equal(t, "REJECTED", payouts.GetPayouts()[0].GetStatus())
}
