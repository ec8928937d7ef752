// Package connections is the client of the connections service's internal
// API: whether a connection is a company's.
package connections

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Client implements app.Connections.
type Client struct {
	api connectionsv1.ConnectionsInternalServiceClient
}

var _ app.Connections = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{api: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// CheckConnection implements app.Connections.
func (c *Client) CheckConnection(ctx context.Context, company, id int64) error {
	resp, err := c.api.GetConnectionInternal(ctx, &connectionsv1.GetConnectionInternalRequest{ConnectionId: id})
	if e, ok := apierr.FromError(err); ok && e.Code == apierr.ConnectionNotFound.Code {
		return domain.ErrNotFound
	}
	if err != nil {
		return apierr.FromPeer("connections", "GetConnectionInternal", err)
	}
	if resp.GetCompanyId() != company {
		return domain.ErrNotFound
	}
	return nil
}
