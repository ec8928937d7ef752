package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/billing/internal/domain"
)

// EventsTopic is the outbox topic of billing's events: every status an
// invoice takes, for the partner programme.
const EventsTopic = "partners"

// EventInvoiceStatus is the event of an invoice taking a status.
const EventInvoiceStatus = "invoices.status_changed"

// Tx is one database transaction of the repository: the writes of a
// payment, an expiry or a change commit together with their events.
type Tx interface {
	// LockInvoice reads the invoice FOR UPDATE; companyID nil: any company
	// (the operator, the provider). domain.ErrNotFound when absent.
	LockInvoice(ctx context.Context, companyID *int64, id int64) (domain.Invoice, error)
	// InsertInvoice stores a new invoice, created at inv.CreatedAt (the
	// database's now when zero) with lifetime domain.InvoiceLifetime later,
	// and answers it as stored.
	InsertInvoice(ctx context.Context, inv domain.Invoice) (domain.Invoice, error)
	SetPaymentURL(ctx context.Context, id int64, url string) error
	// SetInvoiceStatus moves a new invoice to status and answers it.
	SetInvoiceStatus(ctx context.Context, id int64, status string) (domain.Invoice, error)
	// LockSubscriptions reads the company's subscriptions of ids FOR
	// UPDATE, in id order; unknown ids are left out.
	LockSubscriptions(ctx context.Context, companyID int64, ids []int64) (map[int64]domain.Subscription, error)
	SaveSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error)
	InsertSubscription(ctx context.Context, s domain.Subscription) (domain.Subscription, error)
	AddWabaDialogs(ctx context.Context, companyID int64, count int32) error
	// RecordProviderPayment stores a provider's notification once per
	// invoice and provider; false when one was stored before.
	RecordProviderPayment(ctx context.Context, p ProviderPayment) (bool, error)
	// Event writes an outbox event of EventsTopic.
	Event(ctx context.Context, companyID int64, eventType string, payload any) error
}

// ProviderPayment is a payment provider's notification about an invoice.
type ProviderPayment struct {
	InvoiceID int64
	Provider  string
	Amount    decimal.Decimal
	// Applied: the invoice was new and is now paid by it.
	Applied bool
	Fields  map[string]string
}

// CompanySettings are the company's billing settings, which identity owns.
type CompanySettings interface {
	BillingSettings(ctx context.Context, companyID int64) (Settings, error)
	UpdateBillingSettings(ctx context.Context, companyID int64, currency *string, locked *bool) (Settings, error)
}

// Settings of a company's payments.
type Settings struct {
	PaymentCurrency string
	PaymentsLocked  bool
}

// Promos knows the promo codes (partners own them).
type Promos interface {
	// Valid reports whether code is a partner's promo code (any case).
	Valid(ctx context.Context, code string) (bool, error)
}

// Rates gives the roubles-per-dollar rate a company's KEEPZ invoices get.
type Rates interface {
	// USD answers the rate and the date it was set for (YYYY-MM-DD);
	// ErrNoRate when it cannot be had now.
	USD(ctx context.Context, companyID int64) (decimal.Decimal, string, error)
}

// ErrNoRate: the conversion rate is not available.
var ErrNoRate = errors.New("conversion rate unavailable")

// Payments makes the link where a stored invoice is paid.
type Payments interface {
	// PaymentURL answers the link for a card invoice; ok false when the
	// method has no link (a provider with no adapter here).
	PaymentURL(inv domain.Invoice) (url string, ok bool, err error)
	// Ready reports, before anything is stored, whether an invoice of this
	// method and provider can be paid here; false is 18003.
	Ready(method, provider string) bool
}

// InvoiceRequest is POST /subscriptions/invoices/.
type InvoiceRequest struct {
	CompanyID     int64
	Preview       bool
	Items         []ItemRequest
	OfferAccepted bool
	PaymentMethod string
	// CardProvider is "" when absent.
	CardProvider string
	PeriodMonths *int32
	PromoCode    *string
	RequisiteID  *int64
}

