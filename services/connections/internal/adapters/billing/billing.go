// Package billing is the client of the billing service's internal API:
// the subscriptions connections join and whose sizes are their limits.
package billing

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/connections/internal/app"
)

// Client implements app.Billing.
type Client struct {
	api billingv1.BillingInternalServiceClient
	// summaries keeps SubscriptionSummaries' answers by company id; nil
	// keeps none.
	summaries *localcache.Cache[[]app.Subscription]
}

var _ app.Billing = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{api: billingv1.NewBillingInternalServiceClient(conn)}
}

// NewSummaries is the cache for WithSummaries: one entry per company,
// dropped when billing announces a change on peers.SubscriptionsChannel.
// The TTL bounds how stale an entry can get if an announcement is lost
// (billing stopped between storing a change and announcing it).
func NewSummaries(log *slog.Logger) *localcache.Cache[[]app.Subscription] {
	return localcache.New[[]app.Subscription]("subscription summaries", peers.SubscriptionsChannel,
		summariesSize, summariesTTL, log)
}

const (
	summariesSize = 10000
	summariesTTL  = time.Minute
)

// WithSummaries answers SubscriptionSummaries from cache, which answers
// from memory only while its Run is subscribed. A connection read then
// costs no call to billing: that call was most of its cost (issue 12).
func (c *Client) WithSummaries(cache *localcache.Cache[[]app.Subscription]) *Client {
	c.summaries = cache
	return c
}

// EnsureSubscription implements app.Billing.
func (c *Client) EnsureSubscription(ctx context.Context, companyID int64, subscriptionType string) (app.Subscription, error) {
	resp, err := c.api.EnsureSubscription(ctx, &billingv1.EnsureSubscriptionRequest{
		CompanyId: companyID, SubscriptionType: subscriptionType,
	})
	if err != nil {
		return app.Subscription{}, callError("EnsureSubscription", err)
	}
	return subscription(resp), nil
}

// GetSubscriptions implements app.Billing.
func (c *Client) GetSubscriptions(ctx context.Context, companyID int64, ids []int64) ([]app.Subscription, error) {
	resp, err := c.api.GetSubscriptions(ctx, &billingv1.GetSubscriptionsRequest{CompanyId: companyID, Ids: ids})
	if err != nil {
		return nil, callError("GetSubscriptions", err)
	}
	out := make([]app.Subscription, 0, len(resp.GetSubscriptions()))
	for _, s := range resp.GetSubscriptions() {
		out = append(out, subscription(s))
	}
	return out, nil
}

// SubscriptionSummaries implements app.Billing.
func (c *Client) SubscriptionSummaries(ctx context.Context, companyID int64) ([]app.Subscription, error) {
	load := func(ctx context.Context) ([]app.Subscription, error) { return c.GetSubscriptions(ctx, companyID, nil) }
	if c.summaries == nil {
		return load(ctx)
	}
	return c.summaries.Get(ctx, strconv.FormatInt(companyID, 10), load)
}

func subscription(s *billingv1.SubscriptionInfo) app.Subscription {
	out := app.Subscription{
		ID:      s.GetId(),
		Type:    s.GetSubscriptionType(),
		Plan:    planName(s.GetSubscriptionPlan()),
		MaxSize: int(s.GetMaxSize()),
	}
	if s.PaidUntil != nil {
		t := s.GetPaidUntil().AsTime()
		out.PaidUntil = &t
	}
	return out
}

// planName is the plan as JSON writes it: START for SUBSCRIPTION_PLAN_START.
func planName(p billingv1.SubscriptionPlan) string {
	if p == billingv1.SubscriptionPlan_SUBSCRIPTION_PLAN_UNSPECIFIED {
		return ""
	}
	return strings.TrimPrefix(p.String(), "SUBSCRIPTION_PLAN_")
}

// callError passes billing's API errors on unchanged and makes an
// unreachable billing a 503, so a client learns to retry rather than
// seeing a 500.
func callError(method string, err error) error { return apierr.FromPeer("billing", method, err) }
