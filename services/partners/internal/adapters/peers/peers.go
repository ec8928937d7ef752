// Package peers is the partners service's side of the other services'
// internal APIs: identity (partners, clients, their creation), billing
// (subscriptions, requisites, balances) and connections (what each
// connection is). Their API errors pass on unchanged; an unreachable
// service is 503.
package peers

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/protoapi"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// Identity implements app.Identity.
type Identity struct {
	api       identityv1.IdentityInternalServiceClient
	companies peers.Companies
}

var _ app.Identity = Identity{}

// NewIdentity uses conn, which carries the internal token.
func NewIdentity(conn grpc.ClientConnInterface) Identity {
	return Identity{api: identityv1.NewIdentityInternalServiceClient(conn), companies: peers.NewCompanies(conn)}
}

func clientType(t identityv1.ClientType) string { return protoapi.EnumJSON(t) }

// Partner implements app.Identity.
func (i Identity) Partner(ctx context.Context, companyID int64) (app.PartnerInfo, error) {
	p, err := i.api.GetPartner(ctx, &identityv1.GetPartnerRequest{CompanyId: companyID})
	if err != nil {
		return app.PartnerInfo{}, apierr.FromPeer("identity", "GetPartner", err)
	}
	return app.PartnerInfo{Name: p.GetName(), PromoCode: p.GetPromoCode(), ReferralPromoCode: p.GetReferralPromoCode()}, nil
}

// Clients implements app.Identity.
func (i Identity) Clients(ctx context.Context, partnerID int64) ([]app.ClientInfo, error) {
	resp, err := i.api.ListPartnerClients(ctx, &identityv1.ListPartnerClientsRequest{PartnerCompanyId: partnerID})
	if err != nil {
		return nil, apierr.FromPeer("identity", "ListPartnerClients", err)
	}
	out := make([]app.ClientInfo, len(resp.GetClients()))
	for n, c := range resp.GetClients() {
		out[n] = app.ClientInfo{ID: c.GetCompanyId(), Name: c.GetName(), Type: clientType(c.GetClientType()),
			PaymentsLocked: c.GetPaymentsLocked(), WabaProviderPartnerID: c.WabaProviderPartnerId}
	}
	return out, nil
}

// ClientLink implements app.Identity.
func (i Identity) ClientLink(ctx context.Context, companyID int64) (int64, string, error) {
	l, err := i.api.GetClientLink(ctx, &identityv1.GetClientLinkRequest{CompanyId: companyID})
	if err != nil {
		return 0, "", apierr.FromPeer("identity", "GetClientLink", err)
	}
	return l.GetPartnerCompanyId(), clientType(l.GetClientType()), nil
}

// CreateClient implements app.Identity.
func (i Identity) CreateClient(ctx context.Context, c app.NewClient) (*identityv1.Company, error) {
	out, err := i.api.CreatePartnerClient(ctx, &identityv1.CreatePartnerClientRequest{
		PartnerCompanyId: c.PartnerID, Name: c.Name, Email: c.Email, CompanyName: c.CompanyName,
		Phone: c.Phone, MaxPerDay: c.MaxPerDay,
	})
	if err != nil {
		return nil, apierr.FromPeer("identity", "CreatePartnerClient", err)
	}
	return out, nil
}

// SetPaymentsLocked implements app.Identity.
func (i Identity) SetPaymentsLocked(ctx context.Context, companyID int64, locked bool) error {
	_, err := i.companies.UpdateBillingSettings(ctx, companyID, nil, &locked)
	return err
}

// Billing implements app.Billing.
type Billing struct {
	api billingv1.BillingInternalServiceClient
}

var _ app.Billing = Billing{}

// NewBilling uses conn, which carries the internal token.
func NewBilling(conn grpc.ClientConnInterface) Billing {
	return Billing{api: billingv1.NewBillingInternalServiceClient(conn)}
}

func planWord(p billingv1.SubscriptionPlan) string { return protoapi.EnumJSON(p) }

func timeOf(t *timestamppb.Timestamp) *time.Time {
	if !t.IsValid() {
		return nil
	}
	v := t.AsTime().UTC()
	return &v
}

// Companies implements app.Billing.
func (b Billing) Companies(ctx context.Context, ids []int64) (map[int64]app.CompanyBilling, error) {
	resp, err := b.api.GetCompaniesBilling(ctx, &billingv1.GetCompaniesBillingRequest{CompanyIds: ids})
	if err != nil {
		return nil, apierr.FromPeer("billing", "GetCompaniesBilling", err)
	}
	out := make(map[int64]app.CompanyBilling, len(resp.GetCompanies()))
	for _, c := range resp.GetCompanies() {
		cb := app.CompanyBilling{Balance: c.GetWabaDialogsBalance()}
		for _, s := range c.GetSubscriptions() {
			sub := domain.Sub{Type: s.GetSubscriptionType(), Plan: planWord(s.GetSubscriptionPlan())}
			sub.PaidUntil, sub.TestUntil = timeOf(s.GetPaidUntil()), timeOf(s.GetTestUntil())
			cb.Subs = append(cb.Subs, sub)
		}
		out[c.GetCompanyId()] = cb
	}
	return out, nil
}

