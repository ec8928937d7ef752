package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// Invoice kinds of items, methods, providers and statuses, spelled as the
// API spells them.
const (
	ItemSubscription = "SUBSCRIPTION"
	ItemWabaDialogs  = "WABA_DIALOGS"

	MethodCardRU         = "CARD_RU"
	MethodCardOther      = "CARD_OTHER"
	MethodBankTransfer   = "BANK_TRANSFER"
	MethodPartnerBalance = "PARTNER_BALANCE"

	ProviderRobokassa = "ROBOKASSA"
	ProviderKeepz     = "KEEPZ"

	StatusNew       = "new"
	StatusPaid      = "paid"
	StatusExpired   = "expired"
	StatusCancelled = "cancelled"

	// Currency of every invoice: the platform sells in roubles.
	Currency = "RUB"
	// ChargeCurrency is what a KEEPZ card is charged in.
	ChargeCurrency = "USD"
)

// InvoiceLifetime is how long a stored invoice may be paid.
const InvoiceLifetime = 72 * time.Hour

// Requisite is a company's bank details for transfers.
type Requisite struct {
	ID        int64   `json:"id"`
	CompanyID int64   `json:"-"`
	TIN       string  `json:"tin"`
	KPP       *string `json:"kpp"`
	Name      string  `json:"name"`
}

// InvoiceItem is one priced item: a subscription's period (with its plan or
// size change) or business dialogs. Kind says which fields mean something.
type InvoiceItem struct {
	Kind string `json:"kind"`

	// SUBSCRIPTION
	SubscriptionID   int64            `json:"subscription_id,omitempty"`
	SubscriptionType SubscriptionType `json:"subscription_type,omitempty"`
	OldSize          int32            `json:"old_size,omitempty"`
	NewSize          int32            `json:"new_size,omitempty"`
	OldPlan          Plan             `json:"old_plan,omitempty"`
	NewPlan          Plan             `json:"new_plan,omitempty"`
	OldPaidUntil     *time.Time       `json:"old_paid_until,omitempty"`
	Upgrade          Amount           `json:"upgrade"`

	// WABA_DIALOGS
	Count int32           `json:"count,omitempty"`
	Price decimal.Decimal `json:"price"`

	// Both: what the period (or the dialogs) cost.
	TopUp Amount `json:"top_up"`
}

// Total is what the item costs.
func (it InvoiceItem) Total() decimal.Decimal {
	if it.Kind == ItemSubscription {
		return it.TopUp.Amount.Add(it.Upgrade.Amount)
	}
	return it.TopUp.Amount
}

// Discount is the money the item's discounts took off.
func (it InvoiceItem) Discount() decimal.Decimal {
	if it.Kind == ItemSubscription {
		return it.TopUp.Discount.Add(it.Upgrade.Discount)
	}
	return it.TopUp.Discount
}

// Charge is a KEEPZ card's charge in dollars at the central bank's rate.
type Charge struct {
	Currency string          `json:"currency"`
	Amount   decimal.Decimal `json:"amount"`
	// Rate is roubles per dollar.
	Rate     decimal.Decimal `json:"rate"`
	RateDate string          `json:"rate_date"`
}

// Invoice is an invoice as computed (a preview) or stored.
type Invoice struct {
	// ID is 0 for a preview.
	ID            int64         `json:"-"`
	CompanyID     int64         `json:"-"`
	Status        string        `json:"-"`
	PaymentMethod string        `json:"payment_method"`
	CardProvider  string        `json:"card_provider,omitempty"`
	PeriodMonths  int32         `json:"period_months"`
	PromoCode     *string       `json:"promo_code"`
	Items         []InvoiceItem `json:"items"`
	// PartnerDiscountPercent is 0 on a company's own invoices.
	PartnerDiscountPercent decimal.Decimal `json:"partner_discount_percent"`
	Requisite              *Requisite      `json:"requisite"`
	Charge                 *Charge         `json:"charge"`
	Receipt                []ReceiptLine   `json:"receipt"`
	// Partner is set on a partner's invoice for its client; nil on a
	// company's own.
	Partner    *PartnerPart    `json:"partner,omitempty"`
	Amount     decimal.Decimal `json:"-"`
	PaymentURL *string         `json:"-"`
	Lifetime   time.Time       `json:"-"`
	CreatedAt  time.Time       `json:"-"`
}

// Payers of an invoice, as the partner's payments list says them.
const (
	PayerClient  = "client"
	PayerPartner = "partner"
)

// PartnerPart is what a partner's invoice for its client adds.
type PartnerPart struct {
	PartnerID int64 `json:"partner_company_id"`
	// ClientAmount is the amount after the percent discounts: what the
	// invoice comes to before the partner's balance pays part of it.
	ClientAmount decimal.Decimal `json:"client_amount"`
	// BalanceUsed is what the partner's balance pays (the items'
	// partner_balance_discount_flat).
	BalanceUsed decimal.Decimal `json:"partner_balance_used"`
	// HoldID is the partners service's hold of that balance; "" when the
	// balance pays nothing.
	HoldID string `json:"hold_id,omitempty"`
	// Email gets the stored invoice; "" when none.
	Email string `json:"partner_email,omitempty"`
}

// HoldOf is the hold id of a partner's invoice; "" for none (also on a
// company's own invoice, whose part is nil).
func (p *PartnerPart) HoldOf() string {
	if p == nil {
		return ""
	}
	return p.HoldID
}

// Payer is who pays the invoice: the company itself or its partner.
func (inv Invoice) Payer() string {
	if inv.Partner != nil {
		return PayerPartner
	}
	return PayerClient
}

// ClientAmount is what the client pays: the amount before a partner's
// balance (a company's own invoice: its amount).
func (inv Invoice) ClientAmount() decimal.Decimal {
	if inv.Partner != nil {
		return inv.Partner.ClientAmount
	}
	return inv.Amount
}

// SpendBalance lets up to available of a partner's balance pay the
// invoice's items in order, each SUBSCRIPTION item's top_up_amount before
// its upgrade_amount: each part's share is its
// partner_balance_discount_flat, taken off its amount and added to its
// discount (amount + discount stays the undiscounted value). It answers
// what was spent; the invoice's Amount is left for the caller to sum.
func (inv *Invoice) SpendBalance(available decimal.Decimal) decimal.Decimal {
	left := decimal.Max(available, decimal.Zero)
	spend := func(a *Amount) {
		flat := decimal.Min(left, a.Amount)
		a.Amount = a.Amount.Sub(flat)
		a.Discount = a.Discount.Add(flat)
		a.Discounts.PartnerBalanceFlat = flat
		left = left.Sub(flat)
	}
	for i := range inv.Items {
		it := &inv.Items[i]
		spend(&it.TopUp)
		if it.Kind == ItemSubscription {
			spend(&it.Upgrade)
		}
	}
	return decimal.Max(available, decimal.Zero).Sub(left)
}

// TotalDiscount is the sum of the items' discounts.
func (inv Invoice) TotalDiscount() decimal.Decimal {
	sum := decimal.Zero
	for _, it := range inv.Items {
		sum = sum.Add(it.Discount())
	}
	return sum
}

// Sum is the sum of the items: the invoice's amount.
func (inv Invoice) Sum() decimal.Decimal {
	sum := decimal.Zero
	for _, it := range inv.Items {
		sum = sum.Add(it.Total())
	}
	return sum
}

// Payable reports whether the invoice may still be paid, expired or
// cancelled: only a new one.
func (inv Invoice) Payable() bool { return inv.Status == StatusNew }
