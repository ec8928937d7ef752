// Package identity asks the identity service what billing needs of it:
// companies' billing settings (the company card shows them), the partner
// programme's promo codes, and which companies are partners' clients.
package identity

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/peers"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/billing/internal/app"
)

// Settings implements app.CompanySettings over pkg/peers.
type Settings struct{ Companies peers.Companies }

var _ app.CompanySettings = Settings{}

// BillingSettings implements app.CompanySettings.
func (s Settings) BillingSettings(ctx context.Context, companyID int64) (app.Settings, error) {
	b, err := s.Companies.BillingSettings(ctx, companyID)
	return app.Settings{PaymentCurrency: b.PaymentCurrency, PaymentsLocked: b.PaymentsLocked}, err
}

// UpdateBillingSettings implements app.CompanySettings.
func (s Settings) UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (app.Settings, error) {
	b, err := s.Companies.UpdateBillingSettings(ctx, companyID, currency, locked)
	return app.Settings{PaymentCurrency: b.PaymentCurrency, PaymentsLocked: b.PaymentsLocked}, err
}

// Promos implements app.Promos with identity's ResolvePromoCode: partner
// companies' codes (either kind) are valid.
type Promos struct {
	api identityv1.IdentityInternalServiceClient
}

var _ app.Promos = Promos{}

// NewPromos uses conn, which must carry the internal token
// (server.DialInternal).
func NewPromos(conn grpc.ClientConnInterface) Promos {
	return Promos{api: identityv1.NewIdentityInternalServiceClient(conn)}
}

// Valid implements app.Promos: true when identity resolves the code, false
// when it answers NotFound (or the code is blank, which identity's request
// would refuse). Identity unreachable is 503; its other API errors pass on.
func (p Promos) Valid(ctx context.Context, code string) (bool, error) {
	if strings.TrimSpace(code) == "" {
		return false, nil
	}
	_, err := p.api.ResolvePromoCode(ctx, &identityv1.ResolvePromoCodeRequest{Code: code})
	switch {
	case err == nil:
		return true, nil
	case notFound(err, apierr.NotFound), unimplemented(err):
		return false, nil
	}
	return false, apierr.FromPeer("identity", "ResolvePromoCode", err)
}

// Clients implements app.Clients with identity's GetClientLink.
type Clients struct {
	api identityv1.IdentityInternalServiceClient
}

var _ app.Clients = Clients{}

// NewClients uses conn, which must carry the internal token.
func NewClients(conn grpc.ClientConnInterface) Clients {
	return Clients{api: identityv1.NewIdentityInternalServiceClient(conn)}
}

// PartnerClient implements app.Clients: the company has a partner and is
// its partner-type client. A company identity does not know is no one's
// client. Identity unreachable is 503; its other API errors pass on.
func (c Clients) PartnerClient(ctx context.Context, companyID int64) (bool, error) {
	link, err := c.api.GetClientLink(ctx, &identityv1.GetClientLinkRequest{CompanyId: companyID})
	switch {
	case err == nil:
		return link.GetPartnerCompanyId() != 0 && link.GetClientType() == identityv1.ClientType_CLIENT_TYPE_PARTNER, nil
	case notFound(err, apierr.CompanyNotFound), unimplemented(err):
		return false, nil
	}
	return false, apierr.FromPeer("identity", "GetClientLink", err)
}

// notFound reports whether err is identity's def, or a bare gRPC NotFound
// carrying no API error.
func notFound(err error, def apierr.Def) bool {
	if e, ok := apierr.FromError(err); ok {
		return e.Code == def.Code
	}
	return status.Code(err) == codes.NotFound
}

// unimplemented: an identity older than the partner programme (billing
// deployed first) has no promo codes and no clients, and says so with
// Unimplemented; answering that lets billing run against it unchanged.
func unimplemented(err error) bool {
	_, isAPI := apierr.FromError(err)
	return !isAPI && status.Code(err) == codes.Unimplemented
}
