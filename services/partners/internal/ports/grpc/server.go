// Package grpc is the partners service's transport: decode the request,
// call one use case, encode the answer. Access rules (scope, permission,
// partner companies only) are declared in the protos and enforced by
// pkg/auth; validation by pkg/validate.
package grpc

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/partners/internal/app"
	"switchboard.dev/services/partners/internal/domain"
)

// Server implements the public, operator, sandbox and internal partners
// services.
type Server struct {
	partnersv1.UnimplementedPartnersServiceServer
	partnersv1.UnimplementedPartnersOperatorServiceServer
	partnersv1.UnimplementedPartnersSandboxServiceServer
	partnersv1.UnimplementedPartnersInternalServiceServer
	app *app.Service
}

var (
	_ partnersv1.PartnersServiceServer         = (*Server)(nil)
	_ partnersv1.PartnersOperatorServiceServer = (*Server)(nil)
	_ partnersv1.PartnersSandboxServiceServer  = (*Server)(nil)
	_ partnersv1.PartnersInternalServiceServer = (*Server)(nil)
)

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

func ts(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func commissionsPB(c domain.Commissions) *partnersv1.Commissions {
	return &partnersv1.Commissions{
		PartnerCommissionPercent:     protoapi.Decimal(c.Partner),
		ReferralCommissionPercent:    protoapi.Decimal(c.Referral),
		WabaDialogsCommissionPercent: protoapi.Decimal(c.WabaDialogs),
	}
}

// GetProfile implements partnersv1.PartnersServiceServer.
func (s *Server) GetProfile(ctx context.Context, req *partnersv1.GetProfileRequest) (*partnersv1.Profile, error) {
	p, err := s.app.GetProfile(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return &partnersv1.Profile{
		Name: p.Name, PromoCode: p.PromoCode, ReferralPromoCode: p.ReferralPromoCode,
		Commissions: commissionsPB(p.Commissions), ActiveClientsCount: p.ActiveClients, ActiveReferralsCount: p.ActiveReferrals,
	}, nil
}

func clientPB(c domain.Client) *partnersv1.PartnerCompany {
	return &partnersv1.PartnerCompany{
		Id: c.ID, Name: c.Name, PartnerCompanyType: c.Type, PaymentsLocked: c.PaymentsLocked,
		WabaDialogsBalance: c.WabaDialogsBalance, WabaProviderPartnerId: c.WabaProviderPartnerID, Note: c.Note,
		PaidUntil: ts(c.PaidUntil()), TestUntil: ts(c.TestUntil()),
	}
}

// ListPartnerCompanies implements partnersv1.PartnersServiceServer.
func (s *Server) ListPartnerCompanies(ctx context.Context, req *partnersv1.ListPartnerCompaniesRequest) (*partnersv1.ListPartnerCompaniesResponse, error) {
	f := domain.Filter{
		Query: req.Query, Type: req.PartnerCompanyType, SubscriptionType: req.SubscriptionType,
		SubscriptionStatus: req.SubscriptionStatus, OrderBy: req.GetOrderBy(), Limit: 100, Offset: int(req.GetOffset()),
	}
	if req.Limit != nil {
		f.Limit = int(req.GetLimit())
	}
	page, total, err := s.app.ListClients(ctx, req.GetCompanyId(), f)
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListPartnerCompaniesResponse{Count: int64(total), PartnerCompanies: make([]*partnersv1.PartnerCompany, 0, len(page))}
	for _, c := range page {
		out.PartnerCompanies = append(out.PartnerCompanies, clientPB(c))
	}
	return out, nil
}

// GetPartnerCompany implements partnersv1.PartnersServiceServer.
func (s *Server) GetPartnerCompany(ctx context.Context, req *partnersv1.GetPartnerCompanyRequest) (*partnersv1.PartnerCompany, error) {
	c, err := s.app.GetClient(ctx, req.GetCompanyId(), req.GetPartnerCompanyId())
	if err != nil {
		return nil, err
	}
	return clientPB(c), nil
}

// UpdatePartnerCompanyNote implements partnersv1.PartnersServiceServer.
func (s *Server) UpdatePartnerCompanyNote(ctx context.Context, req *partnersv1.UpdatePartnerCompanyNoteRequest) (*emptypb.Empty, error) {
	if err := s.app.SetNote(ctx, req.GetCompanyId(), req.GetPartnerCompanyId(), req.GetNote()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// UpdatePartnerCompany implements partnersv1.PartnersServiceServer.
func (s *Server) UpdatePartnerCompany(ctx context.Context, req *partnersv1.UpdatePartnerCompanyRequest) (*partnersv1.PartnerCompany, error) {
	c, err := s.app.SetPaymentsLocked(ctx, req.GetCompanyId(), req.GetPartnerCompanyId(), req.GetPaymentsLocked())
	if err != nil {
		return nil, err
	}
	return clientPB(c), nil
}

// CreateClient implements partnersv1.PartnersServiceServer.
func (s *Server) CreateClient(ctx context.Context, req *partnersv1.CreateClientRequest) (*identityv1.Company, error) {
	return s.app.CreateClient(ctx, app.NewClient{
		PartnerID: req.GetCompanyId(), Name: req.GetName(), Email: strings.TrimSpace(req.GetEmail()),
		CompanyName: req.GetCompanyName(), Phone: req.GetPhone(),
	})
}

func clientSubscriptionPB(cs app.ClientSubscription) *partnersv1.ClientSubscription {
	sub := cs.Subscription
	out := &partnersv1.ClientSubscription{
		Id: sub.GetId(), SubscriptionType: sub.GetSubscriptionType(), SubscriptionPlan: sub.GetSubscriptionPlan(),
		CurrentSize: sub.GetCurrentSize(), MaxSize: sub.GetMaxSize(), TestUntil: sub.GetTestUntil(),
		PaidUntil: sub.GetPaidUntil(), Advance: sub.GetAdvance(),
		Connections: make([]*partnersv1.ClientConnection, 0, len(cs.Connections)),
	}
	for _, c := range cs.Connections {
		out.Connections = append(out.Connections, &partnersv1.ClientConnection{Id: c.ID, Type: c.Type, Name: c.Name, Phone: c.Phone})
	}
	return out
}

// ListClientSubscriptions implements partnersv1.PartnersServiceServer.
func (s *Server) ListClientSubscriptions(ctx context.Context, req *partnersv1.ListClientSubscriptionsRequest) (*partnersv1.ListClientSubscriptionsResponse, error) {
	subs, err := s.app.ClientSubscriptions(ctx, req.GetCompanyId(), req.GetPartnerCompanyId())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListClientSubscriptionsResponse{Subscriptions: make([]*partnersv1.ClientSubscription, 0, len(subs))}
	for _, cs := range subs {
		out.Subscriptions = append(out.Subscriptions, clientSubscriptionPB(cs))
	}
	return out, nil
}

// ChangeClientSize implements partnersv1.PartnersServiceServer.
func (s *Server) ChangeClientSize(ctx context.Context, req *partnersv1.ChangeClientSizeRequest) (*billingv1.ChangeResult, error) {
	return s.app.ChangeSize(ctx, req.GetCompanyId(), &billingv1.ChangeSizeRequest{
		CompanyId: req.GetPartnerCompanyId(), SubscriptionId: req.GetSubscriptionId(), NewMaxSize: req.NewMaxSize,
		TargetSubscriptionId: req.TargetSubscriptionId, Preview: req.Preview,
	})
}

// ChangeClientPlan implements partnersv1.PartnersServiceServer.
func (s *Server) ChangeClientPlan(ctx context.Context, req *partnersv1.ChangeClientPlanRequest) (*billingv1.ChangeResult, error) {
	return s.app.ChangePlan(ctx, req.GetCompanyId(), &billingv1.ChangePlanRequest{
		CompanyId: req.GetPartnerCompanyId(), SubscriptionId: req.GetSubscriptionId(),
		NewSubscriptionPlan: req.NewSubscriptionPlan, Preview: req.Preview,
	})
}

// GrantClientAdvance implements partnersv1.PartnersServiceServer.
func (s *Server) GrantClientAdvance(ctx context.Context, req *partnersv1.GrantClientAdvanceRequest) (*partnersv1.ClientSubscription, error) {
	cs, err := s.app.GrantAdvance(ctx, req.GetCompanyId(), &billingv1.GrantAdvanceRequest{
		CompanyId: req.GetPartnerCompanyId(), SubscriptionId: req.GetSubscriptionId(),
	})
	if err != nil {
		return nil, err
	}
	return clientSubscriptionPB(cs), nil
}

// ListClientRequisites implements partnersv1.PartnersServiceServer.
func (s *Server) ListClientRequisites(ctx context.Context, req *partnersv1.ListClientRequisitesRequest) (*partnersv1.ListClientRequisitesResponse, error) {
	list, err := s.app.ClientRequisites(ctx, req.GetCompanyId(), req.GetPartnerCompanyId())
	if err != nil {
		return nil, err
	}
	return &partnersv1.ListClientRequisitesResponse{Requisites: list}, nil
}

func requisitePB(r domain.Requisite) *partnersv1.PartnerRequisite {
	return &partnersv1.PartnerRequisite{
		Id: r.ID, Type: r.Type, Tin: r.TIN, Kpp: r.KPP, Name: r.Name, Default: r.Default,
		Bic: r.BIC, CurrentAccount: r.CurrentAccount, ApprovalStatus: "APPROVED",
	}
}

// CreatePartnerRequisite implements partnersv1.PartnersServiceServer.
func (s *Server) CreatePartnerRequisite(ctx context.Context, req *partnersv1.CreatePartnerRequisiteRequest) (*partnersv1.PartnerRequisite, error) {
	r, err := s.app.CreateRequisite(ctx, domain.Requisite{
		PartnerID: req.GetCompanyId(), Type: req.GetType(), TIN: req.GetTin(), KPP: req.Kpp, Name: req.GetName(),
		Default: req.GetDefault(), BIC: req.Bic, CurrentAccount: req.CurrentAccount,
	})
	if err != nil {
		return nil, err
	}
	return requisitePB(r), nil
}

// ListPartnerRequisites implements partnersv1.PartnersServiceServer.
func (s *Server) ListPartnerRequisites(ctx context.Context, req *partnersv1.ListPartnerRequisitesRequest) (*partnersv1.ListPartnerRequisitesResponse, error) {
	list, err := s.app.Requisites(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListPartnerRequisitesResponse{Requisites: make([]*partnersv1.PartnerRequisite, 0, len(list))}
	for _, r := range list {
		out.Requisites = append(out.Requisites, requisitePB(r))
	}
	return out, nil
}

func percent(d *apiv1.Decimal, field string) (*app.Percent, error) {
	if d == nil {
		return nil, nil
	}
	v, err := decimal.NewFromString(d.GetValue())
	if err != nil {
		return nil, apierr.Field(apierr.Body(field), "float_parsing", "Input should be a valid number")
	}
	return &app.Percent{Decimal: v}, nil
}

// UpdatePartner implements partnersv1.PartnersOperatorServiceServer.
func (s *Server) UpdatePartner(ctx context.Context, req *partnersv1.UpdatePartnerRequest) (*partnersv1.PartnerSettings, error) {
	var u app.SettingsUpdate
	var err error
	if u.Partner, err = percent(req.GetPartnerCommissionPercent(), "partner_commission_percent"); err != nil {
		return nil, err
	}
	if u.Referral, err = percent(req.GetReferralCommissionPercent(), "referral_commission_percent"); err != nil {
		return nil, err
	}
	if u.WabaDialogs, err = percent(req.GetWabaDialogsCommissionPercent(), "waba_dialogs_commission_percent"); err != nil {
		return nil, err
	}
	if v := req.GetClientsPerDay(); v != nil {
		switch k := v.GetKind().(type) {
		case *structpb.Value_NullValue:
			u.ClearClientsPerDay = true
		case *structpb.Value_NumberValue:
			if k.NumberValue != math.Trunc(k.NumberValue) || k.NumberValue < 0 || k.NumberValue > 100000 {
				return nil, apierr.Field(apierr.Body("clients_per_day"), "value_error",
					"Value error, clients_per_day is an integer from 0 to 100000 or null")
			}
			n := int32(k.NumberValue)
			u.ClientsPerDay = &n
		default:
			return nil, apierr.Field(apierr.Body("clients_per_day"), "int_type", "Input should be a valid integer")
		}
	}
	st, err := s.app.UpdateSettings(ctx, req.GetCompanyId(), u)
	if err != nil {
		return nil, err
	}
	return &partnersv1.PartnerSettings{CompanyId: st.CompanyID, Commissions: commissionsPB(st.Commissions), ClientsPerDay: st.ClientsPerDay}, nil
}

// ListMailbox implements partnersv1.PartnersSandboxServiceServer.
func (s *Server) ListMailbox(ctx context.Context, req *partnersv1.ListMailboxRequest) (*partnersv1.ListMailboxResponse, error) {
	mails, err := s.app.Mailbox(ctx, req.GetTo())
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListMailboxResponse{Mails: make([]*partnersv1.SentMail, 0, len(mails))}
	for _, m := range mails {
		out.Mails = append(out.Mails, &partnersv1.SentMail{
			Id: m.ID, From: m.From, To: m.To, Subject: m.Subject, Text: m.Text, SentAt: timestamppb.New(m.SentAt),
		})
	}
	return out, nil
}

// ListPayments implements partnersv1.PartnersServiceServer.
func (s *Server) ListPayments(ctx context.Context, req *partnersv1.ListPaymentsRequest) (*partnersv1.ListPaymentsResponse, error) {
	f := app.PaymentsFilter{ClientID: req.PartnerCompanyId, ClientType: req.PartnerCompanyType, Limit: 100, Offset: req.GetOffset()}
	if req.Limit != nil {
		f.Limit = req.GetLimit()
	}
	list, count, err := s.app.Payments(ctx, req.GetCompanyId(), f)
	if err != nil {
		return nil, err
	}
	out := &partnersv1.ListPaymentsResponse{Count: count, Payments: make([]*partnersv1.Payment, 0, len(list))}
	for _, p := range list {
		out.Payments = append(out.Payments, paymentPB(p))
	}
	return out, nil
}

func paymentPB(p app.Payment) *partnersv1.Payment {
	inv := p.Invoice
	return &partnersv1.Payment{
		Id: inv.Id, Preview: inv.GetPreview(), Status: inv.Status, Lifetime: inv.GetLifetime(), Summary: inv.GetSummary(),
		Amount: inv.GetAmount(), Currency: inv.GetCurrency(), PaymentUrl: inv.PaymentUrl, PreviewUrl: inv.PreviewUrl,
		ActUrl: inv.ActUrl, Receipt: inv.GetReceipt(), CreatedAt: inv.GetCreatedAt(),
		CompanyId: p.CompanyID, CompanyName: p.CompanyName, ClientAmount: p.ClientAmount, Payer: p.Payer,
	}
}

// CreatePartnerInvoice implements partnersv1.PartnersServiceServer.
func (s *Server) CreatePartnerInvoice(ctx context.Context, req *partnersv1.CreatePartnerInvoiceRequest) (*partnersv1.Payment, error) {
	p, err := s.app.CreatePartnerInvoice(ctx, app.PartnerInvoiceRequest{
		PartnerID: req.GetCompanyId(),
		Invoice: &billingv1.CreateInvoiceRequest{
			CompanyId: req.GetPartnerCompanyId(), Preview: req.Preview, Items: req.GetItems(), Consents: req.GetConsents(),
			PaymentMethod: req.PaymentMethod, CardProvider: req.CardProvider, PeriodMonths: req.PeriodMonths,
			PromoCode: req.PromoCode, CompanyRequisiteId: req.CompanyRequisiteId,
		},
		PartnerRequisiteID: req.PartnerRequisiteId,
		UsePartnerBalance:  req.GetUsePartnerBalance(),
		PartnerEmail:       strings.TrimSpace(req.GetPartnerEmail()),
	})
	if err != nil {
		return nil, err
	}
	return paymentPB(p), nil
}
