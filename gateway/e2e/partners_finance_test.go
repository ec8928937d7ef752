package e2e

// The partner programme's money end to end, per design/partners.md
// "Rewards, balance" and "Payouts": a client's paid invoice reaches the
// partners service through billing's outbox relay (asynchronously, so the
// tests poll with a deadline), which adds it to the month's reward row;
// the balance is the rewards less the payouts not REJECTED; a payout takes
// the whole balance, the operator pays or rejects it.

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/server"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
)

// ptfWait bounds how long a payment may take to show in the rewards (the
// relay is woken by the payment's notification; a failed send is retried
// within 5 s).
const ptfWait = 20 * time.Second

// ptfAwayFromMonthEnd waits out the last two minutes of a UTC month, so
// that a test's payments fall in one reward period.
func ptfAwayFromMonthEnd() {
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	if left := next.Sub(now); left < 2*time.Minute {
		time.Sleep(left + time.Second)
	}
}

// ptfPeriod is the current UTC month, YYYY-MM.
func ptfPeriod() string { return time.Now().UTC().Format("2006-01") }

// ptfMatches is requireValue's comparison without failing: matchers
// accept, maps and lists compare member by member, the rest as JSON.
func ptfMatches(want, got any) bool {
	switch w := want.(type) {
	case matcher:
		return w.ok(got)
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			gv, present := g[k]
			if !present || !ptfMatches(v, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !ptfMatches(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		a, err1 := json.Marshal(want)
		b, err2 := json.Marshal(got)
		return err1 == nil && err2 == nil && string(a) == string(b)
	}
}

// ptfAwait polls GET path (with the headers) until its 200 body matches
// want, within ptfWait, and then checks it exactly (the failure shows the
// last answer). It answers the decoded body.
func ptfAwait(t *testing.T, path string, want any, headers ...string) any {
	t.Helper()
	var r response
	for deadline := time.Now().Add(ptfWait); ; time.Sleep(tick) {
		r = api(t, "GET", path, nil, headers...)
		var got any
		if r.Status == 200 && json.Unmarshal(r.Body, &got) == nil && ptfMatches(want, got) {
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return requireJSON(t, r, 200, want)
}

// ptfRewardsPath is the partner's rewards list with a raw query ("" none).
func ptfRewardsPath(pt ptPartner, query string) string {
	path := ptPath(pt.company, "/finance/rewards")
	if query != "" {
		path += "?" + query
	}
	return path
}

// ptfRewards is a whole rewards answer.
func ptfRewards(rows ...map[string]any) map[string]any {
	list := make([]any, len(rows))
	for i, r := range rows {
		list[i] = r
	}
	return map[string]any{"rewards": list}
}

// ptfSubReward is a SUBSCRIPTIONS_REWARD row: spendings are the topups.
func ptfSubReward(c company, name, subType string, months int, topups, value, percent any, created matcher) map[string]any {
	return map[string]any{"id": anyID, "period": ptfPeriod(), "company_id": c.ID, "company_name": name,
		"reward_type": "SUBSCRIPTIONS_REWARD", "period_topups_value": topups, "period_spendings_value": topups,
		"reward_value": value, "partner_percent": percent, "subscription_type": subType, "period_months": months,
		"created_at": created}
}

// ptfDialogsReward is a WABA_DIALOGS_REWARD row.
func ptfDialogsReward(c company, name string, topups, spendings, value, percent any, created matcher) map[string]any {
	return map[string]any{"id": anyID, "period": ptfPeriod(), "company_id": c.ID, "company_name": name,
		"reward_type": "WABA_DIALOGS_REWARD", "period_topups_value": topups, "period_spendings_value": spendings,
		"reward_value": value, "partner_percent": percent, "subscription_type": nil, "period_months": nil,
		"created_at": created}
}

// ptfPaid is a payment made between before and after: a reward row's
// created_at (the invoice's paid time, to the microsecond).
type ptfPaid struct{ before, after time.Time }

func (p ptfPaid) at() matcher {
	return bmTimeBetween(p.before.Add(-time.Millisecond), p.after.Add(time.Millisecond))
}

// ptfPay stores an invoice of the body for c (CARD_RU) and pays it in the
// sandbox; it answers when, and checks the amount.
func ptfPay(t *testing.T, c company, amount string, body map[string]any) ptfPaid {
	t.Helper()
	inv, before, after := bmStoreAndPay(t, c, body)
	require.Zero(t, bmDec(t, inv["amount"]).Cmp(bmR(amount)), "amount %v, want %s", inv["amount"], amount)
	return ptfPaid{before, after}
}

// ptfClient makes a client of the code's partner (of the code's type)
// named name, with a whatsapp subscription out of its test period; it
// answers the client and the subscription.
func ptfClient(t *testing.T, code, name string) (company, map[string]any) {
	t.Helper()
	c := ptClient(t, code, name)
	mustCreate(t, c, "whatsapp", nil)
	sub := bmAdjust(t, c, subscriptionOf(t, c, "whatsapp")["id"], map[string]any{"clear_test_until": true})
	return c, sub
}

// ptfBalance is the partner's balance answer.
func ptfBalance(t *testing.T, pt ptPartner) response {
	t.Helper()
	return api(t, "GET", ptPath(pt.company, "/finance/balance"), nil, key(pt.Key)...)
}

// ptfPayout is POST /partners/finance/payouts.
func ptfPayout(t *testing.T, pt ptPartner, body any) response {
	t.Helper()
	return api(t, "POST", ptPath(pt.company, "/finance/payouts"), body, key(pt.Key)...)
}

func ptfPayouts(t *testing.T, pt ptPartner) response {
	t.Helper()
	return api(t, "GET", ptPath(pt.company, "/finance/payouts"), nil, key(pt.Key)...)
}

// ptfClose is the operator's PATCH of a payout.
func ptfClose(t *testing.T, id any, body any) response {
	t.Helper()
	return api(t, "PATCH", p("/admin/v1/partner_payouts/%v", id), body, operator()...)
}

// ptfPayoutJSON is a payout as answered.
func ptfPayoutJSON(id any, status string, value, requisiteID, comment, created any) map[string]any {
	return map[string]any{"id": id, "status": status, "payout_type": "PAYOUT", "value": value,
		"requisite_id": requisiteID, "comment": comment, "created_at": created}
}

// ptfRequisite registers a requisite of the partner and answers its id.
func ptfRequisite(t *testing.T, pt ptPartner, body map[string]any) any {
	t.Helper()
	r := api(t, "POST", ptPath(pt.company, "/payments/requisites"), body, key(pt.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)["id"]
}

// ptfBelowMin is 400 31000 for a balance (two decimals as written).
func ptfBelowMin(t *testing.T, r response, balance string) {
	t.Helper()
	ptRequireErr(t, r, 400, 31000, "PARTNER_PAYOUT_INSUFFICIENT_BALANCE",
		"the balance "+balance+" is below the payout minimum 1000.00")
}

func ptfUnknownRequisite(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 404, 31004, "PARTNER_REQUISITE_NOT_FOUND", "partner requisite not found")
}

func ptfIncomplete(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 400, 31005, "PARTNER_REQUISITE_INCOMPLETE", "the requisite has no bic or current account")
}

func ptfLocked(t *testing.T, r response) {
	t.Helper()
	ptRequireErr(t, r, 409, 31001, "PARTNER_PAYOUT_LOCKED", "a payout is already in progress")
}

// ptfOpenDialogs opens n business dialogs of the company, as messaging
// does (billing's internal TakeWabaDialog); each is a waba_dialogs.opened
// event for partners.
func ptfOpenDialogs(t *testing.T, companyID int64, n int) {
	t.Helper()
	conn, err := server.DialInternal(stack.Addrs["billing"], internalToken)
	require.NoError(t, err)
	defer conn.Close()
	billing := billingv1.NewBillingInternalServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		res, err := billing.TakeWabaDialog(ctx, &billingv1.TakeWabaDialogRequest{CompanyId: companyID,
			IdempotencyKey: p("ptf-%d-%d-%d", companyID, time.Now().UnixNano(), i)})
		require.NoError(t, err)
		require.True(t, res.GetTaken(), "dialog %d taken", i)
	}
}

// TestPartnerFinanceRewards: a referral client's subscription payments
// earn SUBSCRIPTIONS_REWARD at referral_commission_percent, one row per
// (subscription type, period months, percent) and month, each payment
// adding to its row (topups summed, the value rounded half up once, from
// the sum); the base is after percent discounts; a partner-type client's
// subscription earns nothing; business dialogs of both types earn
// WABA_DIALOGS_REWARD at waba_dialogs_commission_percent, a new percent a
// new row, spendings the client's dialogs opened that month × 5.00; the
// filters; the balance is the sum.
func TestPartnerFinanceRewards(t *testing.T) {
	t.Parallel()
	ptfAwayFromMonthEnd()
	pt := ptNewPartner(t, "Finance Rewards")
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"referral_commission_percent": 7.15}), 200,
		ptSettings(pt.ID, ptCommissions(20, 7.15, 10), nil))
	k := key(pt.Key)
	rewards := ptfRewardsPath(pt, "")
	// Nothing yet.
	requireJSON(t, api(t, "GET", rewards, nil, k...), 200, ptfRewards())
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 0})

	ref, refSub := ptfClient(t, pt.ReferralCode, "Fin Referral")
	wa := refSub["subscription_type"].(string)
	require.Equal(t, "CONNECTION_WHATSAPP", wa)
	part, partSub := ptfClient(t, pt.Code, "Fin Partner Client")

	// 1. START × 1 × 1 month = 990, no discount: 990 × 7.15 / 100 =
	// 70.785 → 70.79 (half up; half even would give 70.78).
	pay1 := ptfPay(t, ref, "990", bmCardRU(nil, bmSubItem(refSub["id"], "START", 1)))
	row1 := ptfSubReward(ref, "Fin Referral", wa, 1, 990, 70.79, 7.15, pay1.at())
	ptfAwait(t, rewards, ptfRewards(row1), k...)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 70.79})

	// 2. The same again with the referral code as promo code: 990 less 10
	// % promo = 891, the base. Row 1: topups 990 + 891 = 1881; 1881 ×
	// 7.15 / 100 = 134.4915 → 134.49 (the parts rounded apart would make
	// 70.79 + 63.71 = 134.50). created_at stays the first payment's.
	ptfPay(t, ref, "891", bmCardRU(map[string]any{"promo_code": pt.ReferralCode}, bmSubItem(refSub["id"], "START", 1)))
	// 3. Three months: 990 × 3 = 2970 less 5 % = 2821.50, a row of its
	// own (period_months 3): 2821.50 × 7.15 / 100 = 201.737... → 201.74.
	pay3 := ptfPay(t, ref, "2821.5", bmCardRU(map[string]any{"period_months": 3}, bmSubItem(refSub["id"], "START", 1)))
	row1 = ptfSubReward(ref, "Fin Referral", wa, 1, 1881, 134.49, 7.15, pay1.at())
	row2 := ptfSubReward(ref, "Fin Referral", wa, 3, 2821.5, 201.74, 7.15, pay3.at())
	// 4. The partner-type client's own subscription payment: 990, nothing
	// (its discount is the partner's commission).
	ptfPay(t, part, "990", bmCardRU(nil, bmSubItem(partSub["id"], "START", 1)))
	// 5. Its business dialogs earn: 100 × 5.00 = 500 × 10 % = 50.
	pay5 := ptfPay(t, part, "500", bmCardRU(nil, bmDialogsItem(100)))
	row3 := ptfDialogsReward(part, "Fin Partner Client", 500, 0, 50, 10, pay5.at())
	// 6. The referral's: 2000 × 5.00 = 10000 × 10 % = 1000.
	pay6 := ptfPay(t, ref, "10000", bmCardRU(nil, bmDialogsItem(2000)))
	row4 := ptfDialogsReward(ref, "Fin Referral", 10000, 0, 1000, 10, pay6.at())
	// Billing's events arrive in order: once row 4 is there, payment 4 was
	// applied too, and made nothing.
	ptfAwait(t, rewards, ptfRewards(row1, row2, row3, row4), k...)

	// 7. A new dialogs percent makes a new row: 100 × 5.00 = 500 × 12.5 %
	// = 62.50.
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"waba_dialogs_commission_percent": 12.5}), 200,
		ptSettings(pt.ID, ptCommissions(20, 7.15, 12.5), nil))
	pay7 := ptfPay(t, ref, "500", bmCardRU(nil, bmDialogsItem(100)))
	row5 := ptfDialogsReward(ref, "Fin Referral", 500, 0, 62.5, 12.5, pay7.at())
	ptfAwait(t, rewards, ptfRewards(row1, row2, row3, row4, row5), k...)

	// 8. The referral opens 3 dialogs: each of its dialogs rows spends 3
	// × 5.00 = 15; the other client's row is untouched.
	ptfOpenDialogs(t, ref.ID, 3)
	row4["period_spendings_value"], row5["period_spendings_value"] = 15, 15
	all := ptfRewards(row1, row2, row3, row4, row5)
	ptfAwait(t, rewards, all, k...)

	// The balance: 134.49 + 201.74 + 50 + 1000 + 62.50 = 1448.73.
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 1448.73})

	// Filters: this month is everything, another month nothing; one
	// client; a company that is not a client has none.
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, "period="+ptfPeriod()), nil, k...), 200, all)
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, "period=2020-01"), nil, k...), 200, ptfRewards())
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, p("partner_company_id=%d", ref.ID)), nil, k...), 200,
		ptfRewards(row1, row2, row4, row5))
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, p("partner_company_id=%d&period=%s", part.ID, ptfPeriod())), nil, k...), 200,
		ptfRewards(row3))
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, p("partner_company_id=%d&period=2020-01", part.ID)), nil, k...), 200,
		ptfRewards())
	requireJSON(t, api(t, "GET", ptfRewardsPath(pt, p("partner_company_id=%d", pt.ID)), nil, k...), 200, ptfRewards())
	for _, q := range []string{"period=2024-13", "period=2024-00", "period=2024-1", "period=202401", "period=2024-01-01",
		"period=", "period=abcd-ef", "period=24-01"} {
		r := api(t, "GET", ptfRewardsPath(pt, q), nil, k...)
		require.Equal(t, 422, r.Status, "%s: %s", q, r.Body)
		requireLoc(t, r, "query", "period")
	}
	r := api(t, "GET", ptfRewardsPath(pt, "partner_company_id=abc"), nil, k...)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	requireLoc(t, r, "query", "partner_company_id")

	// A read-only key reads the same.
	ro := key(newKey(t, pt.ID, "partners:read"))
	requireJSON(t, api(t, "GET", rewards, nil, ro...), 200, all)
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/finance/balance"), nil, ro...), 200, map[string]any{"balance": 1448.73})

	// Another partner has none of it.
	other := ptNewPartner(t, "Finance Rewards Other")
	requireJSON(t, api(t, "GET", ptfRewardsPath(other, p("partner_company_id=%d", ref.ID)), nil, key(other.Key)...), 200, ptfRewards())
	requireJSON(t, api(t, "GET", ptfRewardsPath(other, ""), nil, key(other.Key)...), 200, ptfRewards())
	requireJSON(t, ptfBalance(t, other), 200, map[string]any{"balance": 0})
}

