// Package companyview answers, from process memory, what the send path asks
// two other services on every send: a company's chat connection
// (connections) and whether it may send now (billing). Both were a gRPC
// call per accepted send and two per delivery, with the database reads
// behind them: the largest share of a send's cost outside messaging itself
// (issue 32).
//
// One entry per company holds its chat connections and its subscriptions'
// paid state, kept by pkg/localcache: connections announces the company on
// peers.ConnectionsChannel after any stored change to its connections
// (created, changed, joined or left a subscription), billing on
// peers.SubscriptionsChannel after any change to its subscriptions, and the
// entry is dropped on either before the owner answers. Paid state that
// ends by time alone (a paid period or a test period running out) needs no
// announcement: billing says when it ends (paid_through) and the entry is
// judged against the clock on every read.
package companyview

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/messaging/internal/app"
)

// View implements app.Connections and app.Payments.
type View struct {
	// Connections is where the view loads connections from, and what it
	// passes on for what it does not keep (adapters/connections.Client).
	app.Connections
	// payments answers for a connection the view does not keep (not a
	// chat type) (adapters/billing.Client).
	payments app.Payments
	billing  billingv1.BillingInternalServiceClient
	cache    *localcache.Cache[*Entry]
	now      func() time.Time
}

var (
	_ app.Connections = (*View)(nil)
	_ app.Payments    = (*View)(nil)
)

// Entry is one company's: its chat connections by id and the paid state of
// its subscriptions by id.
type Entry struct {
	conns map[int64]app.Connection
	subs  map[int64]paidState
}

// paidState is billing's paid at the load, and when it turns false by
// time alone (nil: it does not).
type paidState struct {
	paid    bool
	through *time.Time
}

func (p paidState) at(now time.Time) bool {
	return p.paid && (p.through == nil || now.Before(*p.through))
}

const (
	size = 10000
	// ttl bounds how stale an entry can get if an announcement is lost (its
	// owner stopped between storing a change and announcing it).
	ttl = time.Minute
)

// NewCache is the view's cache; Run it (Cache.Run) for the view to answer
// from memory: until it is subscribed to both channels, every read asks.
func NewCache(log *slog.Logger) *localcache.Cache[*Entry] {
	return localcache.New[*Entry]("send path companies", peers.ConnectionsChannel, size, ttl, log).
		AlsoOn(peers.SubscriptionsChannel)
}

// New answers from cache, loading from conns and billing (conn must carry
// the internal token), and passes on to conns and payments what it does
// not keep.
func New(cache *localcache.Cache[*Entry], conns app.Connections, payments app.Payments, billing grpc.ClientConnInterface) *View {
	return &View{Connections: conns, payments: payments, billing: billingv1.NewBillingInternalServiceClient(billing),
		cache: cache, now: time.Now}
}

// Connection implements app.Connections: from the company's entry, or
// asked when it is not a chat connection of the company (another type, or
// none: connections says which).
func (v *View) Connection(ctx context.Context, companyID, id int64) (app.Connection, error) {
	c, err := v.company(ctx, companyID)
	if err != nil {
		return app.Connection{}, err
	}
	if conn, ok := c.conns[id]; ok {
		return conn, nil
	}
	return v.Connections.Connection(ctx, companyID, id)
}

// ConnectionPaid implements app.Payments.
func (v *View) ConnectionPaid(ctx context.Context, companyID, id int64) (bool, error) {
	c, err := v.company(ctx, companyID)
	if err != nil {
		return false, err
	}
	conn, ok := c.conns[id]
	if !ok {
		return v.payments.ConnectionPaid(ctx, companyID, id)
	}
	// billing's rule (CheckConnectionPaid): a connection in no
	// subscription, or in one billing does not have, is not paid.
	if conn.Subscription == nil {
		return false, nil
	}
	return c.subs[conn.Subscription.ID].at(v.now()), nil
}

func (v *View) company(ctx context.Context, companyID int64) (*Entry, error) {
	return v.cache.Get(ctx, strconv.FormatInt(companyID, 10), func(ctx context.Context) (*Entry, error) {
		conns, err := v.Connections.ChatConnections(ctx, companyID)
		if err != nil {
			return nil, err
		}
		subs, err := v.billing.GetSubscriptions(ctx, &billingv1.GetSubscriptionsRequest{CompanyId: companyID})
		if err != nil {
			return nil, apierr.FromPeer("billing", "GetSubscriptions", err)
		}
		c := &Entry{conns: make(map[int64]app.Connection, len(conns)), subs: make(map[int64]paidState, len(subs.GetSubscriptions()))}
		for _, conn := range conns {
			c.conns[conn.ID] = conn
		}
		for _, s := range subs.GetSubscriptions() {
			p := paidState{paid: s.GetPaid()}
			if s.GetPaidThrough() != nil {
				t := s.GetPaidThrough().AsTime()
				p.through = &t
			}
			c.subs[s.GetId()] = p
		}
		return c, nil
	})
}
