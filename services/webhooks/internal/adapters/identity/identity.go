// Package identity is the webhooks service's side of the identity
// service: the v1 webhook integrations that events of connections go to.
package identity

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/peers"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

// Targets implements app.IntegrationTargets.
type Targets struct {
	api identityv1.V1IntegrationsInternalServiceClient
	// companies keeps every target of a company by its id; nil keeps
	// none (every intake asks).
	companies *localcache.Cache[[]domain.IntegrationTarget]
}

var _ app.IntegrationTargets = Targets{}

// New uses conn, which must carry the internal token (server.DialInternal).
func New(conn grpc.ClientConnInterface) Targets {
	return Targets{api: identityv1.NewV1IntegrationsInternalServiceClient(conn)}
}

// NewCache is the cache for WithCache: every target of a company, dropped
// when identity announces the company on peers.IntegrationsChannel (after
// any stored change to its integrations or their bindings). The TTL bounds
// how stale an entry can get if an announcement is lost.
func NewCache(log *slog.Logger) *localcache.Cache[[]domain.IntegrationTarget] {
	return localcache.New[[]domain.IntegrationTarget]("v1 webhook targets", peers.IntegrationsChannel, 10000, time.Minute, log)
}

// WithCache answers from cache, which answers from memory only while its
// Run is subscribed: the intake then asks identity once per company and
// change, not once per batch of events (a round trip to identity and its
// database in every relay's hand-over).
func (t Targets) WithCache(cache *localcache.Cache[[]domain.IntegrationTarget]) Targets {
	t.companies = cache
	return t
}

// Targets asks identity's ListWebhookTargets, or answers from the
// companies' copies; identity unreachable is 503 (the relay hands the
// batch over again later).
func (t Targets) Targets(ctx context.Context, connections []domain.CompanyConnection) ([]domain.IntegrationTarget, error) {
	if t.companies == nil {
		list, _, err := t.ask(ctx, connections, nil)
		return list, err
	}
	wanted := map[int64]map[int64]bool{}
	pairs := map[int64][]domain.CompanyConnection{}
	for _, c := range connections {
		if wanted[c.CompanyID] == nil {
			wanted[c.CompanyID] = map[int64]bool{}
		}
		if !wanted[c.CompanyID][c.ConnectionID] {
			pairs[c.CompanyID] = append(pairs[c.CompanyID], c)
		}
		wanted[c.CompanyID][c.ConnectionID] = true
	}
	companies := make([]int64, 0, len(wanted))
	for c := range wanted {
		companies = append(companies, c)
	}
	slices.Sort(companies)
	var out []domain.IntegrationTarget
	for _, company := range companies {
		all, err := t.companies.Get(ctx, strconv.FormatInt(company, 10), func(ctx context.Context) ([]domain.IntegrationTarget, error) {
			// The batch's connections too: an identity that predates
			// company_ids answers those alone, and says so (whole false);
			// that answer serves this batch and is not kept.
			list, whole, err := t.ask(ctx, pairs[company], []int64{company})
			if err == nil && !whole {
				return nil, &partial{list}
			}
			return list, err
		})
		var p *partial
		if errors.As(err, &p) {
			all, err = p.targets, nil
		}
		if err != nil {
			return nil, err
		}
		for _, x := range all {
			if wanted[company][x.ConnectionID] {
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// partial is an answer that does not cover its companies whole.
type partial struct{ targets []domain.IntegrationTarget }

func (*partial) Error() string { return "identity answered the connections only" }

func (t Targets) ask(ctx context.Context, connections []domain.CompanyConnection, companies []int64) ([]domain.IntegrationTarget, bool, error) {
	req := &identityv1.ListWebhookTargetsRequest{Connections: make([]*identityv1.CompanyConnection, len(connections)), CompanyIds: companies}
	for i, c := range connections {
		req.Connections[i] = &identityv1.CompanyConnection{CompanyId: c.CompanyID, ConnectionId: c.ConnectionID}
	}
	resp, err := t.api.ListWebhookTargets(ctx, req)
	if err != nil {
		return nil, false, apierr.FromPeer("identity", "ListWebhookTargets", err)
	}
	out := make([]domain.IntegrationTarget, len(resp.GetTargets()))
	for i, x := range resp.GetTargets() {
		out[i] = domain.IntegrationTarget{
			CompanyID: x.GetCompanyId(), ConnectionID: x.GetConnectionId(), IntegrationID: x.GetIntegrationId(),
			URL: x.GetUrl(), Secret: x.GetSecret(),
		}
	}
	return out, resp.GetWholeCompanies(), nil
}