// TestPartnerFinanceNoReward: a company that pays and is no partner's
// client earns nobody anything; a referral's expired and cancelled
// invoices earn nothing either.
func TestPartnerFinanceNoReward(t *testing.T) {
	t.Parallel()
	ptfAwayFromMonthEnd()
	pt := ptNewPartner(t, "Finance No Reward")
	k := key(pt.Key)
	ref, _ := ptfClient(t, pt.ReferralCode, "NoReward Referral")
	// Expired and cancelled invoices of the referral.
	exp := bmOK(t, bmInvoice(t, ref, bmStored(bmCardRU(nil, bmDialogsItem(300)))))
	require.Equal(t, 200, bmExpire(t, exp["id"]).Status)
	can := bmOK(t, bmInvoice(t, ref, bmStored(bmCardRU(nil, bmDialogsItem(400)))))
	require.Equal(t, 200, bmCancel(t, can["id"]).Status)
	// A stranger's payment.
	stranger := newCompany(t, nil)
	ptfPay(t, stranger, "1000", bmCardRU(nil, bmDialogsItem(200)))
	// Then a paid one: 20 × 5.00 = 100 × 10 % = 10; once it is there, the
	// ones before were applied.
	paid := ptfPay(t, ref, "100", bmCardRU(nil, bmDialogsItem(20)))
	ptfAwait(t, ptfRewardsPath(pt, ""), ptfRewards(ptfDialogsReward(ref, "NoReward Referral", 100, 0, 10, 10, paid.at())), k...)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 10})
}

