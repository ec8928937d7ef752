// Package domain holds the partner programme's rules that need no
// storage: who may be named what, a client's subscription status, how the
// client list filters and orders, and the partner's requisites.
package domain

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shopspring/decimal"
)

// ErrNotFound is a row that is not there (or is another partner's).
var ErrNotFound = errors.New("not found")

// Client types.
const (
	TypePartner  = "partner"
	TypeReferral = "referral"
)

// forbiddenNameRunes may not appear in a client owner's name (400 26002),
// beside control characters.
const forbiddenNameRunes = `<>&"$%!#?§;*~/\|^=[]{}()`

// NameValid applies the owner-name rule: no control character (Unicode
// Cc) and none of the 24 forbidden characters; anything else, any script,
// is allowed.
func NameValid(name string) bool {
	for _, r := range name {
		if unicode.IsControl(r) || strings.ContainsRune(forbiddenNameRunes, r) {
			return false
		}
	}
	return true
}

// Commissions of a partner, in percent.
type Commissions struct {
	Partner, Referral, WabaDialogs decimal.Decimal
}

// Settings are a partner's own settings.
type Settings struct {
	CompanyID   int64
	Commissions Commissions
	// ClientsPerDay is nil for the default.
	ClientsPerDay *int32
}

// Subscription statuses of the client list.
const (
	StatusFree    = "FREE"
	StatusPaid    = "PAID"
	StatusTest    = "TEST"
	StatusNotPaid = "NOT_PAID"
)

// Sub is what the client list needs of a client's subscription.
type Sub struct {
	Type      string
	Plan      string
	PaidUntil *time.Time
	TestUntil *time.Time
}

// Status is the subscription's status at now: FREE (the plan), else PAID
// (paid_until later than now), else TEST (in the test period: test_until
// later than now and never paid), else NOT_PAID.
func (s Sub) Status(now time.Time) string {
	switch {
	case s.Plan == "FREE":
		return StatusFree
	case s.PaidUntil != nil && s.PaidUntil.After(now):
		return StatusPaid
	case s.PaidUntil == nil && s.TestUntil != nil && s.TestUntil.After(now):
		return StatusTest
	}
	return StatusNotPaid
}

// Client is a partner's client as the partner's views show it.
type Client struct {
	ID                    int64
	Name                  string
	Type                  string
	PaymentsLocked        bool
	WabaProviderPartnerID *string
	Note                  *string
	WabaDialogsBalance    int64
	Subs                  []Sub
}

// PaidUntil is the latest paid_until of the client's subscriptions that
// are not FREE; nil when none has one.
func (c Client) PaidUntil() *time.Time {
	var out *time.Time
	for _, s := range c.Subs {
		if s.Plan != "FREE" && s.PaidUntil != nil && (out == nil || s.PaidUntil.After(*out)) {
			out = s.PaidUntil
		}
	}
	return out
}

// TestUntil is the latest test_until of the client's subscriptions.
func (c Client) TestUntil() *time.Time {
	var out *time.Time
	for _, s := range c.Subs {
		if s.TestUntil != nil && (out == nil || s.TestUntil.After(*out)) {
			out = s.TestUntil
		}
	}
	return out
}

// Active reports a client with a PAID subscription (the profile's counts).
func (c Client) Active(now time.Time) bool {
	return slices.ContainsFunc(c.Subs, func(s Sub) bool { return s.Status(now) == StatusPaid })
}

// Filter is the client list's query.
type Filter struct {
	Query              *string
	Type               *string
	SubscriptionType   *string
	SubscriptionStatus *string
	// OrderBy is id:asc, id:desc, name:asc or name:desc.
	OrderBy string
	Limit   int
	Offset  int
}

// Matches applies the filter to one client at now.
func (f Filter) Matches(c Client, now time.Time) bool {
	if f.Query != nil && *f.Query != "" {
		q := *f.Query
		byName := strings.Contains(strings.ToLower(c.Name), strings.ToLower(q))
		byID := false
		if allDigits(q) {
			id, err := strconv.ParseInt(q, 10, 64)
			byID = err == nil && id == c.ID
		}
		if !byName && !byID {
			return false
		}
	}
	if f.Type != nil && c.Type != *f.Type {
		return false
	}
	if f.SubscriptionType == nil && f.SubscriptionStatus == nil {
		return true
	}
	return slices.ContainsFunc(c.Subs, func(s Sub) bool {
		return (f.SubscriptionType == nil || s.Type == *f.SubscriptionType) &&
			(f.SubscriptionStatus == nil || s.Status(now) == *f.SubscriptionStatus)
	})
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Select filters, orders and pages clients: the page and how many matched.
func (f Filter) Select(all []Client, now time.Time) ([]Client, int) {
	var out []Client
	for _, c := range all {
		if f.Matches(c, now) {
			out = append(out, c)
		}
	}
	byName := func(a, b Client) int {
		if n := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); n != 0 {
			return n
		}
		return cmpID(a, b)
	}
	switch f.OrderBy {
	case "id:desc":
		slices.SortFunc(out, func(a, b Client) int { return -cmpID(a, b) })
	case "name:asc":
		slices.SortFunc(out, byName)
	case "name:desc":
		slices.SortFunc(out, func(a, b Client) int {
			if n := strings.Compare(strings.ToLower(b.Name), strings.ToLower(a.Name)); n != 0 {
				return n
			}
			return cmpID(a, b)
		})
	default:
		slices.SortFunc(out, cmpID)
	}
	total := len(out)
	if f.Offset >= len(out) {
		return []Client{}, total
	}
	out = out[f.Offset:]
	if len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, total
}

func cmpID(a, b Client) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// Requisite is one of a partner's own requisites.
type Requisite struct {
	ID             int64
	PartnerID      int64
	Type           string
	TIN            string
	KPP            *string
	Name           string
	Default        bool
	BIC            *string
	CurrentAccount *string
}

// Requisite rule errors, each naming the field that is missing.
var (
	ErrDefaultNeedsBIC     = errors.New("bic")
	ErrDefaultNeedsAccount = errors.New("current_account")
	ErrDefaultNeedsKPP     = errors.New("kpp")
)

// Check applies the default requisite's rule: a default one needs bic,
// current_account and, with a 10-digit tin, kpp.
func (r Requisite) Check() error {
	if !r.Default {
		return nil
	}
	switch {
	case r.BIC == nil:
		return ErrDefaultNeedsBIC
	case r.CurrentAccount == nil:
		return ErrDefaultNeedsAccount
	case len(r.TIN) == 10 && r.KPP == nil:
		return ErrDefaultNeedsKPP
	}
	return nil
}
