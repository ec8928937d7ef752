package app

import (
	"context"

	"switchboard.dev/services/connections/internal/domain"
)

// Integrations says which v1 webhook integrations (the identity service's)
// each connection is bound to, ids ascending; connections bound to none
// are left out of the answer.
type Integrations interface {
	ConnectionIntegrations(ctx context.Context, companyID int64, ids []int64) (map[int64][]int64, error)
}

// attachIntegrations fills the integrations of connections of one
// company, in one question for the whole list.
func (s *Service) attachIntegrations(ctx context.Context, companyID int64, list []domain.Connection) error {
	if s.integs == nil || len(list) == 0 {
		return nil
	}
	ids := make([]int64, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	bound, err := s.integs.ConnectionIntegrations(ctx, companyID, ids)
	if err != nil {
		return err
	}
	for i := range list {
		list[i].Integrations = bound[list[i].ID]
	}
	return nil
}
