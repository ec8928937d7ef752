package companyview_test

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
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/localcache/localcachetest"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/redisx/redistest"
	"switchboard.dev/pkg/server/servertest"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/messaging/internal/adapters/companyview"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// owners plays connections and billing: the state they own, what they were
// asked, and a gate that holds a load of connections midway.
type owners struct {
	billingv1.UnimplementedBillingInternalServiceServer
	mu sync.Mutex
	// conns are the company's chat connections; subs billing's answer.
	conns []app.Connection
	subs  []*billingv1.SubscriptionInfo
	// asked counts ChatConnections and GetSubscriptions calls; passed on
	// counts calls the view passed on uncached.
	asked, passedOn int
	// gate, when set, is waited on by the next ChatConnections after it
	// read its answer: a load caught between reading and keeping.
	gate chan struct{}
}

func (o *owners) ChatConnections(_ context.Context, _ int64) ([]app.Connection, error) {
	o.mu.Lock()
	o.asked++
	out := append([]app.Connection(nil), o.conns...)
	gate := o.gate
	o.gate = nil
	o.mu.Unlock()
	if gate != nil {
		gate <- struct{}{} // tell the test the answer is read
		<-gate             // and wait for its change
	}
	return out, nil
}

func (o *owners) Connection(_ context.Context, _, id int64) (app.Connection, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.passedOn++
	for _, c := range o.conns {
		if c.ID == id {
			return c, nil
		}
	}
	return app.Connection{}, domain.ErrNotFound
}

func (o *owners) ConnectionByID(ctx context.Context, id int64) (app.Connection, int64, error) {
	c, err := o.Connection(ctx, 0, id)
	return c, 0, err
}

func (o *owners) ConnectionPaid(context.Context, int64, int64) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.passedOn++
	return true, nil
}

func (o *owners) GetSubscriptions(_ context.Context, _ *billingv1.GetSubscriptionsRequest) (*billingv1.GetSubscriptionsResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked++
	return &billingv1.GetSubscriptionsResponse{Subscriptions: o.subs}, nil
}

func (o *owners) set(f func(o *owners)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

func (o *owners) counts() (asked, passedOn int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.asked, o.passedOn
}

var until = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newOwners() *owners {
	return &owners{
		conns: []app.Connection{
			{ID: 1, Name: "bot", Type: domain.TelegramBot, Subscription: &app.Subscription{ID: 10, Plan: "START"}},
			{ID: 2, Name: "crm-less", Type: domain.Telegram},
		},
		subs: []*billingv1.SubscriptionInfo{{Id: 10, Paid: true, PaidThrough: timestamppb.New(until)}},
	}
}

// view serves o's billing over gRPC and answers from a cache that runs on
// rdb (nil: not running, so never live).
func view(t *testing.T, o *owners, rdb redis.UniversalClient) (*companyview.View, *localcache.Cache[*companyview.Entry]) {
	t.Helper()
	conn := servertest.Serve(t, "", func(g *grpc.Server) { billingv1.RegisterBillingInternalServiceServer(g, o) })

	cache := companyview.NewCache(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if rdb != nil {
		localcachetest.Running(t, cache, rdb)
	}
	v := companyview.New(cache, o, o, conn)
	companyview.SetClock(v, func() time.Time { return until.Add(-time.Hour) })
	return v, cache
}

// company is an id of this test's own: other tests (and other stacks on
// the shared Redis) announce on the same channels.
func company() int64 { return time.Now().UnixNano() }

func TestViewKeepsUntilEitherOwnerAnnounces(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	o := newOwners()
	v, _ := view(t, o, rdb)
	co := company()

	read := func() (app.Connection, bool) {
		conn, err := v.Connection(ctx, co, 1)
		require.NoError(t, err)
		paid, err := v.ConnectionPaid(ctx, co, 1)
		require.NoError(t, err)
		return conn, paid
	}
	for range 3 {
		conn, paid := read()
		require.Equal(t, "bot", conn.Name)
		require.True(t, paid)
	}
	asked, _ := o.counts()
	require.Equal(t, 2, asked, "one load: the connections and the subscriptions, once")

	// Another company's announcement keeps ours.
	require.NoError(t, localcache.Announce(ctx, rdb, peers.ConnectionsChannel, strconv.FormatInt(co+1, 10)))
	read()
	asked, _ = o.counts()
	require.Equal(t, 2, asked)

	// connections renames the connection and announces: the next read has it.
	o.set(func(o *owners) { o.conns[0].Name = "renamed" })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.ConnectionsChannel, strconv.FormatInt(co, 10)))
	conn, _ := read()
	require.Equal(t, "renamed", conn.Name)

	// billing stops the subscription and announces: not paid at once.
	o.set(func(o *owners) { o.subs[0] = &billingv1.SubscriptionInfo{Id: 10} })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.SubscriptionsChannel, strconv.FormatInt(co, 10)))
	_, paid := read()
	require.False(t, paid, "billing's announcement was not heard")

	// The connection leaves its subscription (connections announces).
	o.set(func(o *owners) {
		o.subs[0] = &billingv1.SubscriptionInfo{Id: 10, Paid: true}
		o.conns[0].Subscription = nil
	})
	require.NoError(t, localcache.Announce(ctx, rdb, peers.SubscriptionsChannel, strconv.FormatInt(co, 10)))
	_, paid = read()
	require.False(t, paid, "a connection in no subscription is not paid")
	o.set(func(o *owners) { o.conns[0].Subscription = &app.Subscription{ID: 11} })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.ConnectionsChannel, strconv.FormatInt(co, 10)))
	_, paid = read()
	require.False(t, paid, "a subscription billing does not have is not paid")
	o.set(func(o *owners) { o.conns[0].Subscription = &app.Subscription{ID: 10} })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.ConnectionsChannel, strconv.FormatInt(co, 10)))
	_, paid = read()
	require.True(t, paid, "FREE-like: paid with no end")
	_, passedOn := o.counts()
	require.Zero(t, passedOn)
}

