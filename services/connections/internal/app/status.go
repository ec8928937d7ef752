package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// Statuses are the newest status records of a company's connection, newest
// first (spec 4.1: 10, no paging).
func (s *Service) Statuses(ctx context.Context, companyID, id int64) ([]domain.StatusRecord, error) {
	if _, err := s.Connection(ctx, companyID, id); err != nil {
		return nil, err
	}
	return s.repo.Statuses(ctx, companyID, id, domain.StatusHistorySize)
}

// SetStatus is the messenger side changing a connection's status (sandbox):
// any existing connection. A new status is stored with its history record
// and event; an unchanged one writes nothing. It answers the connection's
// current record.
func (s *Service) SetStatus(ctx context.Context, connectionID int64, status domain.Status) (domain.StatusRecord, error) {
	_, rec, err := s.repo.UpdateConnection(ctx, Ref{ID: connectionID}, func(c *domain.Connection) error {
		if err := domain.CheckStatus(c.Type, status); err != nil {
			return apierr.Field(apierr.Body("status_subtype"), "value_error", "Value error, %v", err)
		}
		c.LastStatus = &status
		return nil
	})
	if err != nil {
		return domain.StatusRecord{}, notFound(err)
	}
	if rec == nil {
		return domain.StatusRecord{}, errors.New("status change stored no record")
	}
	return *rec, nil
}

// SetAuthorized marks a connection authorised after a login (whatsapp scan,
// re-authorisation): in one transaction it merges params into its public
// params and sets good/normal, with the history record and event unless it
// was good/normal already.
func (s *Service) SetAuthorized(ctx context.Context, connectionID int64, params map[string]any) (domain.Connection, error) {
	c, _, err := s.repo.UpdateConnection(ctx, Ref{ID: connectionID}, func(c *domain.Connection) error {
		c.MergeParams(params)
		status := domain.GoodNormal
		c.LastStatus = &status
		return nil
	})
	return c, notFound(err)
}
