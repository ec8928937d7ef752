// Package identity is the webhooks service's side of the identity
// service: the v1 webhook integrations that events of connections go to.
package identity

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Targets implements app.IntegrationTargets.
type Targets struct {
	api identityv1.V1IntegrationsInternalServiceClient
}

var _ app.IntegrationTargets = Targets{}

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) Targets {
	return Targets{api: identityv1.NewV1IntegrationsInternalServiceClient(conn)}
}

// Targets asks identity's ListWebhookTargets; identity unreachable is 503
// (the relay hands the batch over again later).
func (t Targets) Targets(ctx context.Context, connections []domain.CompanyConnection) ([]domain.IntegrationTarget, error) {
	req := &identityv1.ListWebhookTargetsRequest{Connections: make([]*identityv1.CompanyConnection, len(connections))}
	for i, c := range connections {
		req.Connections[i] = &identityv1.CompanyConnection{CompanyId: c.CompanyID, ConnectionId: c.ConnectionID}
	}
	resp, err := t.api.ListWebhookTargets(ctx, req)
	if err != nil {
		return nil, apierr.FromPeer("identity", "ListWebhookTargets", err)
	}
	out := make([]domain.IntegrationTarget, len(resp.GetTargets()))
	for i, x := range resp.GetTargets() {
		out[i] = domain.IntegrationTarget{
			CompanyID: x.GetCompanyId(), ConnectionID: x.GetConnectionId(), IntegrationID: x.GetIntegrationId(),
			URL: x.GetUrl(), Secret: x.GetSecret(),
		}
	}
	return out, nil
}
