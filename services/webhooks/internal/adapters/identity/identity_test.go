package identity_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/localcache/localcachetest"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/pkg/server/servertest"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/webhooks/internal/adapters/identity"
	"switchboard.dev/services/webhooks/internal/domain"
)

// fakeIdentity answers the targets it holds, by pair or by company, counts
// the calls, and can hold one answer midway.
type fakeIdentity struct {
	identityv1.UnimplementedV1IntegrationsInternalServiceServer
	mu      sync.Mutex
	targets []*identityv1.WebhookTarget
	calls   int
	// asked is each call's company_ids.
	asked [][]int64
	gate  chan struct{}
	// old answers as an identity that predates company_ids: the
	// connections only.
	old bool
}

func (f *fakeIdentity) ListWebhookTargets(_ context.Context, req *identityv1.ListWebhookTargetsRequest) (*identityv1.ListWebhookTargetsResponse, error) {
	f.mu.Lock()
	f.calls++
	f.asked = append(f.asked, req.GetCompanyIds())
	var out []*identityv1.WebhookTarget
	for _, x := range f.targets {
		match := false
		for _, c := range req.GetCompanyIds() {
			match = match || (x.GetCompanyId() == c && !f.old)
		}
		for _, p := range req.GetConnections() {
			match = match || (x.GetCompanyId() == p.GetCompanyId() && x.GetConnectionId() == p.GetConnectionId())
		}
		if match {
			out = append(out, x)
		}
	}
	gate := f.gate
	f.gate = nil
	f.mu.Unlock()
	if gate != nil {
		gate <- struct{}{}
		<-gate
	}
	return &identityv1.ListWebhookTargetsResponse{Targets: out, WholeCompanies: len(req.GetCompanyIds()) > 0 && !f.old}, nil
}

func (f *fakeIdentity) set(fn func(f *fakeIdentity)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeIdentity) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func serve(t *testing.T, f *fakeIdentity, rdb redis.UniversalClient) (identity.Targets, *localcache.Cache[[]domain.IntegrationTarget]) {
	t.Helper()
	conn := servertest.Serve(t, "", func(g *grpc.Server) { identityv1.RegisterV1IntegrationsInternalServiceServer(g, f) })
	cache := identity.NewCache(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if rdb != nil {
		localcachetest.Running(t, cache, rdb)
	}
	return identity.New(conn).WithCache(cache), cache
}

func target(company, connection, integration int64) *identityv1.WebhookTarget {
	return &identityv1.WebhookTarget{CompanyId: company, ConnectionId: connection, IntegrationId: integration,
		Url: "https://example.com/" + strconv.FormatInt(integration, 10), Secret: "whsec_x"}
}

func TestTargetsKeptUntilIdentityAnnounces(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	// Company ids of this test's own: others announce on the channel too.
	a, b := time.Now().UnixNano(), time.Now().UnixNano()+1
	f := &fakeIdentity{targets: []*identityv1.WebhookTarget{target(a, 1, 10), target(a, 2, 10), target(a, 2, 11), target(b, 5, 20)}}
	targets, _ := serve(t, f, rdb)

	batch := []domain.CompanyConnection{{CompanyID: b, ConnectionID: 5}, {CompanyID: a, ConnectionID: 2}, {CompanyID: a, ConnectionID: 2}, {CompanyID: a, ConnectionID: 3}}
	want := []domain.IntegrationTarget{
		{CompanyID: a, ConnectionID: 2, IntegrationID: 10, URL: "https://example.com/10", Secret: "whsec_x"},
		{CompanyID: a, ConnectionID: 2, IntegrationID: 11, URL: "https://example.com/11", Secret: "whsec_x"},
		{CompanyID: b, ConnectionID: 5, IntegrationID: 20, URL: "https://example.com/20", Secret: "whsec_x"},
	}
	for range 3 {
		got, err := targets.Targets(ctx, batch)
		require.NoError(t, err)
		require.Equal(t, want, got, "the connections asked for, by company, connection and integration")
	}
	require.Equal(t, 1, f.count(), "one call for both companies")

	// Identity unbinds connection 2 from integration 11 and announces a.
	f.set(func(f *fakeIdentity) { f.targets = append(f.targets[:2], f.targets[3:]...) })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.IntegrationsChannel, strconv.FormatInt(a, 10)))
	got, err := targets.Targets(ctx, batch)
	require.NoError(t, err)
	require.Equal(t, []domain.IntegrationTarget{want[0], want[2]}, got)
	require.Equal(t, 2, f.count())
	require.Equal(t, []int64{a}, f.asked[1], "only the announced company asked again")
}

