// Package billing is the client of the billing service's internal API: the
// company's business dialog balance.
package billing

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/messaging/internal/app"
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

// DialogsBalance implements app.Billing.
func (c *Client) DialogsBalance(ctx context.Context, company int64) (int64, error) {
	resp, err := c.api.GetWabaDialogsBalance(ctx, &billingv1.GetWabaDialogsBalanceRequest{CompanyId: company})
	if err != nil {
		return 0, apierr.FromPeer("billing", "GetWabaDialogsBalance", err)
	}
	return resp.GetWabaDialogsBalance(), nil
}

var _ app.Payments = (*Client)(nil)

// ConnectionPaid implements app.Payments: paid, or in its test period. A
// connection of another company is not paid for this one.
func (c *Client) ConnectionPaid(ctx context.Context, company, connectionID int64) (bool, error) {
	resp, err := c.api.CheckConnectionPaid(ctx, &billingv1.CheckConnectionPaidRequest{ConnectionId: connectionID})
	if err != nil {
		return false, apierr.FromPeer("billing", "CheckConnectionPaid", err)
	}
	return resp.GetPaid() && resp.GetCompanyId() == company, nil
}

// TakeDialog implements app.Billing.
func (c *Client) TakeDialog(ctx context.Context, company int64, key string) (bool, error) {
	resp, err := c.api.TakeWabaDialog(ctx, &billingv1.TakeWabaDialogRequest{CompanyId: company, IdempotencyKey: key})
	if err != nil {
		return false, apierr.FromPeer("billing", "TakeWabaDialog", err)
	}
	return resp.GetTaken(), nil
}
