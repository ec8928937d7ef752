package app

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// Side is one subscription before and after a change.
type Side struct {
	ID               int64
	Type             domain.SubscriptionType
	OldMaxSize       int32
	NewMaxSize       int32
	OldPlan, NewPlan domain.Plan
	OldPaid, NewPaid *time.Time
}

// ChangeResult answers change_size and change_plan.
type ChangeResult struct {
	Source  Side
	Target  *Side
	Preview bool
}

func side(before, after domain.Subscription) Side {
	return Side{ID: before.ID, Type: before.Type, OldMaxSize: before.MaxSize, NewMaxSize: after.MaxSize,
		OldPlan: before.Plan, NewPlan: after.Plan, OldPaid: before.PaidUntil, NewPaid: after.PaidUntil}
}

// ChangeSize is POST .../actions/change_size.
type ChangeSize struct {
	CompanyID      int64
	SubscriptionID int64
	NewMaxSize     int32
	TargetID       *int64
	Preview        bool
}

// ChangeSubscriptionSize resizes a subscription keeping the value paid, or
// with size 0 moves its connections and value to a target of its type.
// Checks in the documented order: body 422, 404, 22017, 22015, plan 422,
// 22019.
func (s *Service) ChangeSubscriptionSize(ctx context.Context, c ChangeSize) (ChangeResult, error) {
	move := c.NewMaxSize == 0
	if move {
		if c.TargetID == nil {
			return ChangeResult{}, missing("target_subscription_id")
		}
		if *c.TargetID == c.SubscriptionID {
			return ChangeResult{}, valueError(apierr.Body("target_subscription_id"), "the target must be another subscription")
		}
	}
	ids := []int64{c.SubscriptionID}
	if move {
		ids = append(ids, *c.TargetID)
	}
	var res ChangeResult
	err := s.repo.InTx(ctx, func(tx Tx) error {
		subs, err := tx.LockSubscriptions(ctx, c.CompanyID, ids)
		if err != nil {
			return err
		}
		src, ok := subs[c.SubscriptionID]
		if !ok {
			return apierr.SubscriptionNotFound.E()
		}
		var dst domain.Subscription
		if move {
			if dst, ok = subs[*c.TargetID]; !ok {
				return apierr.SubscriptionNotFound.E()
			}
			if dst.Type != src.Type {
				return valueError(apierr.Body("target_subscription_id"), "the target is a %s subscription, not %s", dst.Type, src.Type)
			}
		}
		now := s.now()
		if src.Advance.Active() || (move && dst.Advance.Active()) {
			return apierr.SubscriptionAdvanceActive.E()
		}
		if src.InTest(now) {
			return apierr.SubscriptionInTest.E()
		}
		if err := domain.CheckPlanFor(src.Plan, src.Type, max(c.NewMaxSize, 1)); errors.Is(err, domain.ErrStartSize) {
			return valueError(apierr.Body("new_max_size"), "plan START allows one connection only, not %d", c.NewMaxSize)
		}
		members, err := s.conns.Membership(ctx, c.CompanyID)
		if err != nil {
			return err
		}
		held := int32(len(members[src.ID]))
		after := src
		if !move {
			if c.NewMaxSize < held {
				return apierr.SubscriptionSizeBelowCurrent.Msg("new_max_size %d is below the %d connections the subscription holds", c.NewMaxSize, held)
			}
			after.MaxSize = c.NewMaxSize
			after.PaidUntil = s.cfg.Prices.Rechange(src, src.Plan, c.NewMaxSize, now)
			res = ChangeResult{Source: side(src, after), Preview: c.Preview}
			if c.Preview || sameSub(src, after) {
				return nil
			}
			_, err := tx.SaveSubscription(ctx, after)
			return err
		}
		dstHeld := int32(len(members[dst.ID]))
		if dst.MaxSize-dstHeld < held {
			return apierr.SubscriptionSizeBelowCurrent.Msg("the target has room for %d connections, not %d", dst.MaxSize-dstHeld, held)
		}
		value := s.cfg.Prices.ValueLeft(src, now)
		after.MaxSize, after.PaidUntil = 0, nil
		dstAfter := dst
		dstAfter.PaidUntil = s.cfg.Prices.MoveValue(dst, value, now)
		target := side(dst, dstAfter)
		res = ChangeResult{Source: side(src, after), Target: &target, Preview: c.Preview}
		if c.Preview {
			return nil
		}
		if held > 0 {
			moved := slices.Concat(members[dst.ID], members[src.ID])
			if _, err := s.conns.SetMembership(ctx, Membership{
				CompanyID: c.CompanyID, SubscriptionID: dst.ID, Type: dst.Type, ConnectionIDs: moved,
			}); err != nil {
				return err
			}
		}
		if _, err := tx.SaveSubscription(ctx, after); err != nil {
			return err
		}
		_, err = tx.SaveSubscription(ctx, dstAfter)
		return err
	})
	if err == nil && !c.Preview {
		s.announce(ctx, c.CompanyID)
	}
	return res, err
}