// Subscriptions implements app.Billing.
func (b Billing) Subscriptions(ctx context.Context, companyID int64) ([]*billingv1.Subscription, error) {
	resp, err := b.api.ListCompanySubscriptions(ctx, &billingv1.ListSubscriptionsRequest{CompanyId: companyID})
	if err != nil {
		return nil, apierr.FromPeer("billing", "ListCompanySubscriptions", err)
	}
	return resp.GetSubscriptions(), nil
}

// ChangeSize implements app.Billing.
func (b Billing) ChangeSize(ctx context.Context, r *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error) {
	out, err := b.api.ChangeSizeInternal(ctx, r)
	if err != nil {
		return nil, apierr.FromPeer("billing", "ChangeSizeInternal", err)
	}
	return out, nil
}

// ChangePlan implements app.Billing.
func (b Billing) ChangePlan(ctx context.Context, r *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error) {
	out, err := b.api.ChangePlanInternal(ctx, r)
	if err != nil {
		return nil, apierr.FromPeer("billing", "ChangePlanInternal", err)
	}
	return out, nil
}

// GrantAdvance implements app.Billing.
func (b Billing) GrantAdvance(ctx context.Context, r *billingv1.GrantAdvanceRequest) (*billingv1.Subscription, error) {
	out, err := b.api.GrantAdvanceInternal(ctx, r)
	if err != nil {
		return nil, apierr.FromPeer("billing", "GrantAdvanceInternal", err)
	}
	return out, nil
}

// Requisites implements app.Billing.
func (b Billing) Requisites(ctx context.Context, companyID int64) ([]*billingv1.Requisite, error) {
	resp, err := b.api.ListCompanyRequisites(ctx, &billingv1.ListRequisitesRequest{CompanyId: companyID})
	if err != nil {
		return nil, apierr.FromPeer("billing", "ListCompanyRequisites", err)
	}
	return resp.GetRequisites(), nil
}

// Invoices implements app.Billing.
func (b Billing) Invoices(ctx context.Context, companyIDs []int64, limit, offset int32) ([]*billingv1.CompanyInvoice, int64, error) {
	resp, err := b.api.ListCompaniesInvoices(ctx, &billingv1.ListCompaniesInvoicesRequest{CompanyIds: companyIDs, Limit: limit, Offset: offset})
	if err != nil {
		return nil, 0, apierr.FromPeer("billing", "ListCompaniesInvoices", err)
	}
	return resp.GetInvoices(), resp.GetCount(), nil
}

// CreatePartnerInvoice implements app.Billing.
func (b Billing) CreatePartnerInvoice(ctx context.Context, r *billingv1.CreatePartnerInvoiceRequest) (*billingv1.PartnerInvoice, error) {
	out, err := b.api.CreatePartnerInvoice(ctx, r)
	if err != nil {
		return nil, apierr.FromPeer("billing", "CreatePartnerInvoice", err)
	}
	return out, nil
}

// ResolveHold implements app.Billing.
func (b Billing) ResolveHold(ctx context.Context, holdID string) (bool, int64, string, decimal.Decimal, error) {
	out, err := b.api.ResolvePartnerHold(ctx, &billingv1.ResolvePartnerHoldRequest{HoldId: holdID})
	if err != nil {
		return false, 0, "", decimal.Zero, apierr.FromPeer("billing", "ResolvePartnerHold", err)
	}
	if !out.GetFound() {
		return false, 0, "", decimal.Zero, nil
	}
	used, err := decimal.NewFromString(out.GetPartnerBalanceUsed().GetValue())
	if err != nil {
		return false, 0, "", decimal.Zero, fmt.Errorf("billing ResolvePartnerHold: partner_balance_used %q: %w", out.GetPartnerBalanceUsed().GetValue(), err)
	}
	return true, out.GetInvoiceId(), protoapi.EnumJSON(out.GetStatus()), used, nil
}

// Connections implements app.Connections.
type Connections struct {
	api connectionsv1.ConnectionsInternalServiceClient
}

var _ app.Connections = Connections{}

// NewConnections uses conn, which carries the internal token.
func NewConnections(conn grpc.ClientConnInterface) Connections {
	return Connections{api: connectionsv1.NewConnectionsInternalServiceClient(conn)}
}

// Connections implements app.Connections.
func (c Connections) Connections(ctx context.Context, companyID int64) (map[int64]app.Connection, error) {
	resp, err := c.api.ListCompanyConnections(ctx, &connectionsv1.ListCompanyConnectionsRequest{CompanyId: companyID})
	if err != nil {
		return nil, apierr.FromPeer("connections", "ListCompanyConnections", err)
	}
	out := make(map[int64]app.Connection, len(resp.GetConnections()))
	for _, cn := range resp.GetConnections() {
		conn := app.Connection{ID: cn.GetId(), Type: protoapi.EnumJSON(cn.GetType()), Name: cn.GetName()}
		if v, ok := cn.GetParams().GetFields()["phone"]; ok {
			if s := v.GetStringValue(); s != "" {
				conn.Phone = &s
			}
		}
		out[cn.GetId()] = conn
	}
	return out, nil
}
