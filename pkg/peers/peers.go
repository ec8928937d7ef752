// Package peers holds the questions several services ask another service
// alike, each answered once here: does this company exist (identity), and
// whose is this connection (connections). A service adapts them to the
// small interfaces its own app package declares.
package peers

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/apierr"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// SubscriptionsChannel is the Redis pub/sub channel billing announces a
// company's id on (in decimal) once a change to the company's
// subscriptions is stored, so that copies other services keep of them
// (pkg/localcache) are dropped at once.
const SubscriptionsChannel = "sb:billing:subscriptions"

// ErrNotFound is a connection that does not exist.
var ErrNotFound = errors.New("not found")

// Companies asks identity, which owns them, whether companies exist (for
// operator calls that take a company id as given: an API key's company
// exists), and reads and sets their billing settings.
type Companies struct {
	api identityv1.IdentityInternalServiceClient
}

// NewCompanies uses conn, which must carry the internal token
// (server.DialInternal).
func NewCompanies(conn grpc.ClientConnInterface) Companies {
	return Companies{api: identityv1.NewIdentityInternalServiceClient(conn)}
}

// Exists asks identity's CheckCompanies; identity unreachable is 503.
func (c Companies) Exists(ctx context.Context, companyID int64) (bool, error) {
	resp, err := c.api.CheckCompanies(ctx, &identityv1.CheckCompaniesRequest{CompanyIds: []int64{companyID}})
	if err != nil {
		return false, apierr.FromPeer("identity", "CheckCompanies", err)
	}
	return !slices.Contains(resp.GetUnknownCompanyIds(), companyID), nil
}

// BillingSettings are a company's payment currency ("RUB" or "USD") and
// whether its payments are locked, as its company card shows them.
type BillingSettings struct {
	PaymentCurrency string
	PaymentsLocked  bool
}

// BillingSettings asks identity's GetCompanyBillingSettings. An unknown
// company is identity's own 404 error 8000 (apierr.CompanyNotFound),
// passed on as is; identity unreachable is 503.
func (c Companies) BillingSettings(ctx context.Context, companyID int64) (BillingSettings, error) {
	resp, err := c.api.GetCompanyBillingSettings(ctx, &identityv1.GetCompanyBillingSettingsRequest{CompanyId: companyID})
	if err != nil {
		return BillingSettings{}, apierr.FromPeer("identity", "GetCompanyBillingSettings", err)
	}
	return billingSettings(resp), nil
}

// UpdateBillingSettings sets the given settings (nil: unchanged) through
// identity's UpdateCompanyBillingSettings and answers them after the
// change. Identity's API errors pass on as they are: 404 8000 for an
// unknown company, 422 at body.payment_currency for a currency other than
// RUB or USD; identity unreachable is 503.
func (c Companies) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (BillingSettings, error) {
	resp, err := c.api.UpdateCompanyBillingSettings(ctx, &identityv1.UpdateCompanyBillingSettingsRequest{
		CompanyId: companyID, PaymentCurrency: currency, PaymentsLocked: locked,
	})
	if err != nil {
		return BillingSettings{}, apierr.FromPeer("identity", "UpdateCompanyBillingSettings", err)
	}
	return billingSettings(resp), nil
}

func billingSettings(pb *identityv1.CompanyBillingSettings) BillingSettings {
	return BillingSettings{PaymentCurrency: pb.GetPaymentCurrency(), PaymentsLocked: pb.GetPaymentsLocked()}
}

// Connections asks the connections service about one connection.
type Connections struct {
	api connectionsv1.ConnectionsInternalServiceClient
}

// NewConnections uses conn, which must carry the internal token.
func NewConnections(conn grpc.ClientConnInterface) Connections {
	return Connections{api: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// Connection is a connection as the API shows it, and its company;
// ErrNotFound when it does not exist; connections unreachable is 503.
func (c Connections) Connection(ctx context.Context, id int64) (*connectionsv1.Connection, int64, error) {
	resp, err := c.api.GetConnectionInternal(ctx, &connectionsv1.GetConnectionInternalRequest{ConnectionId: id})
	if e, ok := apierr.FromError(err); ok && e.Code == apierr.ConnectionNotFound.Code {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, apierr.FromPeer("connections", "GetConnectionInternal", err)
	}
	return resp.GetConnection(), resp.GetCompanyId(), nil
}
