// Package billing is the client of the billing service's internal API:
// the subscriptions connections join and whose sizes are their limits.
package billing

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/connections/internal/app"
)

// Client implements app.Billing.
type Client struct {
	api billingv1.BillingInternalServiceClient
}

var _ app.Billing = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{api: billingv1.NewBillingInternalServiceClient(conn)}
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
