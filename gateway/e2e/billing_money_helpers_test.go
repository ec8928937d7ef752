package e2e

// Helpers of the billing money tests (billing_*_test.go): exact decimals,
// calendar months, invoice bodies and expected answers, per
// the billing design (billing.md). Every expected amount in the tests is worked out
// by hand in a comment next to it; these helpers only compare.

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bmTimeLayout is how the gateway writes timestamps.
const bmTimeLayout = "2006-01-02T15:04:05.000000Z"

// bmMonth is the 30 days the remaining time of a paid period is divided by.
const bmMonth = 30 * 24 * time.Hour

// bmMSK is Moscow time (UTC+3, no daylight saving): the central bank's day.
var bmMSK = time.FixedZone("MSK", 3*3600)

func bmTS(ts time.Time) string { return ts.UTC().Format(bmTimeLayout) }

// bmAt is now + d, to the microsecond (what the database keeps).
func bmAt(d time.Duration) time.Time { return time.Now().Add(d).UTC().Truncate(time.Microsecond) }

func bmParseTS(t testing.TB, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok && timeRe.MatchString(s), "not a timestamp: %#v", v)
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return ts
}

// bmAddMonths adds calendar months in UTC: the same day and time of day,
// or the month's last day when it is shorter (Jan 31 + 1 = Feb 28/29).
// (time.AddDate would roll Jan 31 + 1 month over to March.)
func bmAddMonths(ts time.Time, n int) time.Time {
	ts = ts.UTC()
	y, m, d := ts.Date()
	first := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	if last := first.AddDate(0, 1, -1).Day(); d > last {
		d = last
	}
	return time.Date(first.Year(), first.Month(), d, ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC)
}

// bmTimeBetween accepts a timestamp in [lo, hi].
func bmTimeBetween(lo, hi time.Time) matcher {
	return matcher{p("a timestamp in [%s, %s]", bmTS(lo), bmTS(hi)), func(v any) bool {
		s, ok := v.(string)
		if !ok || !timeRe.MatchString(s) {
			return false
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && !ts.Before(lo) && !ts.After(hi)
	}}
}

// --- Exact decimals.

// bmDec is the exact value of a JSON number as the helpers decode it: a
// float64 whose shortest form is the literal the gateway wrote (money and
// percents have far fewer than 15 significant digits).
func bmDec(t testing.TB, v any) *big.Rat {
	t.Helper()
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		s = x.String()
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		require.Failf(t, "not a number", "%#v", v)
	}
	r, ok := new(big.Rat).SetString(s)
	require.True(t, ok, "not a decimal: %q", s)
	return r
}

// bmR is a decimal literal.
func bmR(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func bmAdd(a ...*big.Rat) *big.Rat {
	out := new(big.Rat)
	for _, x := range a {
		out.Add(out, x)
	}
	return out
}

func bmMul(a, b *big.Rat) *big.Rat { return new(big.Rat).Mul(a, b) }

// bmRound2 rounds a non-negative amount half up to kopecks.
func bmRound2(r *big.Rat) *big.Rat {
	x := new(big.Rat).Mul(r, big.NewRat(100, 1))
	x.Add(x, big.NewRat(1, 2))
	q := new(big.Int).Quo(x.Num(), x.Denom())
	return new(big.Rat).SetFrac(q, big.NewInt(100))
}

// bmCents reports whether r has at most two decimals.
func bmCents(r *big.Rat) bool {
	return new(big.Rat).Mul(r, big.NewRat(100, 1)).IsInt()
}

func bmStr(r *big.Rat) string {
	return strings.TrimSuffix(strings.TrimRight(r.FloatString(4), "0"), ".")
}

// bmMoney is any non-negative amount with at most two decimals.
var bmMoney = matcher{"an amount (>= 0, at most two decimals)", func(v any) bool {
	f, ok := v.(float64)
	if !ok || f < 0 {
		return false
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'f', -1, 64))
	return ok && bmCents(r)
}}

// bmURLOrNull is a document link (absolute) or null.
var bmURLOrNull = matcher{"an absolute URL or null", func(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"))
}}

// bmValueLeft is monthly × (until − now) / 30 days, exact; 0 when until is
// not after now.
func bmValueLeft(monthly int64, until, now time.Time) *big.Rat {
	d := until.Sub(now)
	if d <= 0 {
		return new(big.Rat)
	}
	r := new(big.Rat).SetFrac(big.NewInt(int64(d)), big.NewInt(int64(bmMonth)))
	return r.Mul(r, big.NewRat(monthly, 1))
}

