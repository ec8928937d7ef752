package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/mail"
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
	// ClaimHold makes or finds the row of a partner's balance hold,
	// locked: the invoice stored for it before (0: none), or abandoned
	// when the partners service gave it up.
	ClaimHold(ctx context.Context, holdID string) (invoiceID int64, abandoned bool, err error)
	// SetHoldInvoice records the invoice stored for a claimed hold.
	SetHoldInvoice(ctx context.Context, holdID string, invoiceID int64) error
	// AbandonHold gives up a claimed hold that has no invoice.
	AbandonHold(ctx context.Context, holdID string) error
	// QueueMail queues m (pkg/mail's outbox) in the transaction.
	QueueMail(ctx context.Context, m mail.Mail) error
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
	// Partner is set when the client's partner makes the invoice.
	Partner *PartnerContext
}

// PartnerContext is what a partner's invoice for its client carries
// (billing.md "Partner invoices and cancellation").
type PartnerContext struct {
	PartnerID int64
	// Percent is the partner's partner_commission_percent: the partner
	// discount of SUBSCRIPTION amounts.
	Percent decimal.Decimal
	// Requisite is the partner's own, for BANK_TRANSFER; nil when absent.
	Requisite *domain.Requisite
	// Available is the partner balance the invoice may spend.
	Available decimal.Decimal
	// HoldID names the partners service's hold of Available: a stored
	// invoice that spends balance needs one.
	HoldID string
	// Email gets the stored invoice; "" when none.
	Email string
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
	if r.Partner != nil {
		return checkPartnerRequisites(r)
	}
	switch {
	case r.PaymentMethod == domain.MethodBankTransfer && r.RequisiteID == nil:
		return missing("company_requisite_id")
	case r.PaymentMethod != domain.MethodBankTransfer && r.RequisiteID != nil:
		return valueError(apierr.Body("company_requisite_id"), "company_requisite_id is allowed only with payment_method BANK_TRANSFER")
	}
	return nil
}

