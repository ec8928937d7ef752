package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// ConnectionInternal is any connection by id, for other services. It
// carries no subscription summary: billing itself asks for connections,
// and asking billing back would make the two services call each other.
func (s *Service) ConnectionInternal(ctx context.Context, id int64) (domain.Connection, error) {
	c, err := s.repo.ConnectionByID(ctx, id)
	return c, notFound(err)
}

// ConnectionsOfType is every connection of a type, of every company, with
// its secrets: what the messenger adapters act with.
func (s *Service) ConnectionsOfType(ctx context.Context, t domain.Type) ([]domain.Connection, error) {
	return s.repo.ConnectionsOfType(ctx, t)
}

// SubscriptionMembers are the connections of each of the company's
// subscriptions (billing shows them with its subscriptions).
func (s *Service) SubscriptionMembers(ctx context.Context, companyID int64) ([]Members, error) {
	return s.repo.SubscriptionMembers(ctx, companyID)
}

// SetMembersCmd makes ConnectionIDs the connections of a subscription.
type SetMembersCmd struct {
	CompanyID        int64
	SubscriptionID   int64
	SubscriptionType string
	ConnectionIDs    []int64
	Preview          bool
}

// SetSubscriptionMembers sets a subscription's connections: the listed
// ones join it (leaving any other), its other ones leave it. Billing checks
// the count against the subscription size before asking. Each id must be a
// company connection of the subscription's type: 422 at
// body.connections.<i> otherwise. It answers the members, ascending.
func (s *Service) SetSubscriptionMembers(ctx context.Context, cmd SetMembersCmd) ([]int64, error) {
	t, ok := domain.TypeOfSubscription(cmd.SubscriptionType)
	if !ok {
		return nil, apierr.Field(apierr.Body("subscription_type"), "value_error",
			"Value error, %q is not a connection subscription type", cmd.SubscriptionType)
	}
	ids, err := s.repo.SetSubscriptionMembers(ctx, cmd.CompanyID, cmd.SubscriptionID, t, cmd.ConnectionIDs, cmd.Preview)
	var me *domain.MemberError
	if errors.As(err, &me) {
		return nil, apierr.Field(apierr.Body("connections", me.Index), "value_error",
			"Value error, connection %d is not a %s connection of the company", me.ID, t)
	}
	return ids, err
}