// TestPartnerFinancePayouts: a payout's errors in the design's order
// (unknown requisite 404 31004, incomplete 400 31005, a CREATED payout
// 409 31001, a balance below 1000.00 400 31000), the whole balance taken
// (exactly the minimum is enough), the list newest first, the operator
// rejecting (the value back) and paying, 404 31006 and 409 31007, and 8
// parallel requests making one payout.
func TestPartnerFinancePayouts(t *testing.T) {
	t.Parallel()
	ptfAwayFromMonthEnd()
	pt := ptNewPartner(t, "Finance Payouts")
	k := key(pt.Key)
	other := ptNewPartner(t, "Finance Payouts Other")
	bank := map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Payee LLC", "bic": "044525225",
		"current_account": "40702810900000000001"}
	complete := ptfRequisite(t, pt, bank)
	noBank := ptfRequisite(t, pt, map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "No Bank LLC"})
	bicOnly := ptfRequisite(t, pt, map[string]any{"tin": "500100732259", "name": "Bic Only", "type": "individual_entrepreneur",
		"bic": "044525225"})
	accountOnly := ptfRequisite(t, pt, map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Account Only",
		"current_account": "40702810900000000001"})
	foreign := ptfRequisite(t, other, bank)

	// errorsBefore checks every error that comes before the one under
	// test: unknown requisites, then incomplete ones.
	errorsBefore := func() {
		t.Helper()
		for _, id := range []any{foreign, 999_999_999} {
			ptfUnknownRequisite(t, ptfPayout(t, pt, map[string]any{"requisite_id": id}))
		}
		for _, id := range []any{noBank, bicOnly, accountOnly} {
			ptfIncomplete(t, ptfPayout(t, pt, map[string]any{"requisite_id": id}))
		}
	}
	requireLoc(t, ptfPayout(t, pt, map[string]any{}), "body", "requisite_id")
	// No balance at all.
	errorsBefore()
	ptfBelowMin(t, ptfPayout(t, pt, map[string]any{"requisite_id": complete}), "0.00")

	// 1999 dialogs: 9995 × 10 % = 999.50, below the minimum.
	ref, _ := ptfClient(t, pt.ReferralCode, "Payout Referral")
	pay1 := ptfPay(t, ref, "9995", bmCardRU(nil, bmDialogsItem(1999)))
	rewards := ptfRewardsPath(pt, "")
	ptfAwait(t, rewards, ptfRewards(ptfDialogsReward(ref, "Payout Referral", 9995, 0, 999.5, 10, pay1.at())), k...)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 999.5})
	errorsBefore()
	ptfBelowMin(t, ptfPayout(t, pt, map[string]any{"requisite_id": complete}), "999.50")
	requireJSON(t, ptfPayouts(t, pt), 200, []any{})

	// One more: 10000 × 10 % = 1000.00, exactly the minimum.
	ptfPay(t, ref, "5", bmCardRU(nil, bmDialogsItem(1)))
	ptfAwait(t, rewards, ptfRewards(ptfDialogsReward(ref, "Payout Referral", 10000, 0, 1000, 10, pay1.at())), k...)
	before := bmAt(0)
	r := ptfPayout(t, pt, map[string]any{"requisite_id": complete})
	first := requireJSON(t, r, 200, ptfPayoutJSON(anyID, "CREATED", 1000, complete, nil,
		bmTimeBetween(before.Add(-time.Millisecond), time.Now().Add(time.Millisecond)))).(map[string]any)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 0})
	requireJSON(t, ptfPayouts(t, pt), 200, []any{first})
	// With a CREATED payout: the requisite errors first, then 409 (not the
	// balance).
	errorsBefore()
	ptfLocked(t, ptfPayout(t, pt, map[string]any{"requisite_id": complete}))
	// The other partner's list is its own.
	requireJSON(t, ptfPayouts(t, other), 200, []any{})

	// The operator rejects it: the value is back.
	rejected := bmWith(first, map[string]any{"status": "REJECTED", "comment": "Wrong account"})
	requireJSON(t, ptfClose(t, first["id"], map[string]any{"status": "REJECTED", "comment": "Wrong account"}), 200, rejected)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 1000})
	requireJSON(t, ptfPayouts(t, pt), 200, []any{rejected})
	// Not CREATED any more; unknown; a status that closes nothing.
	ptRequireErr(t, ptfClose(t, first["id"], map[string]any{"status": "PAID"}), 409, 31007, "PARTNER_PAYOUT_NOT_ACTIVE",
		p("payout %v is REJECTED, not CREATED", first["id"]))
	ptRequireErr(t, ptfClose(t, 999_999_999, map[string]any{"status": "PAID"}), 404, 31006, "PARTNER_PAYOUT_NOT_FOUND",
		"payout not found")
	requireLoc(t, ptfClose(t, first["id"], map[string]any{"status": "CREATED"}), "body", "status")
	requireJSON(t, ptfPayouts(t, pt), 200, []any{rejected})

	// 8 at once: one payout of the whole balance, the others 409 31001.
	const n = 8
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tryCall("POST", ptPath(pt.company, "/finance/payouts"), map[string]any{"requisite_id": complete}, k...)
		}()
	}
	wg.Wait()
	var second map[string]any
	for i := range n {
		require.NoError(t, errs[i])
		if results[i].Status == 200 {
			require.Nil(t, second, "a second payout: %s", results[i].Body)
			second = requireJSON(t, results[i], 200, ptfPayoutJSON(anyID, "CREATED", 1000, complete, nil, anyTime)).(map[string]any)
			continue
		}
		ptfLocked(t, results[i])
	}
	require.NotNil(t, second, "no payout was made")
	require.NotEqual(t, first["id"], second["id"])
	require.False(t, bmParseTS(t, second["created_at"]).Before(bmParseTS(t, first["created_at"])))
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 0})
	requireJSON(t, ptfPayouts(t, pt), 200, []any{second, rejected})

	// The operator pays it (no comment: null); a second PATCH is 409.
	paid := bmWith(second, map[string]any{"status": "PAID"})
	requireJSON(t, ptfClose(t, second["id"], map[string]any{"status": "PAID"}), 200, paid)
	ptRequireErr(t, ptfClose(t, second["id"], map[string]any{"status": "REJECTED", "comment": "late"}), 409, 31007,
		"PARTNER_PAYOUT_NOT_ACTIVE", p("payout %v is PAID, not CREATED", second["id"]))
	requireJSON(t, ptfPayouts(t, pt), 200, []any{paid, rejected})
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 0})
	ptfBelowMin(t, ptfPayout(t, pt, map[string]any{"requisite_id": complete}), "0.00")

	// A paid payout stays counted: one more dialog, 10005 × 10 % =
	// 1000.50, balance 1000.50 - 1000 = 0.50.
	ptfPay(t, ref, "5", bmCardRU(nil, bmDialogsItem(1)))
	ptfAwait(t, rewards, ptfRewards(ptfDialogsReward(ref, "Payout Referral", 10005, 0, 1000.5, 10, pay1.at())), k...)
	requireJSON(t, ptfBalance(t, pt), 200, map[string]any{"balance": 0.5})
	ptfBelowMin(t, ptfPayout(t, pt, map[string]any{"requisite_id": complete}), "0.50")
	requireJSON(t, ptfPayouts(t, pt), 200, []any{paid, rejected})
}

