// Package peers is identity's side of the services the v1 management API
// asks: whether a connection is the company's (connections) and the check
// of a webhook URL (webhooks, which sends like a delivery).
package peers

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/peers"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/identity/internal/app"
	"switchboard.dev/services/identity/internal/domain"
)

// Connections implements app.Connections.
type Connections struct{ c peers.Connections }

var _ app.Connections = Connections{}

// NewConnections uses conn, which must carry the internal token.
func NewConnections(conn grpc.ClientConnInterface) Connections {
	return Connections{c: peers.NewConnections(conn)}
}

// CheckConnection: another company's connection is as unknown as none.
func (c Connections) CheckConnection(ctx context.Context, companyID, id int64) error {
	_, owner, err := c.c.Connection(ctx, id)
	if errors.Is(err, peers.ErrNotFound) || (err == nil && owner != companyID) {
		return domain.ErrNotFound
	}
	return err
}

// URLs implements app.URLChecker.
type URLs struct {
	api webhooksv1.WebhooksV1InternalServiceClient
}

var _ app.URLChecker = URLs{}

// NewURLs uses conn, which must carry the internal token.
func NewURLs(conn grpc.ClientConnInterface) URLs {
	return URLs{api: webhooksv1.NewWebhooksV1InternalServiceClient(conn)}
}

// CheckURL asks webhooks' CheckWebhookURL; its 422 comes back as it is,
// webhooks unreachable is 503.
func (u URLs) CheckURL(ctx context.Context, url, secret, field string) (*int32, error) {
	resp, err := u.api.CheckWebhookURL(ctx, &webhooksv1.CheckWebhookURLRequest{Url: url, Secret: secret, Field: field})
	if err != nil {
		return nil, apierr.FromPeer("webhooks", "CheckWebhookURL", err)
	}
	return resp.ResponseStatus, nil
}
