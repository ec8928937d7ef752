package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/server"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
)

// internalToken is the service-to-service secret TestMain gives the stack.
const internalToken = "e2e-internal-token"

// TestConnectionPaid drives the internal "may this connection send" check
// the send path will use, over real gRPC, as a connection's subscription
// moves through its test period, payment and removal.
func TestConnectionPaid(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	r := call(t, "POST", p("/v2/companies/%d/connections/", c.ID),
		map[string]any{"name": "Bot", "type": "telegram_bot", "params": map[string]any{"bot_token": "1234567:AAbbccddeeffgghhiijjkkllmmnnooppqqr"}}, key(c.Key)...)
	require.Equal(t, 200, r.Status, r.Body)
	conn := r.JSON(t)
	connID := int64(conn["id"].(float64))
	subID := int64(conn["subscription_id"].(float64))

	billingConn, err := server.DialInternal(stack.Addrs["billing"], internalToken)
	require.NoError(t, err)
	defer billingConn.Close()
	billing := billingv1.NewBillingInternalServiceClient(billingConn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A new subscription is in its test period: paid.
	res, err := billing.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connID})
	require.NoError(t, err)
	require.True(t, res.GetPaid())
	require.Equal(t, c.ID, res.GetCompanyId())
	require.Equal(t, subID, res.GetSubscriptionId())
	require.Nil(t, res.GetPaidUntil())
	require.WithinDuration(t, time.Now().Add(72*time.Hour), res.GetTestUntil().AsTime(), time.Hour)

	// Test period over, nothing paid: not paid.
	adjust := func(body map[string]any) {
		t.Helper()
		r := call(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%d", c.ID, subID), body, operator()...)
		require.Equal(t, 200, r.Status, r.Body)
	}
	adjust(map[string]any{"clear_test_until": true})
	res, err = billing.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connID})
	require.NoError(t, err)
	require.False(t, res.GetPaid())

	// Paid until tomorrow: paid again.
	adjust(map[string]any{"paid_until": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)})
	res, err = billing.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connID})
	require.NoError(t, err)
	require.True(t, res.GetPaid())

	// Taken out of its subscription: not paid, whatever the subscription.
	r = call(t, "PATCH", p("/v2/companies/%d/subscriptions/%d", c.ID, subID), map[string]any{"connections": []int{}}, key(c.Key)...)
	require.Equal(t, 200, r.Status, r.Body)
	res, err = billing.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connID})
	require.NoError(t, err)
	require.False(t, res.GetPaid())
	require.Nil(t, res.SubscriptionId)

	// The connections service answers the same connection to internal callers,
	// with its company.
	connsConn, err := server.DialInternal(stack.Addrs["connections"], internalToken)
	require.NoError(t, err)
	defer connsConn.Close()
	got, err := connectionsv1.NewConnectionsInternalServiceClient(connsConn).GetConnectionInternal(ctx,
		&connectionsv1.GetConnectionInternalRequest{ConnectionId: connID})
	require.NoError(t, err)
	require.Equal(t, c.ID, got.GetCompanyId())
	require.Nil(t, got.GetConnection().SubscriptionId)

	// Internal services refuse callers without the internal token.
	anon, err := server.DialInternal(stack.Addrs["billing"], "wrong-token")
	require.NoError(t, err)
	defer anon.Close()
	_, err = billingv1.NewBillingInternalServiceClient(anon).CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connID})
	require.Error(t, err)
}