// ItemRequest is one requested item; nil fields were absent.
type ItemRequest struct {
	Kind    string
	ID      *int64
	NewPlan *domain.Plan
	NewSize *int32
	Count   *int32
}

func missing(loc ...any) error {
	return apierr.Field(apierr.Body(loc...), "missing", "Field required")
}

func valueError(loc []any, format string, args ...any) error {
	return apierr.Field(loc, "value_error", "Value error, "+format, args...)
}

// checkRequest applies the rules a request breaks by itself (422), in the
// order of its fields.
func (s *Service) checkRequest(ctx context.Context, r InvoiceRequest) error {
	seenSub := map[int64]bool{}
	dialogs := false
	for i, it := range r.Items {
		switch it.Kind {
		case domain.ItemSubscription:
			if it.ID == nil {
				return missing("items", i, "id")
			}
			if it.NewPlan == nil {
				return missing("items", i, "new_subscription_plan")
			}
			if it.NewSize == nil {
				return missing("items", i, "new_size")
			}
			if *it.NewPlan == domain.PlanAdvanced {
				return valueError(apierr.Body("items", i, "new_subscription_plan"), "plan ADVANCED cannot be invoiced any more")
			}
			if *it.NewPlan == domain.PlanStart && *it.NewSize != 1 {
				return valueError(apierr.Body("items", i, "new_size"), "plan START allows new_size 1 only, not %d", *it.NewSize)
			}
			if seenSub[*it.ID] {
				return valueError(apierr.Body("items", i), "subscription %d is listed twice", *it.ID)
			}
			seenSub[*it.ID] = true
		case domain.ItemWabaDialogs:
			if it.Count == nil {
				return missing("items", i, "count")
			}
			if dialogs {
				return valueError(apierr.Body("items", i), "WABA_DIALOGS is listed twice")
			}
			dialogs = true
		}
	}
	if !r.Preview && !r.OfferAccepted {
		return valueError(apierr.Body("consents"), "the offer must be accepted (offer_accepted true) to create an invoice")
	}
	switch {
	case r.PaymentMethod == domain.MethodCardOther && r.CardProvider == "":
		return missing("card_provider")
	case r.PaymentMethod != domain.MethodCardOther && r.CardProvider != "":
		return valueError(apierr.Body("card_provider"), "card_provider is allowed only with payment_method CARD_OTHER")
	}
	if r.PeriodMonths != nil {
		if _, ok := domain.PeriodDiscount(*r.PeriodMonths); !ok {
			return valueError(apierr.Body("period_months"), "period_months must be 1, 3, 6 or 12, not %d", *r.PeriodMonths)
		}
	}
	if r.PromoCode != nil {
		ok, err := s.promos.Valid(ctx, *r.PromoCode)
		if err != nil {
			return err
		}
		if !ok {
			return valueError(apierr.Body("promo_code"), "unknown promo code %q", *r.PromoCode)
		}
	}
	switch {
	case r.PaymentMethod == domain.MethodBankTransfer && r.RequisiteID == nil:
		return missing("company_requisite_id")
	case r.PaymentMethod != domain.MethodBankTransfer && r.RequisiteID != nil:
		return valueError(apierr.Body("company_requisite_id"), "company_requisite_id is allowed only with payment_method BANK_TRANSFER")
	}
	return nil
}