// checkPartnerRequisites: a partner's invoice pays by BANK_TRANSFER
// against the client's requisite or the partner's, one of them, and
// names neither with another method (partners.md "Partner invoices").
func checkPartnerRequisites(r InvoiceRequest) error {
	bank := r.PaymentMethod == domain.MethodBankTransfer
	switch {
	case !bank && r.RequisiteID != nil:
		return valueError(apierr.Body("company_requisite_id"), "company_requisite_id is allowed only with payment_method BANK_TRANSFER")
	case !bank && r.Partner.Requisite != nil:
		return valueError(apierr.Body("partner_requisite_id"), "partner_requisite_id is allowed only with payment_method BANK_TRANSFER")
	case bank && r.RequisiteID == nil && r.Partner.Requisite == nil:
		return valueError(apierr.Body("partner_requisite_id"), "payment_method BANK_TRANSFER needs partner_requisite_id or company_requisite_id")
	case bank && r.RequisiteID != nil && r.Partner.Requisite != nil:
		return valueError(apierr.Body("partner_requisite_id"), "give partner_requisite_id or company_requisite_id, not both")
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
	if p := r.Partner; p != nil && !r.Preview && p.Email != "" && !s.cfg.MailDeliverable {
		return domain.Invoice{}, apierr.ServiceUnavailable.Msg("mail cannot be sent, so the invoice cannot be mailed to partner_email")
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
		if hold := inv.Partner.HoldOf(); hold != "" {
			// The hold's row orders this store against the partners
			// service giving the hold up, and a retry of the same hold
			// finds the invoice stored the first time.
			prior, abandoned, err := tx.ClaimHold(ctx, hold)
			switch {
			case err != nil:
				return err
			case abandoned:
				// The partners service stopped waiting for this call and
				// gave the balance back: the partner may try again.
				return apierr.ServiceUnavailable.Msg("the partner balance could not be held in time, try again")
			case prior != 0:
				stored, err = tx.LockInvoice(ctx, &r.CompanyID, prior)
				return err
			}
		}
		stored, err = tx.InsertInvoice(ctx, inv)
		if err != nil {
			return err
		}
		if hold := inv.Partner.HoldOf(); hold != "" {
			if err := tx.SetHoldInvoice(ctx, hold, stored.ID); err != nil {
				return err
			}
		}
		if err := tx.Event(ctx, stored.CompanyID, EventInvoiceStatus, statusEvent(stored, "", s.now())); err != nil {
			return err
		}
		if stored.Amount.IsZero() {
			// Nothing to pay: paid as soon as stored.
			paidNow = true
			if stored, err = s.applyPaid(ctx, tx, stored); err != nil {
				return err
			}
		} else {
			url, ok, err := s.payments.PaymentURL(stored)
			if err != nil {
				return err
			}
			if ok {
				stored.PaymentURL = &url
				if err := tx.SetPaymentURL(ctx, stored.ID, url); err != nil {
					return err
				}
			}
		}
		if stored.Partner != nil && stored.Partner.Email != "" {
			// Queued with the invoice: mailed once it commits, never
			// for one that does not.
			return tx.QueueMail(ctx, invoiceMail(stored))
		}
		return nil
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
	if r.Partner != nil && r.Partner.Requisite != nil {
		req = r.Partner.Requisite
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
	switch {
	case r.Partner == nil && settings.PaymentsLocked:
		return domain.Invoice{}, apierr.SubscriptionPaymentsLocked.E()
	case r.Partner != nil && r.RequisiteID != nil && len(ids) > 0:
		// A partner pays its client's subscriptions against its own
		// requisite; the client's is for business dialogs alone. The
		// client's payments_locked does not stop its partner.
		return domain.Invoice{}, apierr.SubscriptionPaymentsLocked.Msg(
			"company_requisite_id is allowed only when every item is WABA_DIALOGS")
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
	if r.Partner != nil {
		shared.Partner = r.Partner.Percent
	}
	inv := domain.Invoice{
		CompanyID:              r.CompanyID,
		PaymentMethod:          r.PaymentMethod,
		CardProvider:           r.CardProvider,
		PeriodMonths:           months,
		PromoCode:              r.PromoCode,
		PartnerDiscountPercent: shared.Partner,
		Requisite:              req,
		Receipt:                []domain.ReceiptLine{},
	}
	// The receipt is written once the partner's balance has taken its
	// part: its lines add up to what is left to pay.
	orders := make([]domain.SubscriptionOrder, len(r.Items))
	for _, it := range r.Items {
		switch it.Kind {
		case domain.ItemSubscription:
			sub := subs[*it.ID]
			order := domain.SubscriptionOrder{Sub: sub, NewPlan: *it.NewPlan, NewSize: *it.NewSize}
			q := domain.QuoteSubscription(s.cfg.Prices, order, months, shared, now)
			orders[len(inv.Items)] = order
			inv.Items = append(inv.Items, domain.InvoiceItem{
				Kind: domain.ItemSubscription, SubscriptionID: sub.ID, SubscriptionType: sub.Type,
				OldSize: sub.MaxSize, NewSize: *it.NewSize, OldPlan: sub.Plan, NewPlan: *it.NewPlan,
				OldPaidUntil: sub.PaidUntil, TopUp: q.TopUp, Upgrade: q.Upgrade,
			})
		case domain.ItemWabaDialogs:
			a := domain.QuoteDialogs(s.cfg.Prices, *it.Count)
			inv.Items = append(inv.Items, domain.InvoiceItem{
				Kind: domain.ItemWabaDialogs, Count: *it.Count, Price: s.cfg.Prices.WabaDialog, TopUp: a,
			})
		}
	}
	if p := r.Partner; p != nil {
		part := &domain.PartnerPart{PartnerID: p.PartnerID, ClientAmount: inv.Sum(), Email: p.Email}
		part.BalanceUsed = inv.SpendBalance(p.Available)
		part.HoldID = p.HoldID
		inv.Partner = part
	}
	for i, it := range inv.Items {
		if it.Kind == domain.ItemSubscription {
			q := domain.SubscriptionQuote{TopUp: it.TopUp, Upgrade: it.Upgrade}
			inv.Receipt = append(inv.Receipt, domain.SubscriptionReceipt(orders[i], months, q)...)
		} else {
			inv.Receipt = append(inv.Receipt, domain.DialogsReceipt(s.cfg.Prices, it.Count, it.TopUp)...)
		}
	}
	inv.Amount = inv.Sum()
	if inv.Partner != nil && inv.Partner.BalanceUsed.IsPositive() && inv.Amount.IsZero() {
		// All paid by the partner's balance: no card, transfer or rate.
		inv.PaymentMethod, inv.CardProvider, inv.Requisite, charge = domain.MethodPartnerBalance, "", nil, nil
	}
	if charge != nil {
		charge.Amount = inv.Amount.DivRound(charge.Rate, 2)
		inv.Charge = charge
	}
	return inv, nil
}

// ResolveHold answers the invoice stored for a partner's balance hold, or
// found false when none was, giving the hold up so that none can be: the
// partners service asks this of a hold whose invoice it never heard of,
// and may then drop the hold knowing no invoice spends it.
func (s *Service) ResolveHold(ctx context.Context, holdID string) (inv domain.Invoice, found bool, err error) {
	err = s.repo.InTx(ctx, func(tx Tx) error {
		id, abandoned, err := tx.ClaimHold(ctx, holdID)
		switch {
		case err != nil:
			return err
		case id != 0:
			found = true
			inv, err = tx.LockInvoice(ctx, nil, id)
			return err
		case abandoned:
			return nil
		}
		return tx.AbandonHold(ctx, holdID)
	})
	return inv, found, err
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
	ev := map[string]any{
		"invoice_id":      inv.ID,
		"company_id":      inv.CompanyID,
		"status":          inv.Status,
		"previous_status": prev,
		"amount":          inv.Amount.String(),
		// currency, payer and client_amount are what a partner's
		// payment_status notification reports (partners.md): a company's
		// own invoice is paid by it, its client_amount the amount.
		"currency":       domain.Currency,
		"payer":          inv.Payer(),
		"client_amount":  inv.ClientAmount().String(),
		"payment_method": inv.PaymentMethod,
		"items":          items,
		"at":             at.Format(time.RFC3339Nano),
	}
	if p := inv.Partner; p != nil {
		// The partners service settles (new) or releases (expired,
		// cancelled) its hold of the balance from these.
		ev["partner_company_id"] = p.PartnerID
		ev["partner_balance_used"] = p.BalanceUsed.String()
		var hold any
		if p.HoldID != "" {
			hold = p.HoldID
		}
		ev["hold_id"] = hold
	}
	return ev
}

// invoiceMail is a stored partner invoice mailed to partner_email.
func invoiceMail(inv domain.Invoice) mail.Mail {
	url := "none"
	if inv.PaymentURL != nil {
		url = *inv.PaymentURL
	}
	text := fmt.Sprintf("Invoice %d\nStatus: %s\nAmount: %s %s\nClient amount: %s %s\nPayment URL: %s\n",
		inv.ID, inv.Status, inv.Amount.StringFixed(2), domain.Currency,
		inv.ClientAmount().StringFixed(2), domain.Currency, url)
	return mail.Mail{To: []string{inv.Partner.Email}, Subject: fmt.Sprintf("Invoice %d", inv.ID), Text: text}
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
