// Package domain holds billing's entities and rules: subscriptions, their
// plans, whether they are paid, and when an advance is available. No
// transport or storage here.
package domain

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// ErrNotFound is what repositories answer for a row that is not there (or
// belongs to another company, which callers must not be able to tell apart).
var ErrNotFound = errors.New("not found")

// Plan is a subscription's plan (spec 2.13).
type Plan string

const (
	PlanFree     Plan = "FREE"
	PlanStart    Plan = "START"
	PlanStandard Plan = "STANDARD"
	// PlanAdvanced cannot be invoiced any more, but existing subscriptions
	// keep it.
	PlanAdvanced Plan = "ADVANCED"
)

// Valid reports whether p is one of the four plans.
func (p Plan) Valid() bool {
	switch p {
	case PlanFree, PlanStart, PlanStandard, PlanAdvanced:
		return true
	}
	return false
}

// SubscriptionType is CONNECTION_ + the connection type in capitals.
type SubscriptionType string

// connectionTypes are the types with a connection limit (spec part 8): the
// only ones a subscription exists for. CRM connections have none.
var connectionTypes = []string{
	"whatsapp", "waba", "telegram", "telegram_bot", "max_personal", "max_bot",
	"vk_group", "vk_direct", "odnoklassniki", "avito",
	"tinkoff", "modulbank", "sberbank", "paykeeper", "bepaid", "payselection",
	"yookassa", "robokassa", "keepz",
}

const typePrefix = "CONNECTION_"

// SubscriptionTypes lists every valid subscription type, in spec order.
func SubscriptionTypes() []SubscriptionType {
	out := make([]SubscriptionType, len(connectionTypes))
	for i, t := range connectionTypes {
		out[i] = SubscriptionType(typePrefix + strings.ToUpper(t))
	}
	return out
}

// ParseSubscriptionType accepts exactly the spelling the API uses
// (CONNECTION_TELEGRAM_BOT), nothing looser.
func ParseSubscriptionType(s string) (SubscriptionType, bool) {
	t := SubscriptionType(s)
	return t, slices.Contains(SubscriptionTypes(), t)
}

// Subscription is one company's subscription of one type.
type Subscription struct {
	ID        int64
	CompanyID int64
	Type      SubscriptionType
	Plan      Plan
	MaxSize   int32
	// TestUntil ends the test period; nil when there is none.
	TestUntil *time.Time
	// PaidUntil ends the paid period; nil before the first payment.
	PaidUntil *time.Time
	// HasPayment: at least one real payment was made.
	HasPayment bool
	Advance    Advance
}

// Advance is the five-day credit of spec part 3.
type Advance struct {
	// Until ends the advance period; nil when none was ever granted.
	Until *time.Time
	// From is paid_until when the advance was granted: the next payment
	// extends from here, so the paid months replace the borrowed days
	// instead of coming on top of them. Always Until − AdvanceCredit; nil
	// for an advance stored without it, which base derives from Until.
	From   *time.Time
	Repaid bool
}

// Active reports an advance that was granted and not yet repaid. It stays
// active after its five days run out: the debt is still there.
func (a Advance) Active() bool { return a.Until != nil && !a.Repaid }

// Start plan, test period and size of a subscription created by the first
// connection of its type (spec-gaps "Connections and logins").
const (
	NewPlan    = PlanStart
	NewMaxSize = 1
)

// AdvanceWindow is how close to the end of the paid period an advance may
// be taken (spec part 8).
const AdvanceWindow = 48 * time.Hour

// Paid reports whether the subscription's connections may work at now:
// plan FREE, or inside the paid period or the test period. FREE counts as
// paid although its paid_until stays null (billing.md "Prices").
func (s Subscription) Paid(now time.Time) bool {
	return s.Plan == PlanFree || after(s.PaidUntil, now) || after(s.TestUntil, now)
}

func after(t *time.Time, now time.Time) bool { return t != nil && t.After(now) }

// PaidThrough is when Paid, true at now, turns false by time alone: the
// later of paid_until and test_until. Nil when it does not turn by time (a
// FREE plan) or is false already. A copy of Paid's answer kept elsewhere
// holds until then, unless the subscription changes.
func (s Subscription) PaidThrough(now time.Time) *time.Time {
	if s.Plan == PlanFree || !s.Paid(now) {
		return nil
	}
	switch {
	case !after(s.TestUntil, now):
		return s.PaidUntil
	case !after(s.PaidUntil, now):
		return s.TestUntil
	case s.TestUntil.After(*s.PaidUntil):
		return s.TestUntil
	default:
		return s.PaidUntil
	}
}