// bmRequireUpgrade checks an upgrade_amount computed at an instant in
// [before, after]: undiscounted = monthlyDiff × (until − now) / 30 days
// rounded half up, discount = undiscounted × pct / 100 rounded half up,
// amount = undiscounted − discount. It answers amount and discount.
func bmRequireUpgrade(t testing.TB, got any, monthlyDiff, pct int64, until, before, after time.Time) (amount, discount *big.Rat) {
	t.Helper()
	m, ok := got.(map[string]any)
	require.True(t, ok, "upgrade_amount: %#v", got)
	amount, discount = bmDec(t, m["amount"]), bmDec(t, m["discount"])
	require.True(t, bmCents(amount) && bmCents(discount), "kopecks: %v", m)
	undiscounted := bmAdd(amount, discount)
	uLo, uHi := bmValueLeft(monthlyDiff, until, after), bmValueLeft(monthlyDiff, until, before)
	lo, hi := bmRound2(uLo), bmRound2(uHi)
	require.True(t, undiscounted.Cmp(lo) >= 0 && undiscounted.Cmp(hi) <= 0,
		"upgrade undiscounted %s (amount %s + discount %s) not in [%s, %s]", bmStr(undiscounted), bmStr(amount), bmStr(discount), bmStr(lo), bmStr(hi))
	pc := big.NewRat(pct, 100)
	// The discount of the rounded undiscounted value, or (read the other
	// way) of the exact one.
	okDiscount := discount.Cmp(bmRound2(bmMul(undiscounted, pc))) == 0 ||
		(discount.Cmp(bmRound2(bmMul(uLo, pc))) >= 0 && discount.Cmp(bmRound2(bmMul(uHi, pc))) <= 0)
	require.True(t, okDiscount, "upgrade discount %s is not %d %% of %s", bmStr(discount), pct, bmStr(undiscounted))
	return amount, discount
}

// bmShifted is what a change makes of paid_until (billing.md "Plan and size
// changes"): from + value left / (new monthly) × 30 days, the value left
// being (until − now) × old monthly / 30 days; i.e. from + (until − now) ×
// oldMonthly / newMonthly. from is now itself, or (a target) max(now, its
// paid_until). It answers a matcher of the instants now in [before, after]
// give, widened by what rounding the value left to kopecks moves (0.01
// roubles' worth of time at the new price) and a millisecond.
func bmShifted(until time.Time, oldMonthly, newMonthly int64, from func(now time.Time) time.Time, before, after time.Time) matcher {
	at := func(now time.Time) time.Time {
		left := until.Sub(now)
		if left < 0 {
			left = 0
		}
		num := new(big.Int).Mul(big.NewInt(int64(left)), big.NewInt(oldMonthly))
		shift := new(big.Rat).SetFrac(num, big.NewInt(newMonthly))
		ns, _ := shift.Float64()
		return from(now).Add(time.Duration(ns))
	}
	a, b := at(before), at(after)
	if b.Before(a) {
		a, b = b, a
	}
	tol := time.Duration(0.01*float64(bmMonth)/float64(newMonthly)) + time.Millisecond
	return bmTimeBetween(a.Add(-tol), b.Add(tol))
}

func bmFromNow(now time.Time) time.Time { return now }

// bmFromLater is max(now, paid) for a target with paid_until paid.
func bmFromLater(paid time.Time) func(time.Time) time.Time {
	return func(now time.Time) time.Time {
		if paid.After(now) {
			return paid
		}
		return now
	}
}

// --- Arranging companies and subscriptions.

// bmCompanyWith makes a company with one connection of typ (a whatsapp one
// when typ is empty) and answers its subscription, after the operator's
// changes when given.
func bmCompanyWith(t *testing.T, typ string, changes map[string]any) (company, map[string]any) {
	t.Helper()
	c := newCompany(t, nil)
	if typ == "" {
		typ = "whatsapp"
	}
	var params any
	if typ == "telegram_bot" {
		tok, _ := botToken()
		params = map[string]any{"bot_token": tok}
	}
	mustCreate(t, c, typ, params)
	sub := subscriptionOf(t, c, typ)
	if changes != nil {
		sub = bmAdjust(t, c, sub["id"], changes)
	}
	return c, sub
}

