// Package app holds identity's use cases. It speaks domain types and answers
// API errors from the catalogue; storage and transport stay outside.
package app

import (
	"context"
	"errors"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/identity/internal/domain"
)

// Repository is identity's storage, implemented by adapters/postgres.
type Repository interface {
	CreateCompany(ctx context.Context, in NewCompany) (CompanyCreated, error)
	Company(ctx context.Context, id int64) (domain.Company, error)
	User(ctx context.Context, id int64) (domain.User, error)
	Members(ctx context.Context, companyID int64) ([]domain.Member, error)
	Roles(ctx context.Context, companyID int64) ([]domain.Role, error)
	Integrations(ctx context.Context, companyID int64, limit, offset int) ([]domain.Integration, int64, error)
	Integration(ctx context.Context, companyID, id int64) (domain.Integration, error)
	// UpdateIntegration runs update on the locked row and stores the result
	// in one transaction.
	UpdateIntegration(ctx context.Context, companyID, id int64, update func(*domain.Integration) error) (domain.Integration, error)
	CreateIntegration(ctx context.Context, in domain.Integration) (domain.Integration, error)
	CreateRole(ctx context.Context, role domain.Role) (domain.Role, error)
	// CreateMember adds the user with that email (creating the account if
	// needed) to the company. roleID 0 with a system type picks that role.
	CreateMember(ctx context.Context, companyID int64, user domain.User, role RoleRef) (domain.Member, error)
	// Principal finds the enabled API integration with that key hash.
	Principal(ctx context.Context, keyHash string) (Principal, error)
	// MarkHadConnections sets had_connections on the companies with those
	// ids and answers the ids that name no company.
	MarkHadConnections(ctx context.Context, companyIDs []int64) (unknown []int64, err error)
	// UnknownCompanies are the ids, sorted and without repeats, that name
	// no company.
	UnknownCompanies(ctx context.Context, companyIDs []int64) ([]int64, error)
	// UpdateBillingSettings sets the given fields (nil: unchanged) of the
	// company in one statement and answers its settings after the change;
	// domain.ErrNotFound when no company has that id.
	UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (domain.BillingSettings, error)
}

// Revoker makes a replaced key stop working everywhere at once.
type Revoker interface {
	Revoke(ctx context.Context, keyHash string) error
}

// RoleRef names a role by id or by system type.
type RoleRef struct {
	ID         int64
	SystemType domain.SystemRole
}

// NewCompany is what the operator API creates.
type NewCompany struct {
	Name      string
	Timezone  string
	IsPartner bool
	Owner     domain.User
	// Roles to create, the first being the owner's.
	Roles []domain.Role
	// API integration holding every scope, with its key hash set.
	Integration domain.Integration
}

// CompanyCreated is the result of CreateCompany.
type CompanyCreated struct {
	Company       domain.Company
	Owner         domain.User
	IntegrationID int64
}

// Principal is who an API key acts as.
type Principal struct {
	CompanyID        int64
	IntegrationID    int64
	Scopes           []string
	OwnerUserID      int64
	OwnerName        string
	Permissions      []string
	CompanyIsPartner bool
}

// Service is the use cases.
type Service struct {
	repo    Repository
	revoker Revoker
}

// New wires the use cases.
func New(repo Repository, revoker Revoker) *Service {
	return &Service{repo: repo, revoker: revoker}
}

// notFound maps a repository miss to the given API error and passes any
// other failure on.
func notFound(err error, def apierr.Def) error {
	if errors.Is(err, domain.ErrNotFound) {
		return def.E()
	}
	return err
}
