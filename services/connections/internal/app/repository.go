package app

import (
	"context"

	"switchboard.dev/services/connections/internal/domain"
)

// Repository is the connections database (adapters/postgres). Every state
// change commits together with its status record and outbox event.
type Repository interface {
	WabaRepository
	// CreateConnection stores c with its first status record and that
	// status's event (when c.LastStatus is set), in one transaction. With a
	// slot it first takes the lock of the company and type and counts the
	// company's connections of the type: domain.ErrLimitExceeded when they
	// are slot.Max already; otherwise c joins slot.SubscriptionID while that
	// has fewer than slot.Max members, and no subscription otherwise.
	CreateConnection(ctx context.Context, c domain.Connection, slot *Slot) (domain.Connection, error)
	// Connection is a connection of the company (domain.ErrNotFound for
	// another company's).
	Connection(ctx context.Context, companyID, id int64) (domain.Connection, error)
	// ConnectionByID is any connection, for callers that are not a company
	// (the sandbox, other services).
	ConnectionByID(ctx context.Context, id int64) (domain.Connection, error)
	// ConnectionsOfType is every connection of type t, of every company, by
	// id (the messenger adapters' pollers).
	ConnectionsOfType(ctx context.Context, t domain.Type) ([]domain.Connection, error)
	// Connections is a page of the company's connections of the given types
	// (all when none), by id, and the count of all its connections.
	Connections(ctx context.Context, companyID int64, page Page) ([]domain.Connection, int64, error)
	// UpdateConnection runs update on the locked row and stores the result.
	// When update changed LastStatus it also stores the new status record
	// and its event, in the same transaction. It answers the connection and
	// its newest status record afterwards (nil when it has none).
	UpdateConnection(ctx context.Context, ref Ref, update func(*domain.Connection) error) (domain.Connection, *domain.StatusRecord, error)
	// Statuses are the n newest status records of a company's connection,
	// newest first.
	Statuses(ctx context.Context, companyID, id int64, n int) ([]domain.StatusRecord, error)
	// CountConnections counts the company's connections of a type.
	CountConnections(ctx context.Context, companyID int64, t domain.Type) (int, error)
	// SubscriptionMembers are the company's connections grouped by
	// subscription, subscriptions and ids ascending.
	SubscriptionMembers(ctx context.Context, companyID int64) ([]Members, error)
	// SetSubscriptionMembers makes ids the members of a subscription of
	// type t, under the same lock as creates of that type: the listed ones
	// join it, the other members leave it (subscription_id null). Each id
	// must be a company connection of type t (*domain.MemberError
	// otherwise). With preview nothing is written. It answers the members
	// afterwards, ascending.
	SetSubscriptionMembers(ctx context.Context, companyID, subscriptionID int64, t domain.Type, ids []int64, preview bool) ([]int64, error)
}

// Slot is the room a create may take: the type's limit and the
// subscription new connections join.
type Slot struct {
	SubscriptionID int64
	Max            int
}

// Page selects connections for a list.
type Page struct {
	Types  []domain.Type
	Limit  int
	Offset int
}

// Ref names a connection to change. CompanyID 0 means any company: only
// for callers that are not a company (the sandbox, service-side
// authorisations).
type Ref struct {
	CompanyID int64
	ID        int64
}

// Members are the connections of one subscription.
type Members struct {
	SubscriptionID int64
	ConnectionIDs  []int64
}
