package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Money is decimal roubles, never a float: every amount has two decimals
// (kopecks) and is rounded half up once, where it is computed.

// RoundMoney rounds half up to kopecks. decimal's Round is half away from
// zero, which is half up for the non-negative amounts of rewards.
func RoundMoney(d decimal.Decimal) decimal.Decimal { return d.Round(2) }

// Billing's events this service applies (billing's outbox topic
// "partners"), and what is read of them.
const (
	// EventInvoiceStatus is an invoice taking a status; a paid one is
	// rewarded.
	EventInvoiceStatus = "invoices.status_changed"
	// EventDialogOpened is a business dialog a company opened.
	EventDialogOpened = "waba_dialogs.opened"

	InvoicePaid = "paid"

	ItemSubscription = "SUBSCRIPTION"
	ItemWabaDialogs  = "WABA_DIALOGS"
)

// Reward kinds.
const (
	RewardSubscriptions = "SUBSCRIPTIONS_REWARD"
	RewardWabaDialogs   = "WABA_DIALOGS_REWARD"
)

// PeriodLayout is a reward's period: a UTC month.
const PeriodLayout = "2006-01"

// Period is the UTC month of t, YYYY-MM.
func Period(t time.Time) string { return t.UTC().Format(PeriodLayout) }

// ErrBadEvent is a billing event this service cannot read.
var ErrBadEvent = errors.New("malformed billing event")

// InvoiceEvent is the payload of EventInvoiceStatus, as far as rewards
// need it.
type InvoiceEvent struct {
	InvoiceID int64              `json:"invoice_id"`
	CompanyID int64              `json:"company_id"`
	Status    string             `json:"status"`
	Items     []InvoiceEventItem `json:"items"`
	// At is when the invoice took the status; zero when the event has
	// none (the event's own time is used then).
	At time.Time `json:"at"`
	// HoldID is the partner's balance hold of a partner invoice (nil:
	// none); PartnerBalanceUsed what the balance pays of it.
	HoldID             *string          `json:"hold_id"`
	PartnerBalanceUsed *decimal.Decimal `json:"partner_balance_used"`
}

// InvoiceEventItem is one item of an invoice event.
type InvoiceEventItem struct {
	Type string `json:"type"`
	// Amount is what the item costs.
	Amount decimal.Decimal `json:"amount"`
	// AmountAfterPercentDiscounts is the item's amount after its percent
	// discounts, any part a partner's balance pays still in it: the reward
	// base. Events written before billing sent it have only Amount, which
	// is the same for them (no partner balance paid any).
	AmountAfterPercentDiscounts *decimal.Decimal `json:"amount_after_percent_discounts"`
	SubscriptionType            string           `json:"subscription_type"`
	PeriodMonths                int32            `json:"period_months"`
	Count                       int32            `json:"count"`
}

// Base is the item's reward base.
func (it InvoiceEventItem) Base() decimal.Decimal {
	if it.AmountAfterPercentDiscounts != nil {
		return *it.AmountAfterPercentDiscounts
	}
	return it.Amount
}

// ParseInvoiceEvent reads an EventInvoiceStatus payload. Every amount must
// be money (not negative, at most two decimals), a subscription item must
// name its type and period: an event that breaks this is ErrBadEvent.
func ParseInvoiceEvent(payload []byte) (InvoiceEvent, error) {
	var ev InvoiceEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return ev, fmt.Errorf("%w: %s: %v", ErrBadEvent, EventInvoiceStatus, err)
	}
	for i, it := range ev.Items {
		for _, a := range []decimal.Decimal{it.Amount, it.Base()} {
			if a.IsNegative() || !a.Equal(RoundMoney(a)) {
				return ev, fmt.Errorf("%w: invoice %d item %d: amount %s is not money", ErrBadEvent, ev.InvoiceID, i, a)
			}
		}
		if it.Type == ItemSubscription && (it.SubscriptionType == "" || it.PeriodMonths <= 0) {
			return ev, fmt.Errorf("%w: invoice %d item %d: a subscription item without its type or period", ErrBadEvent, ev.InvoiceID, i)
		}
	}
	return ev, nil
}

