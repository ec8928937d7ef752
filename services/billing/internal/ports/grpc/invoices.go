package grpc

import (
	"context"
	"errors"
	"log/slog"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	"switchboard.dev/pkg/robokassa"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/app"
	"switchboard.dev/services/billing/internal/domain"
)

var methodPB = map[string]billingv1.PaymentMethod{
	domain.MethodCardRU:         billingv1.PaymentMethod_PAYMENT_METHOD_CARD_RU,
	domain.MethodCardOther:      billingv1.PaymentMethod_PAYMENT_METHOD_CARD_OTHER,
	domain.MethodBankTransfer:   billingv1.PaymentMethod_PAYMENT_METHOD_BANK_TRANSFER,
	domain.MethodPartnerBalance: billingv1.PaymentMethod_PAYMENT_METHOD_PARTNER_BALANCE,
}

var providerPB = map[string]billingv1.CardProvider{
	domain.ProviderRobokassa: billingv1.CardProvider_CARD_PROVIDER_ROBOKASSA,
	domain.ProviderKeepz:     billingv1.CardProvider_CARD_PROVIDER_KEEPZ,
}

var statusPB = map[string]billingv1.InvoiceStatus{
	domain.StatusNew:       billingv1.InvoiceStatus_INVOICE_STATUS_NEW,
	domain.StatusPaid:      billingv1.InvoiceStatus_INVOICE_STATUS_PAID,
	domain.StatusExpired:   billingv1.InvoiceStatus_INVOICE_STATUS_EXPIRED,
	domain.StatusCancelled: billingv1.InvoiceStatus_INVOICE_STATUS_CANCELLED,
}

