// Package identity is this service's side of the identity service: it
// tells identity what it must know of connections (that a company has had
// one, the card's had_connections) by publishing the outbox topic
// domain.TopicIdentity (pkg/outbox), and asks it which v1 webhook
// integrations are bound to connections (Integrations). Whether a company
// exists is asked through pkg/peers.
package identity

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/outbox"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/connections/internal/domain"
)

// Publisher implements outbox.Publisher for domain.TopicIdentity.
type Publisher struct {
	api identityv1.IdentityInternalServiceClient
	log *slog.Logger
}

var _ outbox.Publisher = (*Publisher)(nil)

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface, log *slog.Logger) *Publisher {
	return &Publisher{api: identityv1.NewIdentityInternalServiceClient(conn), log: log}
}

// Publish marks the batch's companies in one call; identity's call is
// idempotent, so a batch handed over twice does no harm. A company identity
// does not know is logged and skipped: retrying could never succeed.
func (p *Publisher) Publish(ctx context.Context, batch []outbox.Message) error {
	ids := make([]int64, 0, len(batch))
	for _, m := range batch {
		if m.Type != domain.EventHadConnections {
			return fmt.Errorf("identity: unexpected %s message %s", m.Type, m.ID)
		}
		ids = append(ids, m.CompanyID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	resp, err := p.api.MarkCompaniesHadConnections(ctx, &identityv1.MarkCompaniesHadConnectionsRequest{CompanyIds: ids})
	if err != nil {
		return fmt.Errorf("identity MarkCompaniesHadConnections: %w", err)
	}
	if unknown := resp.GetUnknownCompanyIds(); len(unknown) > 0 {
		p.log.Warn("identity knows no such companies; had_connections not recorded", "company_ids", unknown)
	}
	return nil
}

// Integrations implements app.Integrations with identity's
// ListConnectionIntegrations.
type Integrations struct {
	api identityv1.V1IntegrationsInternalServiceClient
}

// NewIntegrations uses conn, which must carry the internal token.
func NewIntegrations(conn grpc.ClientConnInterface) Integrations {
	return Integrations{api: identityv1.NewV1IntegrationsInternalServiceClient(conn)}
}

// ConnectionIntegrations asks identity; identity unreachable is 503.
func (i Integrations) ConnectionIntegrations(ctx context.Context, companyID int64, ids []int64) (map[int64][]int64, error) {
	resp, err := i.api.ListConnectionIntegrations(ctx, &identityv1.ListConnectionIntegrationsRequest{CompanyId: companyID, ConnectionIds: ids})
	if err != nil {
		return nil, apierr.FromPeer("identity", "ListConnectionIntegrations", err)
	}
	out := make(map[int64][]int64, len(resp.GetConnections()))
	for _, c := range resp.GetConnections() {
		out[c.GetConnectionId()] = c.GetIntegrationIds()
	}
	return out, nil
}