// DialogOpenedEvent is the payload of EventDialogOpened.
type DialogOpenedEvent struct {
	CompanyID int64 `json:"company_id"`
	// At is when the dialog was opened; zero when the event has none.
	At time.Time `json:"at"`
}

// ParseDialogOpenedEvent reads an EventDialogOpened payload.
func ParseDialogOpenedEvent(payload []byte) (DialogOpenedEvent, error) {
	var ev DialogOpenedEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return ev, fmt.Errorf("%w: %s: %v", ErrBadEvent, EventDialogOpened, err)
	}
	return ev, nil
}

// RewardKey names a reward row: what a payment is added to.
type RewardKey struct {
	PartnerID int64
	// Period is YYYY-MM (UTC).
	Period    string
	CompanyID int64
	Type      string
	// SubscriptionType and PeriodMonths are nil for RewardWabaDialogs.
	SubscriptionType *string
	PeriodMonths     *int32
	Percent          decimal.Decimal
}

// Reward is a reward row.
type Reward struct {
	ID int64
	RewardKey
	// CompanyName is identity's, filled for the partner's list.
	CompanyName string
	// Topups is the sum of the bases counted.
	Topups decimal.Decimal
	// Spendings: subscriptions, the topups; dialogs, the client's dialogs
	// opened in the month at the dialog price.
	Spendings decimal.Decimal
	// Value is Topups x Percent / 100, half up.
	Value decimal.Decimal
	// CreatedAt is the first payment counted.
	CreatedAt time.Time
}

// RewardValue is topups x percent / 100, rounded half up once.
func RewardValue(topups, percent decimal.Decimal) decimal.Decimal {
	// Shift(-2) divides by 100 exactly.
	return RoundMoney(topups.Mul(percent).Shift(-2))
}

// DialogSpendings is dialogs opened at the dialog price.
func DialogSpendings(opened int64, price decimal.Decimal) decimal.Decimal {
	return RoundMoney(price.Mul(decimal.NewFromInt(opened)))
}

// Add counts one payment's base, made at at: the topups grow, the value is
// computed again from them, a subscriptions row's spendings follow its
// topups, and created_at stays the earliest payment's (billing's events
// come in commit order, so that is normally the first one counted).
func (r *Reward) Add(base decimal.Decimal, at time.Time) {
	if r.CreatedAt.IsZero() || at.Before(r.CreatedAt) {
		r.CreatedAt = at
	}
	r.Topups = r.Topups.Add(base)
	r.Value = RewardValue(r.Topups, r.Percent)
	if r.Type == RewardSubscriptions {
		r.Spendings = r.Topups
	}
}

// RewardEntry is one payment to add to a reward row.
type RewardEntry struct {
	Key  RewardKey
	Base decimal.Decimal
}

// RewardsOf are the reward entries of an invoice event for the partner of
// its client (partners.md "Rewards, balance"): none unless the invoice
// was paid and the client is a partner's; a referral-type client's
// SUBSCRIPTION items at the referral commission; any client's
// WABA_DIALOGS items at the dialogs commission; a partner-type client's
// subscriptions earn nothing (its discount is the partner's commission).
// Items with a base of 0 earn nothing and make no row.
func RewardsOf(ev InvoiceEvent, period string, partnerID int64, clientType string, c Commissions) []RewardEntry {
	if ev.Status != InvoicePaid || partnerID == 0 {
		return nil
	}
	var out []RewardEntry
	for _, it := range ev.Items {
		base := it.Base()
		if !base.IsPositive() {
			continue
		}
		key := RewardKey{PartnerID: partnerID, Period: period, CompanyID: ev.CompanyID}
		switch {
		case it.Type == ItemSubscription && clientType == TypeReferral:
			st, months := it.SubscriptionType, it.PeriodMonths
			key.Type, key.SubscriptionType, key.PeriodMonths, key.Percent = RewardSubscriptions, &st, &months, c.Referral
		case it.Type == ItemWabaDialogs:
			key.Type, key.Percent = RewardWabaDialogs, c.WabaDialogs
		default:
			continue
		}
		out = append(out, RewardEntry{Key: key, Base: base})
	}
	return out
}

