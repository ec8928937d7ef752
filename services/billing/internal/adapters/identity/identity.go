// Package identity is billing's client of the identity service's internal
// API, which owns the companies: billing asks it whether a company exists
// before an operator call writes for a company id it was given.
package identity

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"switchboard.dev/pkg/apierr"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/billing/internal/app"
)

// Companies implements app.Companies over identity's CheckCompanies.
type Companies struct {
	api identityv1.IdentityInternalServiceClient
}

var _ app.Companies = Companies{}

// NewCompanies uses conn, which must carry the internal token
// (server.DialInternal).
func NewCompanies(conn grpc.ClientConnInterface) Companies {
	return Companies{api: identityv1.NewIdentityInternalServiceClient(conn)}
}

// Exists implements app.Companies.
func (c Companies) Exists(ctx context.Context, companyID int64) (bool, error) {
	resp, err := c.api.CheckCompanies(ctx, &identityv1.CheckCompaniesRequest{CompanyIds: []int64{companyID}})
	if err != nil {
		return false, callError(err)
	}
	return !slices.Contains(resp.GetUnknownCompanyIds(), companyID), nil
}

// callError passes identity's API errors on unchanged; identity unreachable
// or too slow is 503; anything else is a fault, logged and answered as 500
// by the server.
func callError(err error) error {
	if e, ok := apierr.FromError(err); ok {
		return e
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return apierr.ServiceUnavailable.Msg("identity service unavailable")
	}
	return fmt.Errorf("identity CheckCompanies: %w", err)
}
