package grpc

import (
	"context"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

// The internal calls of the partner programme: the partners service acts
// for a client company through them, under the public rules (it has
// checked that the company is its client). Each is the public call's use
// case; only the advance and its availability differ (a partner-type
// client's own advance is refused, its partner's is not).

func subscriptionsPB(views []app.View) *billingv1.ListSubscriptionsResponse {
	out := &billingv1.ListSubscriptionsResponse{Subscriptions: make([]*billingv1.Subscription, 0, len(views))}
	for _, v := range views {
		out.Subscriptions = append(out.Subscriptions, SubscriptionPB(v))
	}
	return out
}

// ListCompanySubscriptions implements billingv1.BillingInternalServiceServer:
// the public list, advance.is_available as the partner's route would
// grant it.
func (s *Server) ListCompanySubscriptions(ctx context.Context, req *billingv1.ListSubscriptionsRequest) (*billingv1.ListSubscriptionsResponse, error) {
	views, err := s.app.ListCompanySubscriptions(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return subscriptionsPB(views), nil
}

// ChangeSizeInternal implements billingv1.BillingInternalServiceServer:
// change_size, its rules and answer.
func (s *Server) ChangeSizeInternal(ctx context.Context, req *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error) {
	return s.ChangeSize(ctx, req)
}

// ChangePlanInternal implements billingv1.BillingInternalServiceServer:
// change_plan, its rules and answer.
func (s *Server) ChangePlanInternal(ctx context.Context, req *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error) {
	return s.ChangePlan(ctx, req)
}

// GrantAdvanceInternal implements billingv1.BillingInternalServiceServer:
// the advance granted by the company's partner.
func (s *Server) GrantAdvanceInternal(ctx context.Context, req *billingv1.GrantAdvanceRequest) (*billingv1.Subscription, error) {
	v, err := s.app.GrantAdvanceAsPartner(ctx, req.GetCompanyId(), req.GetSubscriptionId())
	if err != nil {
		return nil, err
	}
	return SubscriptionPB(v), nil
}

// ListCompanyRequisites implements billingv1.BillingInternalServiceServer.
func (s *Server) ListCompanyRequisites(ctx context.Context, req *billingv1.ListRequisitesRequest) (*billingv1.ListRequisitesResponse, error) {
	return s.ListRequisites(ctx, req)
}

// GetCompaniesBilling implements billingv1.BillingInternalServiceServer.
func (s *Server) GetCompaniesBilling(ctx context.Context, req *billingv1.GetCompaniesBillingRequest) (*billingv1.GetCompaniesBillingResponse, error) {
	list, err := s.app.CompaniesBilling(ctx, req.GetCompanyIds())
	if err != nil {
		return nil, err
	}
	out := &billingv1.GetCompaniesBillingResponse{Companies: make([]*billingv1.CompanyBillingSummary, 0, len(list))}
	for _, c := range list {
		subs := make([]*billingv1.SubscriptionInfo, 0, len(c.Subscriptions))
		for _, i := range c.Subscriptions {
			subs = append(subs, infoPB(i))
		}
		out.Companies = append(out.Companies, &billingv1.CompanyBillingSummary{
			CompanyId: c.CompanyID, Subscriptions: subs, WabaDialogsBalance: c.WabaDialogsBalance,
		})
	}
	return out, nil
}

// ListCompaniesInvoices implements billingv1.BillingInternalServiceServer.
func (s *Server) ListCompaniesInvoices(ctx context.Context, req *billingv1.ListCompaniesInvoicesRequest) (*billingv1.ListCompaniesInvoicesResponse, error) {
	list, count, err := s.app.CompaniesInvoices(ctx, req.GetCompanyIds(), req.GetLimit(), req.GetOffset())
	if err != nil {
		return nil, err
	}
	out := &billingv1.ListCompaniesInvoicesResponse{Count: count, Invoices: make([]*billingv1.CompanyInvoice, 0, len(list))}
	for _, inv := range list {
		out.Invoices = append(out.Invoices, &billingv1.CompanyInvoice{
			CompanyId: inv.CompanyID, Invoice: InvoicePB(inv), Payer: inv.Payer(), ClientAmount: protoapi.Decimal(inv.ClientAmount()),
		})
	}
	return out, nil
}

// decimalIn reads a Decimal of the partners service (absent: 0).
func decimalIn(d *apiv1.Decimal, field string) (decimal.Decimal, error) {
	if d == nil || d.GetValue() == "" {
		return decimal.Zero, nil
	}
	v, err := decimal.NewFromString(d.GetValue())
	if err != nil || v.IsNegative() {
		return v, apierr.Field(apierr.Body(field), "value_error", "Value error, %q is not a non-negative number", d.GetValue())
	}
	return v, nil
}

// CreatePartnerInvoice implements billingv1.BillingInternalServiceServer:
// the public invoice with the partner's context.
func (s *Server) CreatePartnerInvoice(ctx context.Context, req *billingv1.CreatePartnerInvoiceRequest) (*billingv1.PartnerInvoice, error) {
	r := invoiceRequest(req.GetInvoice())
	p := &app.PartnerContext{PartnerID: req.GetPartnerCompanyId(), HoldID: req.GetHoldId(), Email: req.GetPartnerEmail()}
	var err error
	if p.Percent, err = decimalIn(req.GetPartnerCommissionPercent(), "partner_commission_percent"); err != nil {
		return nil, err
	}
	if p.Available, err = decimalIn(req.GetPartnerBalanceAvailable(), "partner_balance_available"); err != nil {
		return nil, err
	}
	if q := req.GetPartnerRequisite(); q != nil {
		p.Requisite = &domain.Requisite{ID: q.GetId(), TIN: q.GetTin(), KPP: q.Kpp, Name: q.GetName()}
	}
	r.Partner = p
	inv, err := s.app.CreateInvoice(ctx, r)
	if err != nil {
		return nil, err
	}
	return &billingv1.PartnerInvoice{
		Invoice: InvoicePB(inv), ClientAmount: protoapi.Decimal(inv.ClientAmount()),
		PartnerBalanceUsed: protoapi.Decimal(inv.Partner.BalanceUsed),
	}, nil
}

// ResolvePartnerHold implements billingv1.BillingInternalServiceServer.
func (s *Server) ResolvePartnerHold(ctx context.Context, req *billingv1.ResolvePartnerHoldRequest) (*billingv1.ResolvePartnerHoldResponse, error) {
	inv, found, err := s.app.ResolveHold(ctx, req.GetHoldId())
	if err != nil || !found {
		return &billingv1.ResolvePartnerHoldResponse{}, err
	}
	st := statusPB[inv.Status]
	out := &billingv1.ResolvePartnerHoldResponse{Found: true, InvoiceId: inv.ID, Status: &st, PartnerBalanceUsed: protoapi.Decimal(decimal.Zero)}
	if inv.Partner != nil {
		out.PartnerBalanceUsed = protoapi.Decimal(inv.Partner.BalanceUsed)
	}
	return out, nil
}