// RewardFilter is the rewards list's query.
type RewardFilter struct {
	// Period is YYYY-MM; nil: every month.
	Period *string
	// CompanyID is one client; nil: all.
	CompanyID *int64
}

// Payout statuses and its one type.
const (
	PayoutCreated  = "CREATED"
	PayoutPaid     = "PAID"
	PayoutRejected = "REJECTED"

	PayoutTypePayout = "PAYOUT"
)

// Payout is a partner's payout: the whole balance to one of its
// requisites.
type Payout struct {
	ID          int64
	PartnerID   int64
	Status      string
	Type        string
	Value       decimal.Decimal
	RequisiteID int64
	// Comment is the operator's; nil until given.
	Comment   *string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Payout rule errors.
var (
	// ErrPayoutNotActive: only a CREATED payout is paid or rejected.
	ErrPayoutNotActive = errors.New("payout is not CREATED")
	// ErrPayoutStatus: a payout is closed as PAID or REJECTED only.
	ErrPayoutStatus = errors.New("payout status must be PAID or REJECTED")
	// ErrPayoutLocked: the partner has a CREATED payout.
	ErrPayoutLocked = errors.New("the partner has a CREATED payout")
)

// Close is the operator paying or rejecting a CREATED payout at now; a
// comment given replaces none. A rejected payout's value is back in the
// balance, which counts every payout but the rejected ones.
func (p *Payout) Close(status string, comment *string, now time.Time) error {
	if status != PayoutPaid && status != PayoutRejected {
		return ErrPayoutStatus
	}
	if p.Status != PayoutCreated {
		return ErrPayoutNotActive
	}
	p.Status, p.UpdatedAt = status, now
	if comment != nil {
		p.Comment = comment
	}
	return nil
}

// Complete reports a requisite a payout can go to: it has a bic and a
// current account.
func (r Requisite) Complete() bool { return r.BIC != nil && r.CurrentAccount != nil }

// Totals are the sums a partner's balance is made of.
type Totals struct {
	// Rewards is the sum of the partner's reward values.
	Rewards decimal.Decimal
	// Payouts is the sum of its payouts that are not REJECTED.
	Payouts decimal.Decimal
	// Held is what its partner invoices hold (pending and held holds).
	Held decimal.Decimal
}

// Balance is the rewards less the payouts that are not REJECTED and what
// the partner's new and paid partner invoices hold.
func (t Totals) Balance() decimal.Decimal { return t.Rewards.Sub(t.Payouts).Sub(t.Held) }

// Payers of a client's invoice.
const (
	PayerClient  = "client"
	PayerPartner = "partner"
)

// Hold statuses (balance_holds).
const (
	HoldPending  = "pending"
	HoldHeld     = "held"
	HoldReleased = "released"
)

// Hold is what one partner invoice holds of its partner's balance.
type Hold struct {
	ID        string
	PartnerID int64
	CompanyID int64
	Status    string
	Amount    decimal.Decimal
	InvoiceID *int64
	CreatedAt time.Time
}

// Invoice statuses besides paid: every one is a payment_status
// notification; expired and cancelled end what a partner invoice holds.
const (
	InvoiceNew       = "new"
	InvoiceExpired   = "expired"
	InvoiceCancelled = "cancelled"
)

// Releases reports an invoice status that gives the held balance back.
func Releases(status string) bool { return status == InvoiceExpired || status == InvoiceCancelled }
