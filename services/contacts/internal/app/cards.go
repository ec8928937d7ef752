package app

import (
	"context"

	"switchboard.dev/services/contacts/internal/domain"
)

// MaxCards is the most ids one ContactCards call reads (more are ignored).
const MaxCards = 1000

// ContactCards answers the cards of the company's contacts among ids (a
// page of another service's list); ids of no contact of the company are
// left out.
func (s *Service) ContactCards(ctx context.Context, company int64, ids []int64) ([]domain.Card, error) {
	if len(ids) > MaxCards {
		ids = ids[:MaxCards]
	}
	if len(ids) == 0 {
		return []domain.Card{}, nil
	}
	return s.repo.ContactCards(ctx, company, ids)
}
