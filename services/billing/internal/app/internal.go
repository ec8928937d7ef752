package app

import (
	"context"
	"errors"
	"slices"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// Info is a subscription as other services see it: without its
// connections, with whether it is paid now.
type Info struct {
	domain.Subscription
	Paid bool
	// PaidThrough: domain.Subscription.PaidThrough at the same now.
	PaidThrough *time.Time
}

func (s *Service) info(sub domain.Subscription, now time.Time) Info {
	return Info{Subscription: sub, Paid: sub.Paid(now), PaidThrough: sub.PaidThrough(now)}
}

// EnsureSubscription answers the company's subscription of a type,
// creating it on first use: plan START, size 1, a test period from now.
func (s *Service) EnsureSubscription(ctx context.Context, companyID int64, subscriptionType string) (Info, error) {
	if companyID <= 0 {
		return Info{}, apierr.Field(apierr.Body("company_id"), "value_error", "company_id must be positive")
	}
	typ, ok := domain.ParseSubscriptionType(subscriptionType)
	if !ok {
		return Info{}, apierr.Field(apierr.Body("subscription_type"), "value_error",
			"unknown subscription type %q", subscriptionType)
	}
	now := s.now()
	testUntil := now.Add(s.cfg.TestPeriod)
	sub, err := s.repo.EnsureSubscription(ctx, domain.Subscription{
		CompanyID: companyID,
		Type:      typ,
		Plan:      domain.NewPlan,
		MaxSize:   domain.NewMaxSize,
		TestUntil: &testUntil,
	})
	if err != nil {
		return Info{}, err
	}
	return s.info(sub, now), nil
}

// GetSubscriptions answers the company's subscriptions, all or those of ids.
func (s *Service) GetSubscriptions(ctx context.Context, companyID int64, ids []int64) ([]Info, error) {
	subs, err := s.repo.Subscriptions(ctx, companyID, ids)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]Info, len(subs))
	for i, sub := range subs {
		out[i] = s.info(sub, now)
	}
	return out, nil
}

// PaidCheck is the answer of CheckConnectionPaid.
type PaidCheck struct {
	CompanyID      int64
	ConnectionID   int64
	SubscriptionID *int64
	Paid           bool
	PaidUntil      *time.Time
	TestUntil      *time.Time
}

// CheckConnectionPaid reports whether a connection may send now: its
// subscription is paid or in its test period. A connection in no
// subscription is not paid; an unknown connection is the connections
// service's CONNECTION_NOT_FOUND, passed on.
func (s *Service) CheckConnectionPaid(ctx context.Context, connectionID int64) (PaidCheck, error) {
	ref, err := s.conns.Connection(ctx, connectionID)
	if err != nil {
		return PaidCheck{}, err
	}
	out := PaidCheck{CompanyID: ref.CompanyID, ConnectionID: connectionID, SubscriptionID: ref.SubscriptionID}
	if ref.SubscriptionID == nil {
		return out, nil
	}
	sub, err := s.repo.Subscription(ctx, ref.CompanyID, *ref.SubscriptionID)
	if errors.Is(err, domain.ErrNotFound) {
		// The connection names a subscription billing does not have: it
		// cannot be paid for, so it may not send.
		return out, nil
	}
	if err != nil {
		return PaidCheck{}, err
	}
	out.Paid = sub.Paid(s.now())
	out.PaidUntil, out.TestUntil = sub.PaidUntil, sub.TestUntil
	return out, nil
}

// CompanySummary is one company of CompaniesBilling.
type CompanySummary struct {
	CompanyID int64
	// Subscriptions by id; never nil.
	Subscriptions      []Info
	WabaDialogsBalance int64
}

// CompaniesBilling answers, for each of companyIDs in the order given (an
// id given twice is answered twice), its subscriptions and its business
// dialog balance: a partner's list of clients. Two queries whatever the
// number of companies; a company billing has never seen has no
// subscriptions and balance 0.
func (s *Service) CompaniesBilling(ctx context.Context, companyIDs []int64) ([]CompanySummary, error) {
	out := make([]CompanySummary, len(companyIDs))
	if len(companyIDs) == 0 {
		return out, nil
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(companyIDs)))
	subs, err := s.repo.CompaniesSubscriptions(ctx, distinct)
	if err != nil {
		return nil, err
	}
	balances, err := s.repo.WabaDialogsBalances(ctx, distinct)
	if err != nil {
		return nil, err
	}
	now := s.now()
	byCompany := make(map[int64][]Info)
	for _, sub := range subs {
		byCompany[sub.CompanyID] = append(byCompany[sub.CompanyID], s.info(sub, now))
	}
	for i, id := range companyIDs {
		infos := byCompany[id]
		if infos == nil {
			infos = []Info{}
		}
		out[i] = CompanySummary{CompanyID: id, Subscriptions: infos, WabaDialogsBalance: balances[id]}
	}
	return out, nil
}