// CreateInvoice computes an invoice and, unless it is a preview, stores it.
// Every check and every amount is the same for both, so a preview shows
// exactly what the real call would store.
func (s *Service) CreateInvoice(ctx context.Context, r InvoiceRequest) (domain.Invoice, error) {
	if err := s.checkRequest(ctx, r); err != nil {
		return domain.Invoice{}, err
	}
	inv, err := s.quote(ctx, r)
	if err != nil || r.Preview {
		return inv, err
	}
	// Created by the service's clock, the one expiry and payments compare
	// the lifetime with.
	inv.CreatedAt = s.now()
	var stored domain.Invoice
	var paidNow bool
	err = s.repo.InTx(ctx, func(tx Tx) error {
		stored, err = tx.InsertInvoice(ctx, inv)
		if err != nil {
			return err
		}
		if err := tx.Event(ctx, stored.CompanyID, EventInvoiceStatus, statusEvent(stored, "", s.now())); err != nil {
			return err
		}
		if stored.Amount.IsZero() {
			// Nothing to pay: paid as soon as stored.
			paidNow = true
			stored, err = s.applyPaid(ctx, tx, stored)
			return err
		}
		url, ok, err := s.payments.PaymentURL(stored)
		if err != nil || !ok {
			return err
		}
		stored.PaymentURL = &url
		return tx.SetPaymentURL(ctx, stored.ID, url)
	})
	if err != nil {
		return domain.Invoice{}, err
	}
	if paidNow {
		s.announce(ctx, stored.CompanyID)
	}
	return stored, nil
}

// quote checks what needs the stored state (in the documented order: plan
// rules 422, 22000, 22020, 22019, 22018, 18003) and prices the invoice.
func (s *Service) quote(ctx context.Context, r InvoiceRequest) (domain.Invoice, error) {
	var ids []int64
	for _, it := range r.Items {
		if it.Kind == domain.ItemSubscription {
			ids = append(ids, *it.ID)
		}
	}
	subs := map[int64]domain.Subscription{}
	if len(ids) > 0 {
		list, err := s.repo.Subscriptions(ctx, r.CompanyID, ids)
		if err != nil {
			return domain.Invoice{}, err
		}
		for _, sub := range list {
			subs[sub.ID] = sub
		}
		// The plan rules are request rules (422), which come before 22000
		// (billing.md): checked for every item whose subscription is known.
		for i, it := range r.Items {
			if it.Kind != domain.ItemSubscription {
				continue
			}
			sub, ok := subs[*it.ID]
			if !ok {
				continue
			}
			if err := domain.CheckPlanFor(*it.NewPlan, sub.Type, *it.NewSize); err != nil {
				return domain.Invoice{}, planError(err, apierr.Body("items", i, "new_subscription_plan"), *it.NewPlan, sub.Type)
			}
		}
		for _, id := range ids {
			if _, ok := subs[id]; !ok {
				return domain.Invoice{}, apierr.SubscriptionNotFound.E()
			}
		}
	}
	var req *domain.Requisite
	if r.RequisiteID != nil {
		q, err := s.repo.Requisite(ctx, r.CompanyID, *r.RequisiteID)
		if err != nil {
			return domain.Invoice{}, notFound(err, apierr.RequisiteNotFound)
		}
		req = &q
	}
	if len(ids) > 0 {
		members, err := s.conns.Membership(ctx, r.CompanyID)
		if err != nil {
			return domain.Invoice{}, err
		}
		for _, it := range r.Items {
			if it.Kind == domain.ItemSubscription && int(*it.NewSize) < len(members[*it.ID]) {
				return domain.Invoice{}, apierr.SubscriptionSizeBelowCurrent.Msg(
					"new_size %d is below the %d connections subscription %d holds", *it.NewSize, len(members[*it.ID]), *it.ID)
			}
		}
	}
	settings, err := s.settings.BillingSettings(ctx, r.CompanyID)
	if err != nil {
		return domain.Invoice{}, err
	}
	if settings.PaymentsLocked {
		return domain.Invoice{}, apierr.SubscriptionPaymentsLocked.E()
	}
	if settings.PaymentCurrency != domain.Currency {
		return domain.Invoice{}, apierr.InvoiceProviderError.Msg("the company pays in %s: invoices here are in roubles", settings.PaymentCurrency)
	}
	if !s.payments.Ready(r.PaymentMethod, r.CardProvider) {
		return domain.Invoice{}, apierr.InvoiceProviderError.Msg("payment provider for %s is not configured", describeMethod(r.PaymentMethod, r.CardProvider))
	}
	var charge *domain.Charge
	if r.CardProvider == domain.ProviderKeepz {
		if charge, err = s.keepzCharge(ctx, r.CompanyID); err != nil {
			return domain.Invoice{}, err
		}
	}

	now := s.now()
	months := int32(1)
	if r.PeriodMonths != nil {
		months = *r.PeriodMonths
	}
	shared := domain.Discounts{Promo: decimal.Zero, Partner: decimal.Zero}
	if r.PromoCode != nil {
		shared.Promo = decimal.NewFromInt(domain.PromoDiscountPercent)
	}
	inv := domain.Invoice{
		CompanyID:              r.CompanyID,
		PaymentMethod:          r.PaymentMethod,
		CardProvider:           r.CardProvider,
		PeriodMonths:           months,
		PromoCode:              r.PromoCode,
		PartnerDiscountPercent: decimal.Zero,
		Requisite:              req,
		Receipt:                []domain.ReceiptLine{},
	}
	for _, it := range r.Items {
		switch it.Kind {
		case domain.ItemSubscription:
			sub := subs[*it.ID]
			order := domain.SubscriptionOrder{Sub: sub, NewPlan: *it.NewPlan, NewSize: *it.NewSize}
			q := domain.QuoteSubscription(s.cfg.Prices, order, months, shared, now)
			inv.Items = append(inv.Items, domain.InvoiceItem{
				Kind: domain.ItemSubscription, SubscriptionID: sub.ID, SubscriptionType: sub.Type,
				OldSize: sub.MaxSize, NewSize: *it.NewSize, OldPlan: sub.Plan, NewPlan: *it.NewPlan,
				OldPaidUntil: sub.PaidUntil, TopUp: q.TopUp, Upgrade: q.Upgrade,
			})
			inv.Receipt = append(inv.Receipt, domain.SubscriptionReceipt(order, months, q)...)
		case domain.ItemWabaDialogs:
			a := domain.QuoteDialogs(s.cfg.Prices, *it.Count)
			inv.Items = append(inv.Items, domain.InvoiceItem{
				Kind: domain.ItemWabaDialogs, Count: *it.Count, Price: s.cfg.Prices.WabaDialog, TopUp: a,
			})
			inv.Receipt = append(inv.Receipt, domain.DialogsReceipt(s.cfg.Prices, *it.Count, a)...)
		}
	}
	inv.Amount = inv.Sum()
	if charge != nil {
		charge.Amount = inv.Amount.DivRound(charge.Rate, 2)
		inv.Charge = charge
	}
	return inv, nil
}

