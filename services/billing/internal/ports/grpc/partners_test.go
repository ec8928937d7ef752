package grpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	gproto "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	grpcport "switchboard.dev/services/billing/internal/ports/grpc"
	"switchboard.dev/services/billing/migrations"
)

type partnerServer struct {
	*grpcport.Server
	clients *apptest.Clients
	clock   *apptest.Clock
	db      *pgxpool.Pool
}

func newPartnerServer(t *testing.T) partnerServer {
	t.Helper()
	p := partnerServer{clients: apptest.NewClients(), clock: apptest.NewClock(), db: pgtest.New(t, migrations.FS)}
	a := app.New(postgres.New(p.db), apptest.NewConnections(), apptest.NewCompanies(1000),
		app.Config{TestPeriod: 72 * time.Hour, Now: p.clock.Now, Clients: p.clients})
	p.Server = grpcport.New(a, nil)
	return p
}

// paying gives the company a STANDARD subscription of size 2 that had a
// real payment and is paid for a day more: its advance may be granted.
func (p partnerServer) paying(t *testing.T, company int64) *billingv1.Subscription {
	t.Helper()
	ctx := context.Background()
	info, err := p.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{CompanyId: company, SubscriptionType: "CONNECTION_WHATSAPP"})
	require.NoError(t, err)
	sub, err := p.AdjustSubscription(ctx, &billingv1.AdjustSubscriptionRequest{
		CompanyId: company, SubscriptionId: info.GetId(),
		SubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum(),
		MaxSize:          proto(int32(2)),
		PaidUntil:        timestamppb.New(p.clock.Now().Add(24 * time.Hour)),
		ClearTestUntil:   true,
	})
	require.NoError(t, err)
	// Only a paid invoice records a real payment: set it directly.
	_, err = p.db.Exec(ctx, `UPDATE subscriptions SET has_payment = true WHERE id = $1`, sub.GetId())
	require.NoError(t, err)
	return sub
}

func requireCode(t *testing.T, err error, def apierr.Def) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, def.Code, e.Code, e.Error())
}

func TestListCompanySubscriptionsAndGrantAdvanceInternal(t *testing.T) {
	ctx := context.Background()
	p := newPartnerServer(t)
	p.clients.Set(1, true)
	sub := p.paying(t, 1)
	req := &billingv1.ListSubscriptionsRequest{CompanyId: 1}

	own, err := p.ListSubscriptions(ctx, req)
	require.NoError(t, err)
	require.False(t, own.GetSubscriptions()[0].GetAdvance().GetIsAvailable(), "refused to the client itself")
	partner, err := p.ListCompanySubscriptions(ctx, req)
	require.NoError(t, err)
	require.Len(t, partner.GetSubscriptions(), 1)
	require.True(t, partner.GetSubscriptions()[0].GetAdvance().GetIsAvailable(), "granted on the partner's route")
	// Otherwise the very same public shape.
	own.GetSubscriptions()[0].GetAdvance().IsAvailable = true
	require.True(t, gproto.Equal(own, partner), "%v\n%v", own, partner)

	grant := &billingv1.GrantAdvanceRequest{CompanyId: 1, SubscriptionId: sub.GetId()}
	_, err = p.GrantAdvance(ctx, grant)
	requireCode(t, err, apierr.SubscriptionAdvanceNotAllowed)
	got, err := p.GrantAdvanceInternal(ctx, grant)
	require.NoError(t, err)
	require.True(t, got.GetAdvance().GetIsActive())
	require.False(t, got.GetAdvance().GetIsAvailable())
	require.Equal(t, sub.GetPaidUntil().AsTime().Add(120*time.Hour), got.GetPaidUntil().AsTime())
	require.NotNil(t, got.GetConnections())
	_, err = p.GrantAdvanceInternal(ctx, grant)
	requireCode(t, err, apierr.SubscriptionAdvanceNotAllowed)
	_, err = p.GrantAdvanceInternal(ctx, &billingv1.GrantAdvanceRequest{CompanyId: 2, SubscriptionId: sub.GetId()})
	requireCode(t, err, apierr.SubscriptionNotFound)

	empty, err := p.ListCompanySubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 7})
	require.NoError(t, err)
	require.NotNil(t, empty.GetSubscriptions())
	require.Empty(t, empty.GetSubscriptions())
}

