package app

import (
	"context"
	"errors"
	"slices"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// View is a subscription as the public API shows it (spec 2.13).
type View struct {
	domain.Subscription
	// Connections in the subscription, ascending; never nil.
	Connections   []int64
	AdvanceActive bool
	// AdvanceAvailable is exactly when GrantAdvance would be granted now
	// to whoever the view is made for: the company itself (ownViews) or
	// its partner.
	AdvanceAvailable bool
}

func view(sub domain.Subscription, connections []int64, now time.Time) View {
	ids := slices.Clone(connections)
	if ids == nil {
		ids = []int64{}
	}
	slices.Sort(ids)
	return View{
		Subscription:     sub,
		Connections:      ids,
		AdvanceActive:    sub.Advance.Active(),
		AdvanceAvailable: sub.AdvanceAvailable(now),
	}
}

// ownViews makes views what the company's own API shows: a partner-type
// client's own advance is refused (its partner's route grants it), so it
// is not available to it. Identity is asked at most once, and only when
// some view would show the advance available.
func (s *Service) ownViews(ctx context.Context, companyID int64, views []View) error {
	if !slices.ContainsFunc(views, func(v View) bool { return v.AdvanceAvailable }) {
		return nil
	}
	client, err := s.clients.PartnerClient(ctx, companyID)
	if err != nil {
		return err
	}
	if client {
		for i := range views {
			views[i].AdvanceAvailable = false
		}
	}
	return nil
}

// ownView is ownViews of one view. After a write (a PATCH, the operator's
// change) identity is asked once the write is stored: should it fail, the
// write stands and the answer is its error (503 while it is down); both
// writes set values, so a retry is harmless.
func (s *Service) ownView(ctx context.Context, companyID int64, v View) (View, error) {
	views := []View{v}
	if err := s.ownViews(ctx, companyID, views); err != nil {
		return View{}, err
	}
	return views[0], nil
}

// ListSubscriptions answers every subscription of the company with its
// connections, ordered by id, as the company's own API shows them.
// Membership comes from the connections service in one call.
func (s *Service) ListSubscriptions(ctx context.Context, companyID int64) ([]View, error) {
	views, err := s.listSubscriptions(ctx, companyID)
	if err != nil {
		return nil, err
	}
	if err := s.ownViews(ctx, companyID, views); err != nil {
		return nil, err
	}
	return views, nil
}

// ListCompanySubscriptions is ListSubscriptions as the company's partner
// sees it (billing's internal API): the advance is available as the
// partner's route (GrantAdvanceAsPartner) would grant it.
func (s *Service) ListCompanySubscriptions(ctx context.Context, companyID int64) ([]View, error) {
	return s.listSubscriptions(ctx, companyID)
}

func (s *Service) listSubscriptions(ctx context.Context, companyID int64) ([]View, error) {
	subs, err := s.repo.Subscriptions(ctx, companyID, nil)
	if err != nil {
		return nil, err
	}
	if len(subs) == 0 {
		return []View{}, nil
	}
	members, err := s.conns.Membership(ctx, companyID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]View, len(subs))
	for i, sub := range subs {
		out[i] = view(sub, members[sub.ID], now)
	}
	return out, nil
}

// UpdateConnections is the public PATCH of a subscription.
type UpdateConnections struct {
	CompanyID      int64
	SubscriptionID int64
	// ConnectionIDs become the subscription's connections.
	ConnectionIDs []int64
	// Preview answers the result without applying it.
	Preview bool
}

// SetConnections makes cmd.ConnectionIDs the subscription's connections
// (0 to max_size, each a company connection of its type) and answers the
// subscription as it is, or with Preview would be, afterwards.
func (s *Service) SetConnections(ctx context.Context, cmd UpdateConnections) (View, error) {
	if i := domain.FirstDuplicate(cmd.ConnectionIDs); i >= 0 {
		return View{}, apierr.Field(apierr.Body("connections", i), "value_error",
			"Value error, connection %d is listed twice", cmd.ConnectionIDs[i])
	}
	var members []int64
	// The row stays locked while the connections service changes the
	// membership, so an operator resize cannot check the old membership
	// against a new size while this one grows it.
	sub, err := s.repo.UpdateSubscription(ctx, cmd.CompanyID, cmd.SubscriptionID, func(sub *domain.Subscription) error {
		if n := len(cmd.ConnectionIDs); n > int(sub.MaxSize) {
			return apierr.Field(apierr.Body("connections"), "too_long",
				"List should have at most %d %s after validation, not %d", sub.MaxSize, items(int(sub.MaxSize)), n)
		}
		var err error
		members, err = s.conns.SetMembership(ctx, Membership{
			CompanyID:      cmd.CompanyID,
			SubscriptionID: sub.ID,
			Type:           sub.Type,
			ConnectionIDs:  cmd.ConnectionIDs,
			Preview:        cmd.Preview,
		})
		return err
	})
	if err != nil {
		return View{}, notFound(err, apierr.SubscriptionNotFound)
	}
	return s.ownView(ctx, cmd.CompanyID, view(sub, members, s.now()))
}

// items is pydantic's wording of a list length.
func items(n int) string {
	if n == 1 {
		return "item"
	}
	return "items"
}

// Adjust is the operator's direct change of a subscription.
type Adjust struct {
	CompanyID      int64
	SubscriptionID int64
	domain.Adjustment
}

// AdjustSubscription changes plan, size and periods as the operator asks,
// keeping the size rules: START holds one connection, and a subscription is
// never smaller than the connections it holds.
func (s *Service) AdjustSubscription(ctx context.Context, cmd Adjust) (View, error) {
	a := cmd.Adjustment
	if a.Plan != nil && !a.Plan.Valid() {
		return View{}, apierr.Field(apierr.Body("subscription_plan"), "value_error", "unknown subscription plan %q", *a.Plan)
	}
	if a.ClearPaidUntil && a.PaidUntil != nil {
		return View{}, apierr.Field(apierr.Body("clear_paid_until"), "value_error",
			"Value error, paid_until and clear_paid_until exclude each other")
	}
	if a.ClearTestUntil && a.TestUntil != nil {
		return View{}, apierr.Field(apierr.Body("clear_test_until"), "value_error",
			"Value error, test_until and clear_test_until exclude each other")
	}
	var members []int64
	sub, err := s.repo.UpdateSubscription(ctx, cmd.CompanyID, cmd.SubscriptionID, func(sub *domain.Subscription) error {
		// Read under the row lock: a PATCH of the membership holds the same
		// lock, so the count cannot change between this check and commit.
		all, err := s.conns.Membership(ctx, cmd.CompanyID)
		if err != nil {
			return err
		}
		members = all[sub.ID]
		return sizeError(sub.Apply(a, len(members)), sub.MaxSize, len(members))
	})
	if err != nil {
		return View{}, notFound(err, apierr.SubscriptionNotFound)
	}
	return s.ownView(ctx, cmd.CompanyID, view(sub, members, s.now()))
}

// sizeError turns a broken size rule into the 422 naming max_size.
func sizeError(err error, maxSize int32, inUse int) error {
	switch {
	case errors.Is(err, domain.ErrStartSize):
		return apierr.Field(apierr.Body("max_size"), "value_error",
			"Value error, plan START allows max_size 1 only, not %d", maxSize)
	case errors.Is(err, domain.ErrBelowInUse):
		return apierr.Field(apierr.Body("max_size"), "value_error",
			"Value error, max_size %d is below the %d connections in the subscription", maxSize, inUse)
	}
	return err
}