// bmAdjust is the operator's change of a subscription; it answers it.
func bmAdjust(t *testing.T, c company, subID any, body map[string]any) map[string]any {
	t.Helper()
	r := adjust(t, c, subID, body)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// bmNewSubscription is the operator's further subscription of a type.
func bmNewSubscription(t *testing.T, c company, body map[string]any) map[string]any {
	t.Helper()
	r := api(t, "POST", p("/admin/v1/companies/%d/subscriptions", c.ID), body, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// bmSub is one subscription of the company's list, by id.
func bmSub(t *testing.T, c company, id any) map[string]any {
	t.Helper()
	for _, s := range listSubscriptions(t, c) {
		if m := s.(map[string]any); m["id"] == id {
			return m
		}
	}
	require.Failf(t, "no subscription", "id %v in company %d", id, c.ID)
	return nil
}

// bmWith is a copy of m with changes.
func bmWith(m map[string]any, changes map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

// bmBilling is the operator's view of a company's billing.
func bmBilling(t *testing.T, companyID int64) map[string]any {
	t.Helper()
	r := api(t, "GET", p("/admin/v1/companies/%d/billing", companyID), nil, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func bmSetBilling(t *testing.T, companyID int64, body map[string]any) map[string]any {
	t.Helper()
	r := api(t, "PATCH", p("/admin/v1/companies/%d/billing", companyID), body, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// bmRequisite registers an organisation's requisites and answers them.
func bmRequisite(t *testing.T, c company) map[string]any {
	t.Helper()
	r := api(t, "POST", cpath(c, "/subscriptions/requisites/"),
		map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Northwind LLC"}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// --- Invoices.

func bmSubItem(id any, plan string, size int) map[string]any {
	return map[string]any{"type": "SUBSCRIPTION", "id": id, "new_subscription_plan": plan, "new_size": size}
}

func bmDialogsItem(count int) map[string]any {
	return map[string]any{"type": "WABA_DIALOGS", "count": count}
}

// bmCardRU is an invoice request paid by a Russian card; extra fields are
// added (or, set to bmAbsent, removed).
func bmCardRU(extra map[string]any, items ...any) map[string]any {
	body := map[string]any{"items": items, "payment_method": "CARD_RU"}
	for k, v := range extra {
		if v == bmAbsent {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	return body
}

// bmAbsent removes a field in bmCardRU.
const bmAbsent = "\x00absent"

// bmStored is the request storing the invoice (preview false, offer accepted).
func bmStored(body map[string]any) map[string]any {
	return bmWith(body, map[string]any{"preview": false, "consents": map[string]any{"offer_accepted": true}})
}

func bmInvoice(t *testing.T, c company, body any, headers ...string) response {
	t.Helper()
	if headers == nil {
		headers = key(c.Key)
	}
	return api(t, "POST", cpath(c, "/subscriptions/invoices/"), body, headers...)
}

// bmOK is a 200 invoice answer, decoded.
func bmOK(t *testing.T, r response) map[string]any {
	t.Helper()
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// bmDiscounts is the discounts object of a SUBSCRIPTION amount: the
// percents that apply, 0 for the others (billing.md: "discounts shows every
// percent that applies").
func bmDiscounts(period, quantity, testPeriod int) map[string]any {
	return map[string]any{"period_discount_percent": period, "quantity_discount_percent": quantity, "promo_discount_percent": 0,
		"partner_discount_percent": 0, "test_period_discount_percent": testPeriod, "partner_balance_discount_flat": 0}
}

func bmAmount(amount, discount any, discounts map[string]any) map[string]any {
	return map[string]any{"amount": amount, "discount": discount, "discounts": discounts}
}

// bmNoUpgrade is the upgrade_amount when nothing grows: 0, with the same
// discounts as the top-up.
func bmNoUpgrade(discounts map[string]any) map[string]any { return bmAmount(0, 0, discounts) }

// bmSubLine is a SUBSCRIPTION summary item for sub as it is now.
func bmSubLine(sub map[string]any, plan string, size int, topUp, upgrade map[string]any) map[string]any {
	return map[string]any{"type": "SUBSCRIPTION", "subscription_id": sub["id"], "subscription_type": sub["subscription_type"],
		"old_size": sub["max_size"], "new_size": size, "old_subscription_plan": sub["subscription_plan"], "new_subscription_plan": plan,
		"old_paid_until": sub["paid_until"], "top_up_amount": topUp, "upgrade_amount": upgrade}
}

// bmDialogsLine is a WABA_DIALOGS summary item: count × 5.00, no discount.
func bmDialogsLine(count int, amount any) map[string]any {
	return map[string]any{"type": "WABA_DIALOGS", "count": count, "price": 5,
		"top_up_amount": map[string]any{"amount": amount, "discount": 0, "discounts": map[string]any{"partner_balance_discount_flat": 0}}}
}

// bmSummary is a summary without card details, promo code or requisite.
func bmSummary(method string, period int, totalDiscount any, items ...any) map[string]any {
	return map[string]any{"payment_method": method, "card_provider": nil, "charge_currency": nil, "charge_amount": nil,
		"conversion_rate": nil, "conversion_rate_date": nil, "period_months": period, "items": items, "promo_code": nil,
		"total_discount": totalDiscount, "partner_discount_percent": 0, "company_requisite": nil}
}

// bmPreview is a whole preview answer; the receipt is checked apart
// (bmRequireReceipt).
func bmPreview(summary map[string]any, amount any) map[string]any {
	return map[string]any{"id": nil, "preview": true, "status": nil, "lifetime": nil, "summary": summary, "amount": amount,
		"currency": "RUB", "payment_url": nil, "preview_url": bmURLOrNull, "act_url": bmURLOrNull,
		"receipt": map[string]any{"items": anyPresent}, "created_at": nil}
}

// bmLine is a receipt line: quantity × price.
type bmLine struct {
	qty   int64
	price string
}

// bmRequireReceipt checks the receipt of an invoice: one line per non-zero
// part, in any order, each {name (free text), quantity, price, vat "none",
// tax_name null, tax_value 0}, adding up to the amount.
func bmRequireReceipt(t testing.TB, inv map[string]any, want ...bmLine) {
	t.Helper()
	receipt, ok := inv["receipt"].(map[string]any)
	require.True(t, ok, "receipt: %#v", inv["receipt"])
	items, ok := receipt["items"].([]any)
	require.True(t, ok, "receipt.items: %#v", receipt["items"])
	sum := new(big.Rat)
	var got, exp []string
	for _, it := range items {
		requireValue(t, map[string]any{"name": anyString, "quantity": anyPresent, "price": anyPresent, "vat": "none", "tax_name": nil, "tax_value": 0}, it)
		m := it.(map[string]any)
		qty, price := bmDec(t, m["quantity"]), bmDec(t, m["price"])
		require.True(t, qty.IsInt() && qty.Sign() > 0 && bmCents(price) && price.Sign() > 0, "receipt line %v", m)
		sum.Add(sum, bmMul(qty, price))
		got = append(got, qty.RatString()+" x "+price.RatString())
	}
	for _, l := range want {
		exp = append(exp, big.NewRat(l.qty, 1).RatString()+" x "+bmR(l.price).RatString())
	}
	sort.Strings(got)
	sort.Strings(exp)
	if exp == nil {
		exp = []string{}
	}
	if got == nil {
		got = []string{}
	}
	require.Equal(t, exp, got, "receipt lines")
	require.Zero(t, sum.Cmp(bmDec(t, inv["amount"])), "receipt adds up to %s, amount %v", bmStr(sum), inv["amount"])
}

// bmRequireRaw checks that the body holds each fragment exactly (a
// decimal's digits).
func bmRequireRaw(t testing.TB, r response, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		require.Contains(t, string(r.Body), f)
	}
}

// bmRequireStored checks a stored invoice's own fields: id, preview false,
// status, lifetime = created_at + 3 days, created_at in [before, after],
// payment_url (the sandbox's pay URL when card is true, else null).
func bmRequireStored(t testing.TB, inv map[string]any, status string, card bool, before, after time.Time) {
	t.Helper()
	requireValue(t, anyID, inv["id"])
	require.Equal(t, false, inv["preview"])
	require.Equal(t, status, inv["status"])
	created := bmParseTS(t, inv["created_at"])
	require.False(t, created.Before(before.Add(-time.Millisecond)) || created.After(after.Add(time.Millisecond)),
		"created_at %v not in [%v, %v]", created, before, after)
	require.Equal(t, bmTS(created.Add(72*time.Hour)), inv["lifetime"], "lifetime = created_at + 3 days")
	if card {
		require.Equal(t, p("%s/sandbox/v1/invoices/%v/pay", stack.BaseURL, inv["id"]), inv["payment_url"])
	} else {
		require.Nil(t, inv["payment_url"])
	}
}

// bmSameInvoice compares what a preview and a stored invoice of one request
// share.
func bmSameInvoice(t testing.TB, preview, stored map[string]any) {
	t.Helper()
	for _, k := range []string{"summary", "amount", "currency", "receipt"} {
		require.Equal(t, preview[k], stored[k], k)
	}
}

// bmPay, bmExpire and bmCancel are the sandbox's and the operator's moves
// of an invoice.
func bmPay(t testing.TB, id any) response {
	t.Helper()
	return api(t, "POST", p("/sandbox/v1/invoices/%v/pay", id), nil, operator()...)
}

func bmExpire(t testing.TB, id any) response {
	t.Helper()
	return api(t, "POST", p("/sandbox/v1/invoices/%v/expire", id), nil, operator()...)
}

func bmCancel(t testing.TB, id any) response {
	t.Helper()
	return api(t, "POST", p("/admin/v1/invoices/%v/cancel", id), nil, operator()...)
}

// bmStoreAndPay stores an invoice of the body (CARD_RU) and pays it in
// the sandbox; it answers the paid invoice and the instants around the
// payment.
func bmStoreAndPay(t *testing.T, c company, body map[string]any) (inv map[string]any, before, after time.Time) {
	t.Helper()
	stored := bmOK(t, bmInvoice(t, c, bmStored(body)))
	require.Equal(t, "new", stored["status"], "%v", stored)
	before = time.Now()
	r := bmPay(t, stored["id"])
	after = time.Now()
	require.Equal(t, 200, r.Status, "%s", r.Body)
	inv = r.JSON(t)
	require.Equal(t, "paid", inv["status"])
	return inv, before, after
}

// bmPaidOnce gives a subscription its real payment: an invoice of START,
// size 1, one month (990.00 at most, never 0) paid in the sandbox. The
// subscription must be START of size 1 (a whatsapp or bot one).
func bmPaidOnce(t *testing.T, c company, subID any) {
	t.Helper()
	inv, _, _ := bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(subID, "START", 1)))
	require.Positive(t, bmDec(t, inv["amount"]).Sign())
}

// bmEligible makes a company whose whatsapp subscription (START, size 1)
// had a real payment and has paid_until = now + 1 day: an advance would be
// granted. It answers the company, the subscription and its paid_until.
func bmEligible(t *testing.T) (company, map[string]any, time.Time) {
	t.Helper()
	c, sub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
	bmPaidOnce(t, c, sub["id"])
	until := bmAt(24 * time.Hour)
	sub = bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(until)})
	return c, sub, until
}

// bmChange is a change_size or change_plan call.
func bmChange(t *testing.T, c company, subID any, action string, body any, headers ...string) response {
	t.Helper()
	if headers == nil {
		headers = key(c.Key)
	}
	return api(t, "POST", cpath(c, "/subscriptions/%v/actions/%s", subID, action), body, headers...)
}

func bmAdvance(t *testing.T, c company, subID any, headers ...string) response {
	t.Helper()
	if headers == nil {
		headers = key(c.Key)
	}
	return api(t, "POST", cpath(c, "/subscriptions/%v/actions/advance", subID), nil, headers...)
}

// bmSide is a side of a change answer.
func bmSide(sub map[string]any, newSize int, newPlan string, newPaidUntil any) map[string]any {
	return map[string]any{"id": sub["id"], "subscription_type": sub["subscription_type"], "old_max_size": sub["max_size"],
		"new_max_size": newSize, "old_subscription_plan": sub["subscription_plan"], "new_subscription_plan": newPlan,
		"old_paid_until": sub["paid_until"], "new_paid_until": newPaidUntil}
}

// bmForbidden is the 403 of a missing scope, a read-only grant on a write,
// or a missing permission.
const bmForbidden = `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`

func bmRequireForbidden(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, bmForbidden, r)
}

// bmRequireLocPrefix checks a 422 error 1 whose first error's location
// starts with prefix (where billing.md names the field but not the exact
// element).
func bmRequireLocPrefix(t *testing.T, r response, prefix ...any) {
	t.Helper()
	e := firstError(t, r)
	require.EqualValues(t, 1, r.JSON(t)["error_code"], "%s", r.Body)
	loc, _ := e["location"].([]any)
	require.GreaterOrEqual(t, len(loc), len(prefix), "%s", r.Body)
	for i, want := range prefix {
		if n, ok := want.(int); ok {
			want = float64(n)
		}
		require.Equal(t, want, loc[i], "%s", r.Body)
	}
}