func reverse[K comparable, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

var (
	methodFromPB   = reverse(methodPB)
	providerFromPB = reverse(providerPB)
)

func requisitePB(q *domain.Requisite) *billingv1.Requisite {
	if q == nil {
		return nil
	}
	return &billingv1.Requisite{Id: q.ID, Tin: q.TIN, Kpp: q.KPP, Name: q.Name, ApprovalStatus: "APPROVED"}
}

func amountPB(a domain.Amount) *billingv1.DiscountedAmount {
	return &billingv1.DiscountedAmount{
		Amount:   protoapi.Decimal(a.Amount),
		Discount: protoapi.Decimal(a.Discount),
		Discounts: &billingv1.Discounts{
			PeriodDiscountPercent:      protoapi.Decimal(a.Discounts.Period),
			QuantityDiscountPercent:    protoapi.Decimal(a.Discounts.Quantity),
			PromoDiscountPercent:       protoapi.Decimal(a.Discounts.Promo),
			PartnerDiscountPercent:     protoapi.Decimal(a.Discounts.Partner),
			TestPeriodDiscountPercent:  protoapi.Decimal(a.Discounts.TestPeriod),
			PartnerBalanceDiscountFlat: protoapi.Decimal(a.Discounts.PartnerBalanceFlat),
		},
	}
}

// InvoicePB is the public shape of an invoice or a preview (ID 0).
func InvoicePB(inv domain.Invoice) *billingv1.Invoice {
	sum := &billingv1.InvoiceSummary{
		PaymentMethod:          methodPB[inv.PaymentMethod],
		PeriodMonths:           inv.PeriodMonths,
		PromoCode:              inv.PromoCode,
		TotalDiscount:          protoapi.Decimal(inv.TotalDiscount()),
		PartnerDiscountPercent: protoapi.Decimal(inv.PartnerDiscountPercent),
		CompanyRequisite:       requisitePB(inv.Requisite),
	}
	if p, ok := providerPB[inv.CardProvider]; ok {
		sum.CardProvider = &p
	}
	if c := inv.Charge; c != nil {
		sum.ChargeCurrency = &c.Currency
		sum.ChargeAmount = protoapi.Decimal(c.Amount)
		sum.ConversionRate = protoapi.Decimal(c.Rate)
		sum.ConversionRateDate = &c.RateDate
	}
	for _, it := range inv.Items {
		var item billingv1.InvoiceSummaryItem
		if it.Kind == domain.ItemSubscription {
			item.Item = &billingv1.InvoiceSummaryItem_Subscription{Subscription: &billingv1.SubscriptionSummaryItem{
				Type:                billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_SUBSCRIPTION,
				SubscriptionId:      it.SubscriptionID,
				SubscriptionType:    string(it.SubscriptionType),
				OldSize:             it.OldSize,
				NewSize:             it.NewSize,
				OldSubscriptionPlan: planPB[it.OldPlan],
				NewSubscriptionPlan: planPB[it.NewPlan],
				OldPaidUntil:        timestamp(it.OldPaidUntil),
				TopUpAmount:         amountPB(it.TopUp),
				UpgradeAmount:       amountPB(it.Upgrade),
			}}
		} else {
			item.Item = &billingv1.InvoiceSummaryItem_WabaDialogs{WabaDialogs: &billingv1.WabaDialogsSummaryItem{
				Type:  billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_WABA_DIALOGS,
				Count: it.Count,
				Price: protoapi.Decimal(it.Price),
				TopUpAmount: &billingv1.DialogsAmount{
					Amount:    protoapi.Decimal(it.TopUp.Amount),
					Discount:  protoapi.Decimal(it.TopUp.Discount),
					Discounts: &billingv1.DialogsDiscounts{PartnerBalanceDiscountFlat: protoapi.Decimal(it.TopUp.Discounts.PartnerBalanceFlat)},
				},
			}}
		}
		sum.Items = append(sum.Items, &item)
	}
	receipt := &billingv1.Receipt{Items: make([]*billingv1.ReceiptItem, 0, len(inv.Receipt))}
	for _, l := range inv.Receipt {
		receipt.Items = append(receipt.Items, &billingv1.ReceiptItem{
			Name: l.Name, Quantity: l.Quantity, Price: protoapi.Decimal(l.Price), Vat: "none", TaxValue: protoapi.Decimal(decimal.Zero),
		})
	}
	out := &billingv1.Invoice{
		Preview:  inv.ID == 0,
		Summary:  sum,
		Amount:   protoapi.Decimal(inv.Amount),
		Currency: domain.Currency,
		Receipt:  receipt,
	}
	if inv.ID != 0 {
		out.Id = &inv.ID
		st := statusPB[inv.Status]
		out.Status = &st
		out.Lifetime = timestamppb.New(inv.Lifetime)
		out.CreatedAt = timestamppb.New(inv.CreatedAt)
		out.PaymentUrl = inv.PaymentURL
	}
	return out
}

// CreateRequisite implements billingv1.BillingServiceServer.
func (s *Server) CreateRequisite(ctx context.Context, req *billingv1.CreateRequisiteRequest) (*billingv1.Requisite, error) {
	q, err := s.app.CreateRequisite(ctx, domain.Requisite{CompanyID: req.GetCompanyId(), TIN: req.GetTin(), KPP: req.Kpp, Name: req.GetName()})
	if err != nil {
		return nil, err
	}
	return requisitePB(&q), nil
}

// ListRequisites implements billingv1.BillingServiceServer.
func (s *Server) ListRequisites(ctx context.Context, req *billingv1.ListRequisitesRequest) (*billingv1.ListRequisitesResponse, error) {
	list, err := s.app.Requisites(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	out := &billingv1.ListRequisitesResponse{Requisites: make([]*billingv1.Requisite, 0, len(list))}
	for i := range list {
		out.Requisites = append(out.Requisites, requisitePB(&list[i]))
	}
	return out, nil
}

// CreateInvoice implements billingv1.BillingServiceServer.
func (s *Server) CreateInvoice(ctx context.Context, req *billingv1.CreateInvoiceRequest) (*billingv1.Invoice, error) {
	inv, err := s.app.CreateInvoice(ctx, invoiceRequest(req))
	if err != nil {
		return nil, err
	}
	return InvoicePB(inv), nil
}

// invoiceRequest reads the public invoice request.
func invoiceRequest(req *billingv1.CreateInvoiceRequest) app.InvoiceRequest {
	r := app.InvoiceRequest{
		CompanyID:     req.GetCompanyId(),
		Preview:       req.Preview == nil || req.GetPreview(),
		OfferAccepted: req.GetConsents().GetOfferAccepted(),
		PaymentMethod: methodFromPB[req.GetPaymentMethod()],
		PeriodMonths:  req.PeriodMonths,
		PromoCode:     req.PromoCode,
		RequisiteID:   req.CompanyRequisiteId,
	}
	if req.CardProvider != nil {
		r.CardProvider = providerFromPB[req.GetCardProvider()]
	}
	for _, it := range req.GetItems() {
		item := app.ItemRequest{ID: it.Id, NewSize: it.NewSize, Count: it.Count}
		switch it.GetType() {
		case billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_SUBSCRIPTION:
			item.Kind = domain.ItemSubscription
		case billingv1.InvoiceItemType_INVOICE_ITEM_TYPE_WABA_DIALOGS:
			item.Kind = domain.ItemWabaDialogs
		}
		if it.NewSubscriptionPlan != nil {
			p := planFromPB[it.GetNewSubscriptionPlan()]
			item.NewPlan = &p
		}
		r.Items = append(r.Items, item)
	}
	return r
}

// ListInvoices implements billingv1.BillingServiceServer.
func (s *Server) ListInvoices(ctx context.Context, req *billingv1.ListInvoicesRequest) (*billingv1.ListInvoicesResponse, error) {
	limit := int32(20)
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	list, count, err := s.app.ListInvoices(ctx, req.GetCompanyId(), limit, req.GetOffset())
	if err != nil {
		return nil, err
	}
	out := &billingv1.ListInvoicesResponse{Count: count, Invoices: make([]*billingv1.Invoice, 0, len(list))}
	for _, inv := range list {
		out.Invoices = append(out.Invoices, InvoicePB(inv))
	}
	return out, nil
}

// GetInvoice implements billingv1.BillingServiceServer.
func (s *Server) GetInvoice(ctx context.Context, req *billingv1.GetInvoiceRequest) (*billingv1.Invoice, error) {
	inv, err := s.app.GetInvoice(ctx, req.GetCompanyId(), req.GetInvoiceId())
	if err != nil {
		return nil, err
	}
	return InvoicePB(inv), nil
}

func sidePB(sd *app.Side) *billingv1.ChangeSide {
	if sd == nil {
		return nil
	}
	return &billingv1.ChangeSide{
		Id: sd.ID, SubscriptionType: string(sd.Type), OldMaxSize: sd.OldMaxSize, NewMaxSize: sd.NewMaxSize,
		OldSubscriptionPlan: planPB[sd.OldPlan], NewSubscriptionPlan: planPB[sd.NewPlan],
		OldPaidUntil: timestamp(sd.OldPaid), NewPaidUntil: timestamp(sd.NewPaid),
	}
}

func changePB(r app.ChangeResult) *billingv1.ChangeResult {
	return &billingv1.ChangeResult{Source: sidePB(&r.Source), Target: sidePB(r.Target), Preview: r.Preview}
}

// ChangeSize implements billingv1.BillingServiceServer.
func (s *Server) ChangeSize(ctx context.Context, req *billingv1.ChangeSizeRequest) (*billingv1.ChangeResult, error) {
	r, err := s.app.ChangeSubscriptionSize(ctx, app.ChangeSize{
		CompanyID: req.GetCompanyId(), SubscriptionID: req.GetSubscriptionId(), NewMaxSize: req.GetNewMaxSize(),
		TargetID: req.TargetSubscriptionId, Preview: req.Preview == nil || req.GetPreview(),
	})
	if err != nil {
		return nil, err
	}
	return changePB(r), nil
}

// ChangePlan implements billingv1.BillingServiceServer.
func (s *Server) ChangePlan(ctx context.Context, req *billingv1.ChangePlanRequest) (*billingv1.ChangeResult, error) {
	r, err := s.app.ChangeSubscriptionPlan(ctx, app.ChangePlan{
		CompanyID: req.GetCompanyId(), SubscriptionID: req.GetSubscriptionId(),
		NewPlan: planFromPB[req.GetNewSubscriptionPlan()], Preview: req.Preview == nil || req.GetPreview(),
	})
	if err != nil {
		return nil, err
	}
	return changePB(r), nil
}

// GrantAdvance implements billingv1.BillingServiceServer.
func (s *Server) GrantAdvance(ctx context.Context, req *billingv1.GrantAdvanceRequest) (*billingv1.Subscription, error) {
	v, err := s.app.GrantAdvance(ctx, req.GetCompanyId(), req.GetSubscriptionId())
	if err != nil {
		return nil, err
	}
	return SubscriptionPB(v), nil
}

// CreateSubscription implements billingv1.BillingOperatorServiceServer.
func (s *Server) CreateSubscription(ctx context.Context, req *billingv1.CreateSubscriptionRequest) (*billingv1.Subscription, error) {
	c := app.CreateSubscription{
		CompanyID: req.GetCompanyId(), Type: req.GetSubscriptionType(),
		Plan: planFromPB[req.GetSubscriptionPlan()], MaxSize: req.GetMaxSize(),
	}
	var err error
	if c.PaidUntil, err = optionalTime(req.GetPaidUntil(), "paid_until"); err != nil {
		return nil, err
	}
	if c.TestUntil, err = optionalTime(req.GetTestUntil(), "test_until"); err != nil {
		return nil, err
	}
	v, err := s.app.AddSubscription(ctx, c)
	if err != nil {
		return nil, err
	}
	return SubscriptionPB(v), nil
}

func companyBillingPB(b app.CompanyBilling) *billingv1.CompanyBilling {
	return &billingv1.CompanyBilling{
		CompanyId: b.CompanyID, PaymentCurrency: b.PaymentCurrency,
		PaymentsLocked: b.PaymentsLocked, WabaDialogsBalance: b.WabaDialogsBalance,
	}
}

// GetCompanyBilling implements billingv1.BillingOperatorServiceServer.
func (s *Server) GetCompanyBilling(ctx context.Context, req *billingv1.GetCompanyBillingRequest) (*billingv1.CompanyBilling, error) {
	b, err := s.app.GetCompanyBilling(ctx, req.GetCompanyId())
	if err != nil {
		return nil, err
	}
	return companyBillingPB(b), nil
}

// UpdateCompanyBilling implements billingv1.BillingOperatorServiceServer.
func (s *Server) UpdateCompanyBilling(ctx context.Context, req *billingv1.UpdateCompanyBillingRequest) (*billingv1.CompanyBilling, error) {
	b, err := s.app.UpdateCompanyBilling(ctx, req.GetCompanyId(), req.PaymentCurrency, req.PaymentsLocked)
	if err != nil {
		return nil, err
	}
	return companyBillingPB(b), nil
}

// CancelInvoice implements billingv1.BillingOperatorServiceServer.
func (s *Server) CancelInvoice(ctx context.Context, req *billingv1.InvoiceActionRequest) (*billingv1.Invoice, error) {
	return invoiceOrError(s.app.CancelInvoice(ctx, req.GetInvoiceId()))
}

// PayInvoice implements billingv1.BillingSandboxServiceServer.
func (s *Server) PayInvoice(ctx context.Context, req *billingv1.InvoiceActionRequest) (*billingv1.Invoice, error) {
	return invoiceOrError(s.app.PayInvoice(ctx, req.GetInvoiceId()))
}

// ExpireInvoice implements billingv1.BillingSandboxServiceServer.
func (s *Server) ExpireInvoice(ctx context.Context, req *billingv1.InvoiceActionRequest) (*billingv1.Invoice, error) {
	return invoiceOrError(s.app.ExpireInvoice(ctx, req.GetInvoiceId()))
}

func invoiceOrError(inv domain.Invoice, err error) (*billingv1.Invoice, error) {
	if err != nil {
		return nil, err
	}
	return InvoicePB(inv), nil
}

// SetConversionRate implements billingv1.BillingSandboxServiceServer.
func (s *Server) SetConversionRate(ctx context.Context, req *billingv1.SetConversionRateRequest) (*billingv1.ConversionRate, error) {
	var rate *decimal.Decimal
	if req.GetRate() != nil {
		d, err := decimal.NewFromString(req.GetRate().GetValue())
		if err != nil {
			return nil, apierr.Field(apierr.Body("rate"), "float_parsing", "Input should be a valid number")
		}
		rate = &d
	}
	set, err := s.app.SetSandboxRate(ctx, req.GetConnectionId(), rate)
	if err != nil {
		return nil, err
	}
	out := &billingv1.ConversionRate{ConnectionId: req.GetConnectionId()}
	if set != nil {
		out.Rate = &apiv1.Decimal{Value: set.StringFixed(4)}
	}
	return out, nil
}

// ReceiveRobokassaResult implements billingv1.BillingProviderServiceServer:
// the signature is checked before any field is read; a valid
// notification is applied once and answered OK<InvId>.
func (s *Server) ReceiveRobokassaResult(ctx context.Context, req *billingv1.ReceiveRobokassaResultRequest) (*billingv1.ReceiveRobokassaResultResponse, error) {
	if s.robokassa == nil {
		return nil, apierr.NotFound.E()
	}
	values := make(map[string][]string, len(req.GetFields()))
	for k, v := range req.GetFields() {
		values[k] = []string{v}
	}
	res, err := s.robokassa.ParseResult(values)
	if err != nil {
		slog.WarnContext(ctx, "robokassa notification refused", slog.Any("error", err))
		return nil, apierr.Forbidden.Msg("notification refused: %v", err)
	}
	err = s.app.ApplyProviderPayment(ctx, app.ProviderNotice{
		Provider: domain.ProviderRobokassa, InvoiceID: res.InvoiceID, Amount: res.Amount, Fields: req.GetFields(),
	})
	if errors.Is(err, app.ErrAmountMismatch) {
		return nil, apierr.BadRequest.Msg("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return &billingv1.ReceiveRobokassaResultResponse{Answer: robokassa.Answer(res.InvoiceID)}, nil
}