// ChangePlan is POST .../actions/change_plan.
type ChangePlan struct {
	CompanyID      int64
	SubscriptionID int64
	NewPlan        domain.Plan
	Preview        bool
}

// ChangeSubscriptionPlan changes the plan keeping the value paid; in the
// test period the plan changes and test_until stays.
func (s *Service) ChangeSubscriptionPlan(ctx context.Context, c ChangePlan) (ChangeResult, error) {
	var res ChangeResult
	err := s.repo.InTx(ctx, func(tx Tx) error {
		subs, err := tx.LockSubscriptions(ctx, c.CompanyID, []int64{c.SubscriptionID})
		if err != nil {
			return err
		}
		src, ok := subs[c.SubscriptionID]
		if !ok {
			return apierr.SubscriptionNotFound.E()
		}
		if src.Advance.Active() {
			return apierr.SubscriptionAdvanceActive.E()
		}
		if err := domain.CheckPlanFor(c.NewPlan, src.Type, max(src.MaxSize, 1)); err != nil {
			return planError(err, apierr.Body("new_subscription_plan"), c.NewPlan, src.Type)
		}
		members, err := s.conns.Membership(ctx, c.CompanyID)
		if err != nil {
			return err
		}
		if held := int32(len(members[src.ID])); src.MaxSize < held {
			return apierr.SubscriptionSizeBelowCurrent.Msg("the subscription holds %d connections, more than its size %d", held, src.MaxSize)
		}
		now := s.now()
		after := src
		after.Plan = c.NewPlan
		after.PaidUntil = s.cfg.Prices.Rechange(src, c.NewPlan, src.MaxSize, now)
		res = ChangeResult{Source: side(src, after), Preview: c.Preview}
		if c.Preview || sameSub(src, after) {
			return nil
		}
		_, err = tx.SaveSubscription(ctx, after)
		return err
	})
	if err == nil && !c.Preview {
		s.announce(ctx, c.CompanyID)
	}
	return res, err
}

