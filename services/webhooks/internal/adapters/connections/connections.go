// Package connections is the webhooks service's side of the connections
// service: whether a connection is a company's.
package connections

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/peers"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Client implements app.Connections.
type Client struct {
	owner peers.Connections
}

var _ app.Connections = (*Client)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{owner: peers.NewConnections(conn)}
}

// CheckConnection implements app.Connections.
func (c *Client) CheckConnection(ctx context.Context, company, id int64) error {
	_, owner, err := c.owner.Connection(ctx, id)
	switch {
	case errors.Is(err, peers.ErrNotFound):
		return domain.ErrNotFound
	case err != nil:
		return err
	case owner != company:
		return domain.ErrNotFound
	}
	return nil
}
