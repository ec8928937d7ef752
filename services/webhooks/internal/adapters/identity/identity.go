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
// batch over again later). The companies not held are asked in one call,
// whatever their number (it was one call after the other, one per
// company, in the relay's wait).
func (t Targets) Targets(ctx context.Context, connections []domain.CompanyConnection) ([]domain.IntegrationTarget, error) {
	if t.companies == nil {
		list, _, err := t.ask(ctx, connections, nil)
		return list, err
	}
	wanted := map[int64]map[int64]bool{}
	var unique []domain.CompanyConnection
	for _, c := range connections {
		if wanted[c.CompanyID] == nil {
			wanted[c.CompanyID] = map[int64]bool{}
		}
		if !wanted[c.CompanyID][c.ConnectionID] {
			unique = append(unique, c)
		}
		wanted[c.CompanyID][c.ConnectionID] = true
	}
	companies := make([]int64, 0, len(wanted))
	for c := range wanted {
		companies = append(companies, c)
	}
	slices.Sort(companies)
	keys := make([]string, len(companies))
	for i, c := range companies {
		keys[i] = strconv.FormatInt(c, 10)
	}
	all, err := t.companies.GetMany(ctx, keys, func(ctx context.Context, missing []string) (map[string][]domain.IntegrationTarget, error) {
		ids := make([]int64, len(missing))
		for i, k := range missing {
			ids[i], _ = strconv.ParseInt(k, 10, 64) // made by FormatInt above
		}
		// The batch's connections too: an identity that predates
		// company_ids answers those alone, and says so (whole false);
		// that answer serves this batch (all of it) and is not kept.
		list, whole, err := t.ask(ctx, unique, ids)
		if err != nil {
			return nil, err
		}
		if !whole {
			return nil, &partial{byCompany(list, nil)}
		}
		return byCompany(list, missing), nil
	})
	var p *partial
	if errors.As(err, &p) {
		all, err = p.targets, nil
	}
	if err != nil {
		return nil, err
	}
	var out []domain.IntegrationTarget
	for i, company := range companies {
		for _, x := range all[keys[i]] {
			if wanted[company][x.ConnectionID] {
				out = append(out, x)
			}
		}
	}
	return out, nil
}

// partial is an answer that does not cover its companies whole: the
// targets of the batch's connections, by company key.
type partial struct {
	targets map[string][]domain.IntegrationTarget
}

// byCompany sorts list by company key, keeping its order within each;
// with keys, only those companies, each present even without targets (a
// company without any is an answer too).
func byCompany(list []domain.IntegrationTarget, keys []string) map[string][]domain.IntegrationTarget {
	out := make(map[string][]domain.IntegrationTarget, len(keys))
	for _, k := range keys {
		out[k] = nil
	}
	for _, x := range list {
		k := strconv.FormatInt(x.CompanyID, 10)
		if _, asked := out[k]; asked || keys == nil {
			out[k] = append(out[k], x)
		}
	}
	return out
}

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
