package app

import (
	"context"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/identity/internal/domain"
)

// Me is the user an API key acts for: the company owner (spec 5.1).
func (s *Service) Me(ctx context.Context, ownerID int64) (domain.User, error) {
	u, err := s.repo.User(ctx, ownerID)
	return u, notFound(err, apierr.NotFound)
}
