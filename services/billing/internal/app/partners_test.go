package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/app/apptest"
	"switchboard.dev/services/billing/internal/domain"
)

// partnerEnv is a benv whose identity knows partners' clients.
type partnerEnv struct {
	benv
	clients *apptest.Clients
}

func newPartnerEnv(t *testing.T) partnerEnv {
	t.Helper()
	p := partnerEnv{benv: newBillingEnv(t), clients: apptest.NewClients()}
	cfg := p.config()
	cfg.Clients = p.clients
	p.svc = app.New(p.repo, p.conns, p.companies, cfg)
	return p
}

// advanceDue makes the company a STANDARD subscription paid for a month by
// a real payment and puts the clock a day before its end, where the
// advance rules allow it; it answers the subscription and that end.
func (p partnerEnv) advanceDue(t *testing.T, company int64) (domain.Subscription, time.Time) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2031, 1, 10, 12, 0, 0, 0, time.UTC)
	p.clock.Set(t0)
	sub := p.subscription(t, company, whatsapp, domain.PlanStandard, 1, nil)
	_, err := p.svc.PayInvoice(ctx, p.invoice(t, card(company, 1, subItem(sub.ID, domain.PlanStandard, 1))).ID)
	require.NoError(t, err)
	end := time.Date(2031, 2, 10, 12, 0, 0, 0, time.UTC)
	require.Equal(t, end, *p.stored(t, company, sub.ID).PaidUntil)
	p.clock.Set(end.Add(-day))
	return p.stored(t, company, sub.ID), end
}

