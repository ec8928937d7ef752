package app

import (
	"context"
	"time"
)

// Billing is the billing service's internal API (adapters/billing). It owns
// subscriptions; this service owns which connections are in them.
type Billing interface {
	// EnsureSubscription is the company's subscription of a type
	// (CONNECTION_<TYPE>), created on first use. Idempotent and safe to call
	// concurrently.
	EnsureSubscription(ctx context.Context, companyID int64, subscriptionType string) (Subscription, error)
	// GetSubscriptions are the company's subscriptions, all of them or those
	// with the given ids.
	GetSubscriptions(ctx context.Context, companyID int64, ids []int64) ([]Subscription, error)
	// SubscriptionSummaries are all the company's subscriptions, for
	// showing with connections. They may come from a copy in process
	// memory that billing's announcements keep current, so limits never
	// use them (GetSubscriptions asks billing). The slice is shared: read
	// it, do not change it.
	SubscriptionSummaries(ctx context.Context, companyID int64) ([]Subscription, error)
}

// Subscription is what this service needs of a billing subscription.
type Subscription struct {
	ID   int64
	Type string
	// Plan as written in JSON: FREE, START, STANDARD, ADVANCED.
	Plan      string
	MaxSize   int
	PaidUntil *time.Time
}