func TestChangesInternal(t *testing.T) {
	ctx := context.Background()
	p := newPartnerServer(t)
	sub := p.paying(t, 1)
	list := func() *billingv1.Subscription {
		l, err := p.ListCompanySubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: 1})
		require.NoError(t, err)
		return l.GetSubscriptions()[0]
	}

	// Preview when absent, as the public call: the same answer, nothing
	// changed.
	size := &billingv1.ChangeSizeRequest{CompanyId: 1, SubscriptionId: sub.GetId(), NewMaxSize: proto(int32(4))}
	public, err := p.ChangeSize(ctx, size)
	require.NoError(t, err)
	internal, err := p.ChangeSizeInternal(ctx, size)
	require.NoError(t, err)
	require.True(t, gproto.Equal(public, internal), "%v\n%v", public, internal)
	require.True(t, internal.GetPreview())
	require.Equal(t, int32(2), list().GetMaxSize())

	size.Preview = proto(false)
	internal, err = p.ChangeSizeInternal(ctx, size)
	require.NoError(t, err)
	require.False(t, internal.GetPreview())
	require.Equal(t, int32(2), internal.GetSource().GetOldMaxSize())
	require.Equal(t, int32(4), internal.GetSource().GetNewMaxSize())
	require.True(t, internal.GetSource().GetNewPaidUntil().AsTime().Before(sub.GetPaidUntil().AsTime()), "the value paid spread over 4")
	require.Equal(t, int32(4), list().GetMaxSize())

	plan := &billingv1.ChangePlanRequest{CompanyId: 1, SubscriptionId: sub.GetId(),
		NewSubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_START.Enum(), Preview: proto(false)}
	_, err = p.ChangePlanInternal(ctx, plan)
	fieldErr(t, err) // START holds one connection: the public 422
	plan.Preview = nil
	plan.NewSubscriptionPlan = billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_ADVANCED.Enum()
	_, err = p.ChangePlanInternal(ctx, plan)
	fieldErr(t, err)

	// The public errors: unknown subscription, another company's.
	_, err = p.ChangeSizeInternal(ctx, &billingv1.ChangeSizeRequest{CompanyId: 2, SubscriptionId: sub.GetId(), NewMaxSize: proto(int32(3))})
	requireCode(t, err, apierr.SubscriptionNotFound)
	_, err = p.ChangePlanInternal(ctx, &billingv1.ChangePlanRequest{CompanyId: 1, SubscriptionId: sub.GetId() + 100,
		NewSubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum()})
	requireCode(t, err, apierr.SubscriptionNotFound)

	// An advance active: 22017 on the partner's route too.
	_, err = p.GrantAdvanceInternal(ctx, &billingv1.GrantAdvanceRequest{CompanyId: 1, SubscriptionId: sub.GetId()})
	require.NoError(t, err)
	_, err = p.ChangePlanInternal(ctx, &billingv1.ChangePlanRequest{CompanyId: 1, SubscriptionId: sub.GetId(),
		NewSubscriptionPlan: billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD.Enum()})
	requireCode(t, err, apierr.SubscriptionAdvanceActive)
	_, err = p.ChangeSizeInternal(ctx, &billingv1.ChangeSizeRequest{CompanyId: 1, SubscriptionId: sub.GetId(), NewMaxSize: proto(int32(5))})
	requireCode(t, err, apierr.SubscriptionAdvanceActive)
}