// keepzCharge checks that the company has a keepz terminal and a rate.
func (s *Service) keepzCharge(ctx context.Context, companyID int64) (*domain.Charge, error) {
	has, err := s.conns.HasConnection(ctx, companyID, "keepz")
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, apierr.InvoiceProviderError.Msg("the KEEPZ terminal is not connected: the company has no keepz connection")
	}
	rate, date, err := s.rates.USD(ctx, companyID)
	if errors.Is(err, ErrNoRate) {
		return nil, apierr.InvoiceProviderError.Msg("the dollar rate cannot be obtained now")
	}
	if err != nil {
		return nil, err
	}
	return &domain.Charge{Currency: domain.ChargeCurrency, Rate: rate.Round(4), RateDate: date}, nil
}

func describeMethod(method, provider string) string {
	if provider != "" {
		return method + " " + provider
	}
	return method
}

// planError turns a broken plan rule into its 422.
func planError(err error, loc []any, plan domain.Plan, typ domain.SubscriptionType) error {
	switch {
	case errors.Is(err, domain.ErrPlanNotInvoiceable):
		return valueError(loc, "plan ADVANCED cannot be chosen any more")
	case errors.Is(err, domain.ErrFreeNotBot):
		return valueError(loc, "plan FREE is only for CONNECTION_TELEGRAM_BOT and CONNECTION_MAX_BOT, not %s", typ)
	case errors.Is(err, domain.ErrStartSize):
		return valueError(loc, "plan START allows one connection only")
	}
	return fmt.Errorf("plan %s: %w", plan, err)
}