// TestPartnerFinanceNotPartner: the finance routes are 403 for a company
// that is not a partner (a partner's client included) and for another
// partner's key; partners:read reads but does not make payouts.
func TestPartnerFinanceNotPartner(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Finance Access")
	client := ptClient(t, pt.ReferralCode, "Finance Access Client")
	plain := newCompany(t, nil)
	other := ptNewPartner(t, "Finance Access Other")
	routes := func(c company) [][3]any {
		return [][3]any{
			{"GET", ptPath(c, "/finance/balance"), nil},
			{"GET", ptPath(c, "/finance/rewards"), nil},
			{"GET", ptPath(c, "/finance/rewards?period=bad"), nil},
			{"GET", ptPath(c, "/finance/payouts"), nil},
			{"POST", ptPath(c, "/finance/payouts"), map[string]any{"requisite_id": 1}},
			{"POST", ptPath(c, "/finance/payouts"), map[string]any{}},
		}
	}
	for _, c := range []company{plain, client} {
		for _, rt := range routes(c) {
			bmRequireForbidden(t, api(t, rt[0].(string), rt[1].(string), rt[2], key(c.Key)...))
		}
	}
	for _, rt := range routes(pt.company) {
		bmRequireForbidden(t, api(t, rt[0].(string), rt[1].(string), rt[2], key(other.Key)...))
		bmRequireForbidden(t, api(t, rt[0].(string), rt[1].(string), rt[2], key(client.Key)...))
	}
	ro := key(newKey(t, pt.ID, "partners:read"))
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/finance/balance"), nil, ro...), 200, map[string]any{"balance": 0})
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/finance/rewards"), nil, ro...), 200, ptfRewards())
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/finance/payouts"), nil, ro...), 200, []any{})
	bmRequireForbidden(t, api(t, "POST", ptPath(pt.company, "/finance/payouts"), map[string]any{"requisite_id": 1}, ro...))
	// The operator's route needs the operator.
	r := api(t, "PATCH", "/admin/v1/partner_payouts/1", map[string]any{"status": "PAID"}, key(pt.Key)...)
	require.Contains(t, []int{401, 403}, r.Status, "%s", r.Body)
}
