package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/identity/internal/domain"
)

// The v1 management API's integrations: the same rows as v2's, plus
// webhook integrations bound to connections.

// Connections says whether a connection is the company's (the connections
// service): domain.ErrNotFound when not.
type Connections interface {
	CheckConnection(ctx context.Context, companyID, id int64) error
}

// URLChecker makes the check of a webhook URL (the webhooks service,
// which sends like a delivery): a 422 at body.<field> for a URL that may
// not be a target, else the status it answered, nil without an answer.
type URLChecker interface {
	CheckURL(ctx context.Context, url, secret, field string) (*int32, error)
}

// KeyRestorer makes a revoked key work again at once everywhere.
type KeyRestorer interface {
	Restore(ctx context.Context, keyHash string) error
}

// V1Peers are what the v1 use cases ask other services.
type V1Peers struct {
	Connections Connections
	URLs        URLChecker
	Keys        KeyRestorer
}

// WithV1 gives the use cases the peers of the v1 management API.
func (s *Service) WithV1(p V1Peers) *Service {
	s.v1 = p
	return s
}

// V1Integration is an integration with the connections bound to it.
type V1Integration struct {
	domain.Integration
	Connected []int64
}

func v1NotFound(err error) error { return notFound(err, apierr.V1IntegrationNotFound) }

// V1Integration is the single view: the integration and its bindings.
func (s *Service) V1Integration(ctx context.Context, companyID, id int64) (V1Integration, error) {
	in, err := s.repo.Integration(ctx, companyID, id)
	if err != nil {
		return V1Integration{}, v1NotFound(err)
	}
	conns, err := s.repo.IntegrationConnections(ctx, companyID, id)
	if err != nil {
		return V1Integration{}, err
	}
	return V1Integration{Integration: in, Connected: conns}, nil
}

// CreateWebhookIntegration adds a disabled webhook integration without a
// URL; the answer carries its secret, which no later read shows.
func (s *Service) CreateWebhookIntegration(ctx context.Context, companyID int64, name string) (V1Integration, error) {
	in, err := s.repo.CreateIntegration(ctx, domain.NewWebhookIntegration(companyID, name))
	if err != nil {
		return V1Integration{}, fmt.Errorf("create integration: %w", err)
	}
	return V1Integration{Integration: in, Connected: []int64{}}, nil
}

// SetIntegrationStatus enables or disables an integration of any type
// (idempotent). An API integration's key follows at once: refused while
// disabled, working again when enabled.
func (s *Service) SetIntegrationStatus(ctx context.Context, companyID, id int64, status string) error {
	in, err := s.repo.UpdateIntegration(ctx, companyID, id, func(in *domain.Integration) error {
		in.Status = status
		return nil
	})
	if err != nil {
		return v1NotFound(err)
	}
	if in.KeyHash == "" {
		return nil
	}
	if status == domain.StatusDisabled {
		return s.revoker.Revoke(ctx, in.KeyHash)
	}
	return s.v1.Keys.Restore(ctx, in.KeyHash)
}

// DeleteIntegration removes an integration of any type with its bindings;
// an API integration's key stops working at once.
func (s *Service) DeleteIntegration(ctx context.Context, companyID, id int64) error {
	in, err := s.repo.DeleteIntegration(ctx, companyID, id)
	if err != nil {
		return v1NotFound(err)
	}
	if in.KeyHash != "" {
		return s.revoker.Revoke(ctx, in.KeyHash)
	}
	return nil
}

// WebhookIntegration finds a webhook integration for its actions: 404
// 35000 when unknown, 400 35001 when of another type.
func (s *Service) WebhookIntegration(ctx context.Context, companyID, id int64) (domain.Integration, error) {
	in, err := s.repo.Integration(ctx, companyID, id)
	if err != nil {
		return in, v1NotFound(err)
	}
	if in.Type != domain.IntegrationWebhook {
		return in, apierr.V1IntegrationNotWebhook.E()
	}
	return in, nil
}

// BindConnection binds a connection of the company to a webhook
// integration (idempotent). The caller has found the integration
// (WebhookIntegration).
func (s *Service) BindConnection(ctx context.Context, companyID, id, connectionID int64) error {
	if err := s.checkConnection(ctx, companyID, connectionID); err != nil {
		return err
	}
	return v1NotFound(s.repo.BindConnection(ctx, companyID, id, connectionID))
}

// UnbindConnection unbinds a connection of the company (idempotent).
func (s *Service) UnbindConnection(ctx context.Context, companyID, id, connectionID int64) error {
	if err := s.checkConnection(ctx, companyID, connectionID); err != nil {
		return err
	}
	return s.repo.UnbindConnection(ctx, companyID, id, connectionID)
}

func (s *Service) checkConnection(ctx context.Context, companyID, connectionID int64) error {
	err := s.v1.Connections.CheckConnection(ctx, companyID, connectionID)
	if errors.Is(err, domain.ErrNotFound) {
		return apierr.ConnectionNotFound.E()
	}
	return err
}

// SetWebhookURL checks url (one signed POST, which must answer 200) and
// only then stores it; anything else is 400 35002 and the stored URL
// stays. The check runs outside any transaction (it may take the whole
// delivery timeout); an integration deleted meanwhile is 404 35000.
func (s *Service) SetWebhookURL(ctx context.Context, in domain.Integration, url, field string) error {
	status, err := s.v1.URLs.CheckURL(ctx, url, in.Secret, field)
	if err != nil {
		return err
	}
	if status == nil || *status != 200 {
		var answered any
		if status != nil {
			answered = *status
		}
		return apierr.V1WebhookURLCheckFailed.E().WithDetail(map[string]any{"webhook_url": url, "response_status": answered})
	}
	_, err = s.repo.UpdateIntegration(ctx, in.CompanyID, in.ID, func(cur *domain.Integration) error {
		cur.WebhookURL = &url
		return nil
	})
	return v1NotFound(err)
}

// ConnectionIntegrations are the integrations bound to each connection.
func (s *Service) ConnectionIntegrations(ctx context.Context, companyID int64, connectionIDs []int64) (map[int64][]int64, error) {
	return s.repo.ConnectionIntegrations(ctx, companyID, connectionIDs)
}

// CompanyConnection names a connection with its company.
type CompanyConnection struct {
	CompanyID, ConnectionID int64
}

// WebhookTarget is where a connection's events go besides v2
// subscriptions: an enabled webhook integration with a URL.
type WebhookTarget struct {
	CompanyID, ConnectionID, IntegrationID int64
	URL, Secret                            string
}

// WebhookTargets are the targets of events of the connections, and of any
// connection of companies, as they are now.
func (s *Service) WebhookTargets(ctx context.Context, pairs []CompanyConnection, companies []int64) ([]WebhookTarget, error) {
	if len(pairs) == 0 && len(companies) == 0 {
		return nil, nil
	}
	return s.repo.WebhookTargets(ctx, pairs, companies)
}