// ListInvoices answers the company's stored invoices, newest first.
func (s *Service) ListInvoices(ctx context.Context, companyID int64, limit, offset int32) ([]domain.Invoice, int64, error) {
	return s.repo.Invoices(ctx, []int64{companyID}, limit, offset)
}

// CompaniesInvoices answers the stored invoices of several companies,
// newest first (a partner's view of its clients' payments).
func (s *Service) CompaniesInvoices(ctx context.Context, companyIDs []int64, limit, offset int32) ([]domain.Invoice, int64, error) {
	if len(companyIDs) == 0 {
		return []domain.Invoice{}, 0, nil
	}
	return s.repo.Invoices(ctx, companyIDs, limit, offset)
}

// GetInvoice answers one of the company's invoices.
func (s *Service) GetInvoice(ctx context.Context, companyID, id int64) (domain.Invoice, error) {
	inv, err := s.repo.Invoice(ctx, companyID, id)
	return inv, notFound(err, apierr.InvoiceNotFound)
}

// CreateRequisite stores the company's requisites.
func (s *Service) CreateRequisite(ctx context.Context, q domain.Requisite) (domain.Requisite, error) {
	if len(q.TIN) == 10 && q.KPP == nil {
		return q, missing("kpp")
	}
	return s.repo.CreateRequisite(ctx, q)
}

// Requisites answers the company's requisites, oldest first.
func (s *Service) Requisites(ctx context.Context, companyID int64) ([]domain.Requisite, error) {
	return s.repo.Requisites(ctx, companyID)
}

// statusEvent is the outbox payload of an invoice taking its status: what
// the partner programme needs to reward, hold and notify. Each item's
// amount_after_percent_discounts is its reward base (partners.md "Rewards,
// balance"): the amount after the percent discounts, with any part a
// partner's balance pays still counted in it.
func statusEvent(inv domain.Invoice, previous string, at time.Time) map[string]any {
	items := make([]map[string]any, 0, len(inv.Items))
	for _, it := range inv.Items {
		item := map[string]any{"type": it.Kind, "amount": it.Total().String(),
			"amount_after_percent_discounts": afterPercentDiscounts(it).String()}
		if it.Kind == domain.ItemSubscription {
			item["subscription_id"] = it.SubscriptionID
			item["subscription_type"] = it.SubscriptionType
			item["period_months"] = inv.PeriodMonths
		} else {
			item["count"] = it.Count
		}
		items = append(items, item)
	}
	var prev any
	if previous != "" {
		prev = previous
	}
	return map[string]any{
		"invoice_id":      inv.ID,
		"company_id":      inv.CompanyID,
		"status":          inv.Status,
		"previous_status": prev,
		"amount":          inv.Amount.String(),
		// currency, payer and client_amount are what a partner's
		// payment_status notification reports (partners.md): a company's
		// own invoice is paid by it, its client_amount the amount.
		"currency":       domain.Currency,
		"payer":          "client",
		"client_amount":  inv.Amount.String(),
		"payment_method": inv.PaymentMethod,
		"items":          items,
		"at":             at.Format(time.RFC3339Nano),
	}
}

// sortedSubscriptionIDs are the invoice's subscriptions in lock order.
func sortedSubscriptionIDs(inv domain.Invoice) []int64 {
	var ids []int64
	for _, it := range inv.Items {
		if it.Kind == domain.ItemSubscription {
			ids = append(ids, it.SubscriptionID)
		}
	}
	slices.Sort(ids)
	return ids
}

// afterPercentDiscounts is the item's amount after its percent discounts
// only: each part's undiscounted value (amount + discount, whatever took
// it off) discounted again by its percents, which ignores the flat part a
// partner's balance pays.
func afterPercentDiscounts(it domain.InvoiceItem) decimal.Decimal {
	part := func(a domain.Amount) decimal.Decimal { return domain.Discounted(a.Undiscounted(), a.Discounts).Amount }
	if it.Kind == domain.ItemSubscription {
		return part(it.TopUp).Add(part(it.Upgrade))
	}
	return part(it.TopUp)
}