// A paid period ends by the clock, with no announcement.
func TestViewPaidEndsByTime(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	o := newOwners()
	v, _ := view(t, o, rdb)
	co := company()
	for _, c := range []struct {
		at   time.Time
		paid bool
	}{{until.Add(-time.Nanosecond), true}, {until, false}, {until.Add(time.Hour), false}} {
		companyview.SetClock(v, func() time.Time { return c.at })
		paid, err := v.ConnectionPaid(ctx, co, 1)
		require.NoError(t, err)
		require.Equal(t, c.paid, paid, "at %s", c.at)
	}
	asked, _ := o.counts()
	require.Equal(t, 2, asked)
}

// What the view does not keep is asked: a connection that is not one of
// the company's chat connections.
func TestViewPassesOnWhatItDoesNotKeep(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	o := newOwners()
	v, _ := view(t, o, rdb)
	co := company()
	_, err := v.Connection(ctx, co, 99)
	require.ErrorIs(t, err, domain.ErrNotFound)
	paid, err := v.ConnectionPaid(ctx, co, 99)
	require.NoError(t, err)
	require.True(t, paid)
	_, passedOn := o.counts()
	require.Equal(t, 2, passedOn)
}

// Fail closed: a view whose announcements are not heard (never subscribed,
// as when Redis is down) asks the owners on every read.
func TestViewFailsClosed(t *testing.T) {
	ctx := context.Background()
	o := newOwners()
	v, cache := view(t, o, nil)
	co := company()
	for range 3 {
		_, err := v.Connection(ctx, co, 1)
		require.NoError(t, err)
		_, err = v.ConnectionPaid(ctx, co, 1)
		require.NoError(t, err)
	}
	require.False(t, cache.Live())
	asked, _ := o.counts()
	require.Equal(t, 12, asked, "answered from memory without hearing announcements")
}

// A load that read the old state before a change, and finishes after the
// change was announced, is not kept: the next read sees the change.
func TestViewLoadRacingAChangeIsNotKept(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	o := newOwners()
	v, _ := view(t, o, rdb)
	co := company()
	gate := make(chan struct{})
	o.set(func(o *owners) { o.gate = gate })
	got := make(chan app.Connection)
	go func() {
		conn, err := v.Connection(ctx, co, 1)
		if err != nil {
			panic(err)
		}
		got <- conn
	}()
	<-gate // the load has read "bot"
	o.set(func(o *owners) { o.conns[0].Name = "renamed" })
	require.NoError(t, localcache.Announce(ctx, rdb, peers.ConnectionsChannel, strconv.FormatInt(co, 10)))
	gate <- struct{}{}
	require.Equal(t, "bot", (<-got).Name, "the racing read answers what it read")
	conn, err := v.Connection(ctx, co, 1)
	require.NoError(t, err)
	require.Equal(t, "renamed", conn.Name, "the racing load's old answer was kept")
}