// TestPartnerClientAdvance: billing.md "400 22016 … also when a
// partner-type client of a partner asks itself; its partner's route grants
// it". The company's own views say the advance is not available; the
// partner's view and route say and do what the rules allow.
func TestPartnerClientAdvance(t *testing.T) {
	ctx := context.Background()
	p := newPartnerEnv(t)
	const client = 1
	p.clients.Set(client, true)
	sub, end := p.advanceDue(t, client)
	asked := p.clients.Calls.Load()

	// The company's own list: not available, identity asked once for the
	// list.
	own, err := p.svc.ListSubscriptions(ctx, client)
	require.NoError(t, err)
	require.Len(t, own, 1)
	require.False(t, own[0].AdvanceAvailable)
	require.False(t, own[0].AdvanceActive)
	require.Equal(t, asked+1, p.clients.Calls.Load())

	// The partner's view: available, as its route would grant it, and
	// identity is not asked.
	partner, err := p.svc.ListCompanySubscriptions(ctx, client)
	require.NoError(t, err)
	require.Len(t, partner, 1)
	require.True(t, partner[0].AdvanceAvailable)
	require.Equal(t, own[0].Subscription, partner[0].Subscription)
	require.Equal(t, asked+1, p.clients.Calls.Load())

	// The answers of a PATCH and of the operator's change are the
	// company's views too.
	c := p.conns.Add(client, whatsapp, 0)
	v, err := p.svc.SetConnections(ctx, app.UpdateConnections{CompanyID: client, SubscriptionID: sub.ID, ConnectionIDs: []int64{c}})
	require.NoError(t, err)
	require.Equal(t, []int64{c}, v.Connections)
	require.False(t, v.AdvanceAvailable)
	size := int32(2)
	v, err = p.svc.AdjustSubscription(ctx, app.Adjust{CompanyID: client, SubscriptionID: sub.ID, Adjustment: domain.Adjustment{MaxSize: &size}})
	require.NoError(t, err)
	require.Equal(t, int32(2), v.MaxSize)
	require.False(t, v.AdvanceAvailable)

	// Its own request is refused and changes nothing; an unknown
	// subscription is still 404.
	_, err = p.svc.GrantAdvance(ctx, client, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	got := p.stored(t, client, sub.ID)
	require.Equal(t, end, *got.PaidUntil)
	require.False(t, got.Advance.Active())
	_, err = p.svc.GrantAdvance(ctx, client, sub.ID+1000)
	apiErr(t, err, apierr.SubscriptionNotFound)

	// The partner's route grants it, under the public rules otherwise.
	v, err = p.svc.GrantAdvanceAsPartner(ctx, client, sub.ID)
	require.NoError(t, err)
	require.Equal(t, end.Add(120*time.Hour), *v.PaidUntil)
	require.True(t, v.AdvanceActive)
	require.False(t, v.AdvanceAvailable)
	require.Equal(t, []int64{c}, v.Connections)
	got = p.stored(t, client, sub.ID)
	require.Equal(t, end, *got.Advance.From)
	require.Equal(t, end.Add(120*time.Hour), *got.Advance.Until)
	_, err = p.svc.GrantAdvanceAsPartner(ctx, client, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	_, err = p.svc.GrantAdvanceAsPartner(ctx, client, sub.ID+1000)
	apiErr(t, err, apierr.SubscriptionNotFound)
	_, err = p.svc.GrantAdvanceAsPartner(ctx, client+1, sub.ID)
	apiErr(t, err, apierr.SubscriptionNotFound) // another company's subscription
	partner, err = p.svc.ListCompanySubscriptions(ctx, client)
	require.NoError(t, err)
	require.True(t, partner[0].AdvanceActive)
	require.False(t, partner[0].AdvanceAvailable)

	// Nothing is available now: the company's list does not ask identity.
	asked = p.clients.Calls.Load()
	_, err = p.svc.ListSubscriptions(ctx, client)
	require.NoError(t, err)
	require.Equal(t, asked, p.clients.Calls.Load())
}

// TestPartnerRouteKeepsTheRules: the partner's route refuses what the
// public rules refuse (too early, no real payment).
func TestPartnerRouteKeepsTheRules(t *testing.T) {
	ctx := context.Background()
	p := newPartnerEnv(t)
	p.clients.Set(1, true)
	sub, end := p.advanceDue(t, 1)
	p.clock.Set(end.Add(-48*time.Hour - time.Microsecond))
	_, err := p.svc.GrantAdvanceAsPartner(ctx, 1, sub.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed)
	list, err := p.svc.ListCompanySubscriptions(ctx, 1)
	require.NoError(t, err)
	require.False(t, list[0].AdvanceAvailable)

	unpaid := p.subscription(t, 2, whatsapp, domain.PlanStandard, 1, ptr(end))
	p.clock.Set(end.Add(-day))
	_, err = p.svc.GrantAdvanceAsPartner(ctx, 2, unpaid.ID)
	apiErr(t, err, apierr.SubscriptionAdvanceNotAllowed) // no real payment
}

// TestOwnAdvanceOfOtherCompanies: a referral-type client or a company with
// no partner asks for its own advance as before.
func TestOwnAdvanceOfOtherCompanies(t *testing.T) {
	ctx := context.Background()
	p := newPartnerEnv(t)
	p.clients.Set(1, false)
	sub, end := p.advanceDue(t, 1)
	list, err := p.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.True(t, list[0].AdvanceAvailable)
	v, err := p.svc.GrantAdvance(ctx, 1, sub.ID)
	require.NoError(t, err)
	require.Equal(t, end.Add(120*time.Hour), *v.PaidUntil)
}

// TestAdvanceWithIdentityDown: the company's own advance and list need
// identity (503 while it is down, nothing granted); the partner's do not.
func TestAdvanceWithIdentityDown(t *testing.T) {
	ctx := context.Background()
	p := newPartnerEnv(t)
	sub, end := p.advanceDue(t, 1)
	p.clients.Fail(apierr.ServiceUnavailable.Msg("identity is unavailable, try again later"))

	_, err := p.svc.ListSubscriptions(ctx, 1)
	apiErr(t, err, apierr.ServiceUnavailable)
	_, err = p.svc.GrantAdvance(ctx, 1, sub.ID)
	apiErr(t, err, apierr.ServiceUnavailable)
	require.Equal(t, end, *p.stored(t, 1, sub.ID).PaidUntil)

	list, err := p.svc.ListCompanySubscriptions(ctx, 1)
	require.NoError(t, err)
	require.True(t, list[0].AdvanceAvailable)
	v, err := p.svc.GrantAdvanceAsPartner(ctx, 1, sub.ID)
	require.NoError(t, err)
	require.True(t, v.AdvanceActive)

	// With no advance available the company's list needs no identity.
	list, err = p.svc.ListSubscriptions(ctx, 1)
	require.NoError(t, err)
	require.False(t, list[0].AdvanceAvailable)
}

// batchRepo counts the repository calls of CompaniesBilling and fails any
// per-company read.
type batchRepo struct {
	app.Repository
	subs, balances atomic.Int64
	t              *testing.T
}

func (r *batchRepo) CompaniesSubscriptions(ctx context.Context, ids []int64) ([]domain.Subscription, error) {
	r.subs.Add(1)
	return r.Repository.CompaniesSubscriptions(ctx, ids)
}

func (r *batchRepo) WabaDialogsBalances(ctx context.Context, ids []int64) (map[int64]int64, error) {
	r.balances.Add(1)
	return r.Repository.WabaDialogsBalances(ctx, ids)
}

func (r *batchRepo) Subscriptions(context.Context, int64, []int64) ([]domain.Subscription, error) {
	r.t.Error("CompaniesBilling read one company's subscriptions")
	return nil, nil
}

func (r *batchRepo) WabaDialogsBalance(context.Context, int64) (int64, error) {
	r.t.Error("CompaniesBilling read one company's balance")
	return 0, nil
}

func TestCompaniesBilling(t *testing.T) {
	ctx := context.Background()
	b := newBillingEnv(t)
	// Company 1: two subscriptions and a balance; 3: one subscription, no
	// balance; 5: a balance only; 4: not asked for; 2: never seen.
	wa := b.ensure(t, 1, whatsapp)
	tg := b.ensure(t, 1, telegram)
	paid := b.clock.Now().Add(-time.Hour)
	lapsed := b.subscription(t, 3, whatsapp, domain.PlanStandard, 3, &paid)
	b.ensure(t, 4, whatsapp)
	_, err := b.svc.AddWabaDialogs(ctx, 1, 7)
	require.NoError(t, err)
	_, err = b.svc.AddWabaDialogs(ctx, 5, 2)
	require.NoError(t, err)
	_, err = b.svc.AddWabaDialogs(ctx, 4, 9)
	require.NoError(t, err)

	repo := &batchRepo{Repository: b.repo, t: t}
	svc := app.New(repo, b.conns, b.companies, b.config())
	got, err := svc.CompaniesBilling(ctx, []int64{3, 2, 1, 5, 1, 0})
	require.NoError(t, err)
	require.Equal(t, int64(1), repo.subs.Load(), "one query for every company's subscriptions")
	require.Equal(t, int64(1), repo.balances.Load(), "one query for every company's balance")

	ids := func(s app.CompanySummary) []int64 {
		out := []int64{}
		for _, i := range s.Subscriptions {
			out = append(out, i.ID)
		}
		return out
	}
	require.Len(t, got, 6, "one per company asked, in the order asked")
	for i, want := range []struct {
		company int64
		subs    []int64
		balance int64
	}{
		{3, []int64{lapsed.ID}, 0},
		{2, []int64{}, 0},
		{1, []int64{wa, tg}, 7},
		{5, []int64{}, 2},
		{1, []int64{wa, tg}, 7},
		{0, []int64{}, 0},
	} {
		require.Equal(t, want.company, got[i].CompanyID, i)
		require.Equal(t, want.subs, ids(got[i]), i)
		require.NotNil(t, got[i].Subscriptions, i)
		require.Equal(t, want.balance, got[i].WabaDialogsBalance, i)
	}
	// Each subscription as GetSubscriptions shows it.
	require.True(t, got[2].Subscriptions[0].Paid, "in its test period")
	require.Equal(t, whatsapp, got[2].Subscriptions[0].Type)
	require.Equal(t, int64(1), got[2].Subscriptions[0].CompanyID)
	require.False(t, got[0].Subscriptions[0].Paid, "paid_until has passed")
	require.Equal(t, domain.PlanStandard, got[0].Subscriptions[0].Plan)
	require.Equal(t, int32(3), got[0].Subscriptions[0].MaxSize)
	own, err := b.svc.GetSubscriptions(ctx, 3, nil)
	require.NoError(t, err)
	require.Equal(t, own, got[0].Subscriptions)

	// No companies: no queries.
	empty, err := svc.CompaniesBilling(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, empty)
	require.Equal(t, int64(1), repo.subs.Load())
	require.Equal(t, int64(1), repo.balances.Load())
}