func sameSub(a, b domain.Subscription) bool {
	return a.Plan == b.Plan && a.MaxSize == b.MaxSize && sameTime(a.PaidUntil, b.PaidUntil)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// GrantAdvance is the company asking for its subscription's five-day
// advance: granted when the rules of spec part 3 allow it, else 400 22016,
// which is also the answer to a partner-type client of a partner (its
// partner's route, GrantAdvanceAsPartner, grants it). An unknown
// subscription is 404 22000 all the same.
func (s *Service) GrantAdvance(ctx context.Context, companyID, id int64) (View, error) {
	// Asked before the row is locked, so no lock waits on identity.
	client, err := s.clients.PartnerClient(ctx, companyID)
	if err != nil {
		return View{}, err
	}
	return s.grantAdvance(ctx, companyID, id, client)
}

// GrantAdvanceAsPartner is the advance of a company's subscription granted
// by its partner (billing's internal API): the rules of GrantAdvance,
// except that a partner-type client may have it this way.
func (s *Service) GrantAdvanceAsPartner(ctx context.Context, companyID, id int64) (View, error) {
	return s.grantAdvance(ctx, companyID, id, false)
}

// grantAdvance grants the advance under the subscription's row lock;
// partnerClient refuses it with 22016 once the subscription is found.
func (s *Service) grantAdvance(ctx context.Context, companyID, id int64, partnerClient bool) (View, error) {
	sub, err := s.repo.UpdateSubscription(ctx, companyID, id, func(sub *domain.Subscription) error {
		if partnerClient {
			return apierr.SubscriptionAdvanceNotAllowed.Msg("advance is not allowed: the company is a partner's client, whose partner grants it")
		}
		if err := sub.GrantAdvance(s.now()); errors.Is(err, domain.ErrAdvanceNotAllowed) {
			return apierr.SubscriptionAdvanceNotAllowed.E()
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return View{}, notFound(err, apierr.SubscriptionNotFound)
	}
	members, err := s.conns.Membership(ctx, companyID)
	if err != nil {
		return View{}, err
	}
	// The advance is active now, so it is available to no one: no need to
	// ask whose view this is.
	return view(sub, members[sub.ID], s.now()), nil
}

// CreateSubscription is the operator adding a further, empty subscription.
type CreateSubscription struct {
	CompanyID int64
	Type      string
	Plan      domain.Plan
	MaxSize   int32
	PaidUntil *time.Time
	TestUntil *time.Time
}

// AddSubscription stores a further subscription of a type for a company.
func (s *Service) AddSubscription(ctx context.Context, c CreateSubscription) (View, error) {
	typ, ok := domain.ParseSubscriptionType(c.Type)
	if !ok {
		return View{}, valueError(apierr.Body("subscription_type"), "unknown subscription type %q", c.Type)
	}
	if err := domain.CheckSize(c.Plan, c.MaxSize, 0); err != nil {
		return View{}, sizeError(err, c.MaxSize, 0)
	}
	exists, err := s.companies.Exists(ctx, c.CompanyID)
	if err != nil {
		return View{}, err
	}
	if !exists {
		return View{}, apierr.CompanyNotFound.E()
	}
	var sub domain.Subscription
	err = s.repo.InTx(ctx, func(tx Tx) error {
		sub, err = tx.InsertSubscription(ctx, domain.Subscription{
			CompanyID: c.CompanyID, Type: typ, Plan: c.Plan, MaxSize: c.MaxSize, PaidUntil: c.PaidUntil, TestUntil: c.TestUntil,
		})
		return err
	})
	if err != nil {
		return View{}, err
	}
	s.announce(ctx, c.CompanyID)
	return s.ownView(ctx, c.CompanyID, view(sub, nil, s.now()))
}

// CompanyBilling is the operator's view of a company's payments.
type CompanyBilling struct {
	CompanyID int64
	Settings
	WabaDialogsBalance int64
}

// GetCompanyBilling answers the company's settings and dialog balance.
func (s *Service) GetCompanyBilling(ctx context.Context, companyID int64) (CompanyBilling, error) {
	st, err := s.settings.BillingSettings(ctx, companyID)
	if err != nil {
		return CompanyBilling{}, err
	}
	return s.companyBilling(ctx, companyID, st)
}

// UpdateCompanyBilling changes the given settings (identity stores them).
func (s *Service) UpdateCompanyBilling(ctx context.Context, companyID int64, currency *string, locked *bool) (CompanyBilling, error) {
	st, err := s.settings.UpdateBillingSettings(ctx, companyID, currency, locked)
	if err != nil {
		return CompanyBilling{}, err
	}
	return s.companyBilling(ctx, companyID, st)
}

func (s *Service) companyBilling(ctx context.Context, companyID int64, st Settings) (CompanyBilling, error) {
	b, err := s.repo.WabaDialogsBalance(ctx, companyID)
	if err != nil {
		return CompanyBilling{}, err
	}
	return CompanyBilling{CompanyID: companyID, Settings: st, WabaDialogsBalance: b}, nil
}

// SetSandboxRate sets the rate a keepz connection's company gets in test
// mode; nil makes it unavailable.
func (s *Service) SetSandboxRate(ctx context.Context, connectionID int64, rate *decimal.Decimal) (*decimal.Decimal, error) {
	if rate != nil && (!rate.IsPositive() || !rate.Equal(rate.Round(4))) {
		return nil, valueError(apierr.Body("rate"), "rate must be a number above 0 with at most 4 decimals")
	}
	ref, err := s.conns.Connection(ctx, connectionID)
	if err != nil {
		return nil, err
	}
	if ref.Type != "keepz" {
		return nil, apierr.ConnectionNotFound.Msg("connection %d is not a keepz connection", connectionID)
	}
	return rate, s.repo.SetSandboxRate(ctx, ref.CompanyID, connectionID, rate)
}
