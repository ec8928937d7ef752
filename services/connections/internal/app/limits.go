package app

import (
	"context"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// DefaultLimit is the limit of a type without a subscription (spec 4.5).
const DefaultLimit = 1

// Limit is one limit type as GET /limits/{limit_type} shows it.
type Limit struct {
	Type    string
	Current int
	Max     int
}

// maxSizes is the limit of every limited type: the size of the company's
// subscription of the type, independent of payment, or DefaultLimit. A
// company has one subscription per type (EnsureSubscription); were there
// several, the oldest (lowest id), which EnsureSubscription answers, counts.
func (s *Service) maxSizes(ctx context.Context, companyID int64) (map[domain.Type]int, error) {
	subs, err := s.billing.GetSubscriptions(ctx, companyID, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[domain.Type]int, len(domain.LimitedTypes()))
	for _, t := range domain.LimitedTypes() {
		out[t] = DefaultLimit
	}
	oldest := map[domain.Type]int64{}
	for _, sub := range subs {
		t, ok := domain.TypeOfSubscription(sub.Type)
		if !ok {
			continue
		}
		if id, seen := oldest[t]; seen && id < sub.ID {
			continue
		}
		oldest[t] = sub.ID
		out[t] = sub.MaxSize
	}
	return out, nil
}

// Limits is the max connections of every limit type, by limit name.
func (s *Service) Limits(ctx context.Context, companyID int64) (map[string]int, error) {
	sizes, err := s.maxSizes(ctx, companyID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(sizes))
	for t, n := range sizes {
		out[t.LimitType()] = n
	}
	return out, nil
}

// Limit is one limit with the company's count; an unknown name is 422.
func (s *Service) Limit(ctx context.Context, companyID int64, limitType string) (Limit, error) {
	t, ok := domain.TypeOfLimit(limitType)
	if !ok {
		names := make([]domain.Type, 0, len(domain.LimitedTypes()))
		for _, t := range domain.LimitedTypes() {
			names = append(names, domain.Type(t.LimitType()))
		}
		return Limit{}, apierr.Field(apierr.Path("limit_type"), "enum", "Input should be one of %s", typeNames(names))
	}
	sizes, err := s.maxSizes(ctx, companyID)
	if err != nil {
		return Limit{}, err
	}
	n, err := s.repo.CountConnections(ctx, companyID, t)
	if err != nil {
		return Limit{}, err
	}
	return Limit{Type: limitType, Current: n, Max: sizes[t]}, nil
}