func TestListCompanyRequisites(t *testing.T) {
	ctx := context.Background()
	p := newPartnerServer(t)
	for _, r := range []*billingv1.CreateRequisiteRequest{
		{CompanyId: 1, Tin: "7707083893", Kpp: proto("773601001"), Name: "First"},
		{CompanyId: 1, Tin: "500100732259", Name: "Second"},
		{CompanyId: 2, Tin: "7707083893", Kpp: proto("773601001"), Name: "Other"},
	} {
		_, err := p.CreateRequisite(ctx, r)
		require.NoError(t, err)
	}
	req := &billingv1.ListRequisitesRequest{CompanyId: 1}
	got, err := p.ListCompanyRequisites(ctx, req)
	require.NoError(t, err)
	require.Len(t, got.GetRequisites(), 2)
	require.Equal(t, "First", got.GetRequisites()[0].GetName(), "oldest first")
	require.Equal(t, "773601001", got.GetRequisites()[0].GetKpp())
	require.Equal(t, "Second", got.GetRequisites()[1].GetName())
	require.Nil(t, got.GetRequisites()[1].Kpp)
	require.Equal(t, "APPROVED", got.GetRequisites()[1].GetApprovalStatus())
	public, err := p.ListRequisites(ctx, req)
	require.NoError(t, err)
	require.True(t, gproto.Equal(public, got))

	none, err := p.ListCompanyRequisites(ctx, &billingv1.ListRequisitesRequest{CompanyId: 9})
	require.NoError(t, err)
	require.NotNil(t, none.GetRequisites())
	require.Empty(t, none.GetRequisites())
}

func TestGetCompaniesBilling(t *testing.T) {
	ctx := context.Background()
	p := newPartnerServer(t)
	sub := p.paying(t, 1)
	tg, err := p.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{CompanyId: 1, SubscriptionType: "CONNECTION_TELEGRAM"})
	require.NoError(t, err)
	other, err := p.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{CompanyId: 3, SubscriptionType: "CONNECTION_AVITO"})
	require.NoError(t, err)
	_, err = p.AddWabaDialogs(ctx, &billingv1.AddWabaDialogsRequest{CompanyId: 3, Count: proto(int32(6))})
	require.NoError(t, err)

	got, err := p.GetCompaniesBilling(ctx, &billingv1.GetCompaniesBillingRequest{CompanyIds: []int64{2, 3, 1}})
	require.NoError(t, err)
	cs := got.GetCompanies()
	require.Len(t, cs, 3)

	require.Equal(t, int64(2), cs[0].GetCompanyId(), "unknown to billing, in its place")
	require.Empty(t, cs[0].GetSubscriptions())
	require.Zero(t, cs[0].GetWabaDialogsBalance())

	require.Equal(t, int64(3), cs[1].GetCompanyId())
	require.Equal(t, int64(6), cs[1].GetWabaDialogsBalance())
	require.Len(t, cs[1].GetSubscriptions(), 1)
	require.True(t, gproto.Equal(other, cs[1].GetSubscriptions()[0]), "as EnsureSubscription answers it")

	require.Equal(t, int64(1), cs[2].GetCompanyId())
	require.Zero(t, cs[2].GetWabaDialogsBalance())
	subs, err := p.GetSubscriptions(ctx, &billingv1.GetSubscriptionsRequest{CompanyId: 1})
	require.NoError(t, err)
	require.Len(t, cs[2].GetSubscriptions(), 2)
	for i, s := range subs.GetSubscriptions() {
		require.True(t, gproto.Equal(s, cs[2].GetSubscriptions()[i]), "%v\n%v", s, cs[2].GetSubscriptions()[i])
	}
	require.Equal(t, []int64{sub.GetId(), tg.GetId()}, []int64{cs[2].GetSubscriptions()[0].GetId(), cs[2].GetSubscriptions()[1].GetId()})
	require.Equal(t, billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_STANDARD, cs[2].GetSubscriptions()[0].GetSubscriptionPlan())
	require.True(t, cs[2].GetSubscriptions()[0].GetPaid())

	none, err := p.GetCompaniesBilling(ctx, &billingv1.GetCompaniesBillingRequest{})
	require.NoError(t, err)
	require.Empty(t, none.GetCompanies())
}
