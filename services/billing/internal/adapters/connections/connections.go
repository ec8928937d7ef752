// Package connections is billing's client of the connections service's
// internal API, which owns which connection is in which subscription.
package connections

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/billing/internal/app"
)

// Client implements app.Connections.
type Client struct {
	c connectionsv1.ConnectionsInternalServiceClient
}

var _ app.Connections = (*Client)(nil)

// New uses a connection made with server.DialInternal (it carries the
// internal token).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{c: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// Membership implements app.Connections.
func (c *Client) Membership(ctx context.Context, companyID int64) (map[int64][]int64, error) {
	resp, err := c.c.ListSubscriptionConnections(ctx, &connectionsv1.ListSubscriptionConnectionsRequest{CompanyId: companyID})
	if err != nil {
		return nil, callError("list subscription connections", err)
	}
	out := make(map[int64][]int64, len(resp.GetSubscriptions()))
	for _, s := range resp.GetSubscriptions() {
		out[s.GetSubscriptionId()] = append(out[s.GetSubscriptionId()], s.GetConnectionIds()...)
	}
	return out, nil
}

// SetMembership implements app.Connections.
func (c *Client) SetMembership(ctx context.Context, m app.Membership) ([]int64, error) {
	resp, err := c.c.SetSubscriptionConnections(ctx, &connectionsv1.SetSubscriptionConnectionsRequest{
		CompanyId:        m.CompanyID,
		SubscriptionId:   m.SubscriptionID,
		SubscriptionType: string(m.Type),
		ConnectionIds:    m.ConnectionIDs,
		Preview:          m.Preview,
	})
	if err != nil {
		return nil, callError("set subscription connections", err)
	}
	return resp.GetConnectionIds(), nil
}

// Connection implements app.Connections.
func (c *Client) Connection(ctx context.Context, connectionID int64) (app.ConnectionRef, error) {
	resp, err := c.c.GetConnectionInternal(ctx, &connectionsv1.GetConnectionInternalRequest{ConnectionId: connectionID})
	if err != nil {
		return app.ConnectionRef{}, callError("get connection", err)
	}
	return app.ConnectionRef{
		CompanyID:      resp.GetCompanyId(),
		SubscriptionID: resp.GetConnection().SubscriptionId,
		Type:           protoapi.EnumJSON(resp.GetConnection().GetType()),
	}, nil
}

// HasConnection implements app.Connections.
func (c *Client) HasConnection(ctx context.Context, companyID int64, typ string) (bool, error) {
	t, ok := connectionTypes[typ]
	if !ok {
		return false, fmt.Errorf("connections: unknown type %q", typ)
	}
	resp, err := c.c.ListCompanyConnections(ctx, &connectionsv1.ListCompanyConnectionsRequest{
		CompanyId: companyID, Types: []connectionsv1.ConnectionType{t},
	})
	if err != nil {
		return false, callError("list company connections", err)
	}
	return len(resp.GetConnections()) > 0, nil
}

// connectionTypes maps the API's type words to the enum.
var connectionTypes = func() map[string]connectionsv1.ConnectionType {
	m := map[string]connectionsv1.ConnectionType{}
	for n := range connectionsv1.ConnectionType_name {
		t := connectionsv1.ConnectionType(n)
		if w := protoapi.EnumJSON(t); w != "" {
			m[w] = t
		}
	}
	return m
}()

// callError passes the connections service's API errors on unchanged (its
// 422 locations and 404 codes are meant for the client). An unreachable
// service is 503; anything else is a fault, logged and answered as 500 by
// the server.
func callError(what string, err error) error {
	if e, ok := apierr.FromError(err); ok {
		return e
	}
	if status.Code(err) == codes.Unavailable {
		return apierr.ServiceUnavailable.Msg("connections service unavailable")
	}
	return fmt.Errorf("connections: %s: %w", what, err)
}