// AdvanceAvailable applies spec part 3 as billing.md "Advance" reads it: a
// paying plan, at least one real payment, at most two days left of a paid
// period that is still running (paid_until − 48h ≤ now < paid_until), and
// no unrepaid advance. An ended period has no days left to be "at most two
// days" of, so an expired subscription pays instead of borrowing.
func (s Subscription) AdvanceAvailable(now time.Time) bool {
	return s.Plan != PlanFree &&
		s.HasPayment &&
		s.PaidUntil != nil &&
		!now.Before(s.PaidUntil.Add(-AdvanceWindow)) && now.Before(*s.PaidUntil) &&
		!s.Advance.Active()
}

// ErrBalanceOutOfRange: a change would take a balance (the business
// dialogs) out of the range it is stored in (int64).
var ErrBalanceOutOfRange = errors.New("balance out of range")

// Size errors, mapped to API errors by the app.
var (
	// ErrStartSize: plan START holds exactly one connection.
	ErrStartSize = errors.New("plan START allows one connection only")
	// ErrBelowInUse: the size would be smaller than the connections the
	// subscription holds.
	ErrBelowInUse = errors.New("max_size is below the number of connections in the subscription")
)

// Plan errors, mapped to API errors (422) by the app.
var (
	// ErrUnknownPlan: not one of the four plans.
	ErrUnknownPlan = errors.New("unknown subscription plan")
	// ErrPlanNotInvoiceable: ADVANCED is kept by the subscriptions that
	// have it but can be neither invoiced nor chosen.
	ErrPlanNotInvoiceable = errors.New("plan ADVANCED cannot be chosen any more")
	// ErrFreeNotBot: FREE exists only for the bot connection types.
	ErrFreeNotBot = errors.New("plan FREE is only for CONNECTION_TELEGRAM_BOT and CONNECTION_MAX_BOT")
)

// freeTypes are the subscription types that may be on plan FREE.
var freeTypes = []SubscriptionType{"CONNECTION_TELEGRAM_BOT", "CONNECTION_MAX_BOT"}

// CheckPlanFor applies the plan rules to a plan being chosen for a
// subscription of type typ with size size (an invoice item, change_plan,
// change_size). A size of 0 passes: it is the source of a move, which
// keeps its plan. How the size compares with the connections in use is
// CheckSize's business.
func CheckPlanFor(plan Plan, typ SubscriptionType, size int32) error {
	switch {
	case !plan.Valid():
		return ErrUnknownPlan
	case plan == PlanAdvanced:
		return ErrPlanNotInvoiceable
	case plan == PlanFree && !slices.Contains(freeTypes, typ):
		return ErrFreeNotBot
	case plan == PlanStart && size > 1:
		return ErrStartSize
	}
	return nil
}

// CheckSize applies the size rules to a plan and size, given how many
// connections the subscription holds now.
func CheckSize(plan Plan, maxSize int32, inUse int) error {
	if plan == PlanStart && maxSize != 1 {
		return ErrStartSize
	}
	if int(maxSize) < inUse {
		return ErrBelowInUse
	}
	return nil
}

// Adjustment is an operator's direct change to a subscription; nil fields
// stay as they are.
type Adjustment struct {
	Plan           *Plan
	MaxSize        *int32
	PaidUntil      *time.Time
	TestUntil      *time.Time
	ClearPaidUntil bool
	ClearTestUntil bool
}

// Apply makes the adjustment, then checks the size rules against the
// connections the subscription holds.
func (s *Subscription) Apply(a Adjustment, inUse int) error {
	if a.Plan != nil {
		s.Plan = *a.Plan
	}
	if a.MaxSize != nil {
		s.MaxSize = *a.MaxSize
	}
	switch {
	case a.ClearPaidUntil:
		s.PaidUntil = nil
	case a.PaidUntil != nil:
		s.PaidUntil = a.PaidUntil
	}
	switch {
	case a.ClearTestUntil:
		s.TestUntil = nil
	case a.TestUntil != nil:
		s.TestUntil = a.TestUntil
	}
	return CheckSize(s.Plan, s.MaxSize, inUse)
}

// FirstDuplicate returns the index of the first id that repeats an earlier
// one, or -1.
func FirstDuplicate(ids []int64) int {
	seen := make(map[int64]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return i
		}
		seen[id] = true
	}
	return -1
}
