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
	Amount                 decimal.Decimal `json:"-"`
	PaymentURL             *string         `json:"-"`
	Lifetime               time.Time       `json:"-"`
	CreatedAt              time.Time       `json:"-"`
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
