package app

import (
	"context"
	"errors"
	"fmt"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/services/identity/internal/domain"
)

// Integrations lists a page of the company's integrations and their total.
func (s *Service) Integrations(ctx context.Context, companyID int64, limit, offset int) ([]domain.Integration, int64, error) {
	return s.repo.Integrations(ctx, companyID, limit, offset)
}

// Integration is one integration of the company.
func (s *Service) Integration(ctx context.Context, companyID, id int64) (domain.Integration, error) {
	in, err := s.repo.Integration(ctx, companyID, id)
	return in, notFound(err, apierr.NotFound)
}

// UpdateIntegrationCmd changes the name and/or issues a new key.
type UpdateIntegrationCmd struct {
	CompanyID, ID int64
	Name          *string
	ResetAPIKey   bool
}

// UpdateIntegration answers the integration and, after a reset, its new key
// (shown this once). The old key is revoked only after the new one is
// stored, so a failure leaves the old key working rather than none.
func (s *Service) UpdateIntegration(ctx context.Context, cmd UpdateIntegrationCmd) (domain.Integration, string, error) {
	var newKey, oldHash string
	in, err := s.repo.UpdateIntegration(ctx, cmd.CompanyID, cmd.ID, func(in *domain.Integration) error {
		if cmd.Name != nil {
			in.Name = *cmd.Name
		}
		if cmd.ResetAPIKey {
			var err error
			if newKey, oldHash, err = in.ResetKey(); err != nil {
				return apierr.Field(apierr.Body("params", "reset_api_key"), "value_error", "only api integrations have a key to reset")
			}
		}
		return nil
	})
	if err != nil {
		return in, "", notFound(err, apierr.NotFound)
	}
	if oldHash != "" {
		if err := s.revoker.Revoke(ctx, oldHash); err != nil {
			return in, "", fmt.Errorf("revoke old key: %w", err)
		}
	}
	return in, newKey, nil
}

// CreateAPIKeyCmd is the operator's request for another key.
type CreateAPIKeyCmd struct {
	CompanyID int64
	Scopes    []string
	Name      string
}

// CreateAPIKey adds an API integration with the given scopes.
func (s *Service) CreateAPIKey(ctx context.Context, cmd CreateAPIKeyCmd) (domain.Integration, string, error) {
	scopes, err := domain.NormalizeScopes(cmd.Scopes)
	if err != nil {
		return domain.Integration{}, "", apierr.Field(apierr.Body("scopes"), "value_error", "%v; scopes are %v, each optionally with %q", err, auth.Scopes, auth.ReadSuffix)
	}
	if _, err := s.repo.Company(ctx, cmd.CompanyID); err != nil {
		return domain.Integration{}, "", notFound(err, apierr.CompanyNotFound)
	}
	name := cmd.Name
	if name == "" {
		name = "API"
	}
	key := domain.NewAPIKey()
	in, err := s.repo.CreateIntegration(ctx, domain.Integration{
		CompanyID: cmd.CompanyID,
		Type:      domain.IntegrationAPI,
		Name:      name,
		Status:    "enabled",
		Scopes:    scopes,
		KeyHash:   auth.HashKey(key),
	})
	if err != nil {
		return in, "", fmt.Errorf("create integration: %w", err)
	}
	return in, key, nil
}

// Authenticate resolves a key hash; an unknown or disabled key is 401
// "unknown api key" (auth.UnknownKey), whatever the reason.
func (s *Service) Authenticate(ctx context.Context, keyHash string) (Principal, error) {
	p, err := s.repo.Principal(ctx, keyHash)
	if errors.Is(err, domain.ErrNotFound) {
		return p, auth.UnknownKey()
	}
	return p, err
}