// Fail closed: while the announcements are not heard, every intake asks.
func TestTargetsFailClosed(t *testing.T) {
	ctx := context.Background()
	co := time.Now().UnixNano()
	f := &fakeIdentity{targets: []*identityv1.WebhookTarget{target(co, 1, 10)}}
	targets, cache := serve(t, f, nil)
	for range 3 {
		got, err := targets.Targets(ctx, []domain.CompanyConnection{{CompanyID: co, ConnectionID: 1}})
		require.NoError(t, err)
		require.Len(t, got, 1)
	}
	require.False(t, cache.Live())
	require.Equal(t, 3, f.count())
}

// A load that read the targets before a change, and ends after identity
// announced it, is not kept.
func TestTargetsLoadRacingAChangeIsNotKept(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	co := time.Now().UnixNano()
	gate := make(chan struct{})
	f := &fakeIdentity{targets: []*identityv1.WebhookTarget{target(co, 1, 10)}, gate: gate}
	targets, _ := serve(t, f, rdb)
	batch := []domain.CompanyConnection{{CompanyID: co, ConnectionID: 1}}
	got := make(chan int)
	go func() {
		list, err := targets.Targets(ctx, batch)
		if err != nil {
			panic(err)
		}
		got <- len(list)
	}()
	<-gate
	f.set(func(f *fakeIdentity) { f.targets = nil })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.IntegrationsChannel, strconv.FormatInt(co, 10)))
	gate <- struct{}{}
	require.Equal(t, 1, <-got, "the racing intake answers what it read")
	list, err := targets.Targets(ctx, batch)
	require.NoError(t, err)
	require.Empty(t, list, "the racing load's old answer was kept")
}

// An identity that predates company_ids answers the batch's connections
// only: that answer serves the batch and is not kept, so a later batch of
// another connection gets its own targets.
func TestTargetsFromAnOlderIdentityNotKept(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	co := time.Now().UnixNano()
	f := &fakeIdentity{targets: []*identityv1.WebhookTarget{target(co, 1, 10), target(co, 2, 11)}, old: true}
	targets, _ := serve(t, f, rdb)
	for _, conn := range []int64{1, 2, 1} {
		got, err := targets.Targets(ctx, []domain.CompanyConnection{{CompanyID: co, ConnectionID: conn}})
		require.NoError(t, err)
		require.Len(t, got, 1, "connection %d", conn)
		require.Equal(t, conn, got[0].ConnectionID)
	}
	require.Equal(t, 3, f.count(), "a partial answer was kept")
}

// The companies of a batch that are not held are asked in one call, and
// only they: the relay waits for the intake, which waited for one call per
// company, one after the other.
func TestTargetsMissingCompaniesAskedInOneCall(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	a := time.Now().UnixNano()
	b, c, d := a+1, a+2, a+3
	f := &fakeIdentity{targets: []*identityv1.WebhookTarget{target(a, 1, 10), target(b, 1, 20), target(c, 1, 30), target(c, 2, 31)}}
	targets, _ := serve(t, f, rdb)

	got, err := targets.Targets(ctx, []domain.CompanyConnection{{CompanyID: a, ConnectionID: 1}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	batch := []domain.CompanyConnection{{CompanyID: d, ConnectionID: 1}, {CompanyID: c, ConnectionID: 2}, {CompanyID: a, ConnectionID: 1},
		{CompanyID: b, ConnectionID: 1}, {CompanyID: c, ConnectionID: 1}}
	for range 2 {
		got, err = targets.Targets(ctx, batch)
		require.NoError(t, err)
		var integrations []int64
		for _, x := range got {
			integrations = append(integrations, x.IntegrationID)
		}
		require.Equal(t, []int64{10, 20, 30, 31}, integrations, "by company, then identity's order")
	}
	require.Equal(t, [][]int64{{a}, {b, c, d}}, f.asked, "one call for the three not held (d has no targets: kept as none)")
}
