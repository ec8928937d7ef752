package e2e

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Paying, expiring and cancelling invoices (billing.md "Invoices",
// "Partner invoices and cancellation", "Operator and test mode"): paying
// moves paid_until by period_months calendar months from max(now,
// paid_until), makes the plan and size the invoiced ones and adds bought
// dialogs to the balance; expired and cancelled invoices change nothing;
// only a new invoice can be paid, expired or cancelled (409 22022).

// bmMonthsFrom accepts now + n calendar months for a now in [before, after].
func bmMonthsFrom(n int, before, after time.Time) matcher {
	return bmTimeBetween(bmAddMonths(before, n).Add(-time.Millisecond), bmAddMonths(after, n).Add(time.Millisecond))
}

// TestInvoicePayCalendarMonths: from a paid_until in the future the top-up
// is exact: the same day and time of day n months on, or the month's last
// day when it is shorter.
func TestInvoicePayCalendarMonths(t *testing.T) {
	t.Parallel()
	// The helper itself, on the examples of billing.md.
	jan31 := time.Date(2031, 1, 31, 10, 0, 0, 0, time.UTC)
	require.Equal(t, time.Date(2031, 2, 28, 10, 0, 0, 0, time.UTC), bmAddMonths(jan31, 1))
	require.Equal(t, time.Date(2032, 2, 29, 10, 0, 0, 0, time.UTC), bmAddMonths(jan31.AddDate(1, 0, 0), 1))

	c := newCompany(t, nil)
	for _, tc := range []struct {
		from   string
		months int
		to     string
		amount float64
	}{
		// START × 1 × 1 = 990, no discount.
		{"2031-01-31T10:20:30.123456Z", 1, "2031-02-28T10:20:30.123456Z", 990},
		{"2032-01-31T23:59:59.999999Z", 1, "2032-02-29T23:59:59.999999Z", 990},
		{"2031-05-15T08:00:00.000000Z", 1, "2031-06-15T08:00:00.000000Z", 990},
		{"2031-12-31T05:00:00.000000Z", 1, "2032-01-31T05:00:00.000000Z", 990},
		// 990 × 3 = 2970, 5 % → 148.50; 2821.50.
		{"2031-11-30T00:00:00.000000Z", 3, "2032-02-29T00:00:00.000000Z", 2821.5},
		// 990 × 6 = 5940, 10 % → 594; 5346.
		{"2031-08-31T12:00:00.000000Z", 6, "2032-02-29T12:00:00.000000Z", 5346},
		// 990 × 12 = 11880, 20 % → 2376; 9504.
		{"2031-03-31T05:06:07.000001Z", 12, "2032-03-31T05:06:07.000001Z", 9504},
	} {
		from, err := time.Parse(time.RFC3339Nano, tc.from)
		require.NoError(t, err)
		require.Equal(t, tc.to, bmTS(bmAddMonths(from, tc.months)), "helper, %s + %d", tc.from, tc.months)

		sub := bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "START", "max_size": 1, "paid_until": tc.from})
		require.Equal(t, tc.from, sub["paid_until"])
		body := bmCardRU(map[string]any{"period_months": tc.months}, bmSubItem(sub["id"], "START", 1))
		stored := bmOK(t, bmInvoice(t, c, bmStored(body)))
		require.EqualValues(t, tc.amount, stored["amount"], "%s + %d", tc.from, tc.months)
		item := stored["summary"].(map[string]any)["items"].([]any)[0].(map[string]any)
		require.Equal(t, tc.from, item["old_paid_until"])
		r := bmPay(t, stored["id"])
		requireJSON(t, r, 200, bmWith(stored, map[string]any{"status": "paid"}))
		got := bmSub(t, c, sub["id"])
		require.Equal(t, tc.to, got["paid_until"], "%s + %d months", tc.from, tc.months)
		require.Equal(t, "START", got["subscription_plan"])
		require.EqualValues(t, 1, got["max_size"])
		requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", stored["id"]), nil, key(c.Key)...), 200, bmWith(stored, map[string]any{"status": "paid"}))
	}
}

// TestInvoicePay: what paying applies, for each start of the top-up.
func TestInvoicePay(t *testing.T) {
	t.Parallel()

	t.Run("test period: from now", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", nil)
		require.Nil(t, sub["paid_until"])
		// STANDARD 2 × 1: 3980; test 10 % → 398; 3582.
		inv, before, after := bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 2)))
		require.EqualValues(t, 3582, inv["amount"])
		got := bmSub(t, c, sub["id"])
		requireValue(t, bmWith(sub, map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmMonthsFrom(1, before, after),
			"test_until": anyPresent, "advance": noAdvance}), got)

		// advance.is_available follows the rules now that it was really
		// paid: at most 2 days left → true; more, or none → false.
		requireValue(t, map[string]any{"is_active": false, "is_available": true},
			bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(24 * time.Hour))})["advance"])
		require.Equal(t, map[string]any{"is_active": false, "is_available": true}, bmSub(t, c, sub["id"])["advance"])
		requireValue(t, noAdvance, bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(72 * time.Hour))})["advance"])
		requireValue(t, noAdvance, bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(bmAt(-time.Hour))})["advance"])
		require.Equal(t, noAdvance, bmSub(t, c, sub["id"])["advance"])
	})

	t.Run("paid period over: from now", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 1,
			"paid_until": bmTS(bmAt(-10 * 24 * time.Hour)), "clear_test_until": true})
		// STANDARD 1 × 3: 5970; 5 % → 298.50; 5671.50.
		inv, before, after := bmStoreAndPay(t, c, bmCardRU(map[string]any{"period_months": 3}, bmSubItem(sub["id"], "STANDARD", 1)))
		require.EqualValues(t, 5671.5, inv["amount"])
		requireValue(t, bmWith(sub, map[string]any{"paid_until": bmMonthsFrom(3, before, after)}), bmSub(t, c, sub["id"]))
	})

	t.Run("paid period running: from paid_until, with the upgrade", func(t *testing.T) {
		t.Parallel()
		until := bmAt(10 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmTS(until), "clear_test_until": true})
		// STANDARD 5 × 1: top-up 9452.50 + an upgrade (TestInvoicePreviewUpgrade);
		// paid_until + 1 calendar month exactly, size 5.
		bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 5)))
		requireValue(t, bmWith(sub, map[string]any{"max_size": 5, "paid_until": bmTS(bmAddMonths(until, 1))}), bmSub(t, c, sub["id"]))
	})

	t.Run("plan changes", func(t *testing.T) {
		t.Parallel()
		until := bmAt(3 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 3, "paid_until": bmTS(until), "clear_test_until": true})
		// Down to START 1 (one connection held): 990, no upgrade;
		// paid_until + 1 month.
		inv, _, _ := bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1)))
		require.EqualValues(t, 990, inv["amount"])
		requireValue(t, bmWith(sub, map[string]any{"subscription_plan": "START", "max_size": 1, "paid_until": bmTS(bmAddMonths(until, 1))}), bmSub(t, c, sub["id"]))
	})

	t.Run("dialogs add to the balance", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", nil)
		requireJSON(t, api(t, "GET", p("/admin/v1/companies/%d/billing", c.ID), nil, operator()...), 200,
			map[string]any{"company_id": c.ID, "payment_currency": "RUB", "payments_locked": false, "waba_dialogs_balance": 0})
		// 7 × 5.00 = 35.00.
		inv, _, _ := bmStoreAndPay(t, c, bmCardRU(nil, bmDialogsItem(7)))
		require.EqualValues(t, 35, inv["amount"])
		require.EqualValues(t, 7, bmBilling(t, c.ID)["waba_dialogs_balance"])
		require.Equal(t, sub, bmSub(t, c, sub["id"]))
		// Mixed: START 1 in the test period (891) + 3 dialogs (15) = 906;
		// both apply.
		inv, before, after := bmStoreAndPay(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1), bmDialogsItem(3)))
		require.EqualValues(t, 906, inv["amount"])
		require.EqualValues(t, 10, bmBilling(t, c.ID)["waba_dialogs_balance"])
		requireValue(t, bmMonthsFrom(1, before, after), bmSub(t, c, sub["id"])["paid_until"])
		// The operator's additions and the bought dialogs are one balance.
		requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 5}), 15)
		require.EqualValues(t, 15, bmBilling(t, c.ID)["waba_dialogs_balance"])
	})
}

// TestInvoiceZeroAmount: an invoice of amount 0 (FREE on a bot) is paid as
// soon as it is stored, with no payment URL; the subscription becomes FREE
// with paid_until null.
func TestInvoiceZeroAmount(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "telegram_bot", map[string]any{"clear_test_until": true})
	body := bmCardRU(nil, bmSubItem(sub["id"], "FREE", 1))
	preview := bmOK(t, bmInvoice(t, c, body))
	before := time.Now()
	inv := bmOK(t, bmInvoice(t, c, bmStored(body)))
	after := time.Now()
	bmRequireStored(t, inv, "paid", false, before, after)
	bmSameInvoice(t, preview, inv)
	require.EqualValues(t, 0, inv["amount"])
	bmRequireReceipt(t, inv)
	requireValue(t, bmWith(sub, map[string]any{"subscription_plan": "FREE", "paid_until": nil}), bmSub(t, c, sub["id"]))
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(c.Key)...), 200, map[string]any{"count": 1, "invoices": []any{inv}})
	// Already paid: nothing more to pay, expire or cancel.
	requireError(t, bmPay(t, inv["id"]), 409, 22022, "INVOICE_NOT_PAYABLE")
	requireError(t, bmExpire(t, inv["id"]), 409, 22022, "INVOICE_NOT_PAYABLE")
	requireError(t, bmCancel(t, inv["id"]), 409, 22022, "INVOICE_NOT_PAYABLE")
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", inv["id"]), nil, key(c.Key)...), 200, inv)

	// In the test period too: 10 % of 0 is 0.
	c2, sub2 := bmCompanyWith(t, "telegram_bot", nil)
	inv2 := bmOK(t, bmInvoice(t, c2, bmStored(bmCardRU(nil, bmSubItem(sub2["id"], "FREE", 1)))))
	require.Equal(t, "paid", inv2["status"])
	require.Nil(t, inv2["payment_url"])
	require.EqualValues(t, 0, inv2["amount"])
	got := bmSub(t, c2, sub2["id"])
	require.Equal(t, "FREE", got["subscription_plan"])
	require.Nil(t, got["paid_until"])
}

// TestInvoiceExpireCancel: expired and cancelled invoices apply nothing;
// paid, expired and cancelled are final (409 22022 on every move); an
// unknown invoice is 404 22021; these routes need the operator token.
func TestInvoiceExpireCancel(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
	// START 1 (990) + 2 dialogs (10) = 1000.
	body := bmStored(bmCardRU(nil, bmSubItem(sub["id"], "START", 1), bmDialogsItem(2)))
	unchanged := func() {
		t.Helper()
		require.Equal(t, sub, bmSub(t, c, sub["id"]))
		require.EqualValues(t, 0, bmBilling(t, c.ID)["waba_dialogs_balance"])
	}
	final := func(inv map[string]any) {
		t.Helper()
		for _, move := range []func(testing.TB, any) response{bmPay, bmExpire, bmCancel} {
			requireError(t, move(t, inv["id"]), 409, 22022, "INVOICE_NOT_PAYABLE")
		}
		requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", inv["id"]), nil, key(c.Key)...), 200, inv)
	}

	a := bmOK(t, bmInvoice(t, c, body))
	require.EqualValues(t, 1000, a["amount"])
	// Not with an API key, nor without credentials.
	for _, path := range []string{"/sandbox/v1/invoices/%v/pay", "/sandbox/v1/invoices/%v/expire", "/admin/v1/invoices/%v/cancel"} {
		require.Equal(t, 401, api(t, "POST", p(path, a["id"]), nil, key(c.Key)...).Status, path)
		require.Equal(t, 401, api(t, "POST", p(path, a["id"]), nil).Status, path)
	}
	a = requireJSON(t, bmExpire(t, a["id"]), 200, bmWith(a, map[string]any{"status": "expired"})).(map[string]any)
	unchanged()
	final(a)
	unchanged()

	b := bmOK(t, bmInvoice(t, c, body))
	b = requireJSON(t, bmCancel(t, b["id"]), 200, bmWith(b, map[string]any{"status": "cancelled"})).(map[string]any)
	unchanged()
	final(b)
	unchanged()

	d := bmOK(t, bmInvoice(t, c, body))
	before := time.Now()
	d = requireJSON(t, bmPay(t, d["id"]), 200, bmWith(d, map[string]any{"status": "paid"})).(map[string]any)
	after := time.Now()
	paid := bmSub(t, c, sub["id"])
	requireValue(t, bmWith(sub, map[string]any{"paid_until": bmMonthsFrom(1, before, after)}), paid)
	require.EqualValues(t, 2, bmBilling(t, c.ID)["waba_dialogs_balance"])
	final(d)
	// Paid once only.
	require.Equal(t, paid, bmSub(t, c, sub["id"]))
	require.EqualValues(t, 2, bmBilling(t, c.ID)["waba_dialogs_balance"])

	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(c.Key)...), 200, map[string]any{"count": 3, "invoices": []any{d, b, a}})
	for _, move := range []func(testing.TB, any) response{bmPay, bmExpire, bmCancel} {
		requireError(t, move(t, 999999999999), 404, 22021, "INVOICE_NOT_FOUND")
	}
}

// TestInvoicePayConcurrent: eight payments of one invoice at once: exactly
// one applies.
func TestInvoicePayConcurrent(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 1,
		"paid_until": "2031-06-30T00:00:00Z", "clear_test_until": true})
	// STANDARD 1 × 1: 1990 + 4 dialogs: 20 → 2010.
	inv := bmOK(t, bmInvoice(t, c, bmStored(bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 1), bmDialogsItem(4)))))
	require.EqualValues(t, 2010, inv["amount"])
	const n = 8
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tryCall("POST", p("/sandbox/v1/invoices/%v/pay", inv["id"]), nil, operator()...)
		}()
	}
	wg.Wait()
	ok := 0
	for i := range n {
		require.NoError(t, errs[i])
		switch results[i].Status {
		case 200:
			ok++
			var got map[string]any
			require.NoError(t, json.Unmarshal(results[i].Body, &got))
			require.Equal(t, "paid", got["status"])
		case 409:
			requireError(t, results[i], 409, 22022, "INVOICE_NOT_PAYABLE")
		default:
			require.Failf(t, "unexpected answer", "%d %s", results[i].Status, results[i].Body)
		}
	}
	require.Equal(t, 1, ok)
	// One month once: 2031-06-30 → 2031-07-30; 4 dialogs once.
	require.Equal(t, "2031-07-30T00:00:00.000000Z", bmSub(t, c, sub["id"])["paid_until"])
	require.EqualValues(t, 4, bmBilling(t, c.ID)["waba_dialogs_balance"])
	require.Equal(t, "paid", bmOK(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", inv["id"]), nil, key(c.Key)...))["status"])
}

// TestBillingOperatorSettings: the operator reads and sets a company's
// payment currency and lock; the company card shows the same values.
func TestBillingOperatorSettings(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	path := p("/admin/v1/companies/%d/billing", c.ID)
	state := func(currency string, locked bool, balance int) map[string]any {
		return map[string]any{"company_id": c.ID, "payment_currency": currency, "payments_locked": locked, "waba_dialogs_balance": balance}
	}
	card := func(currency string, locked bool) {
		t.Helper()
		var m map[string]any
		for deadline := time.Now().Add(waitFor); ; time.Sleep(tick) {
			r := api(t, "GET", p("/v2/companies/%d", c.ID), nil, key(c.Key)...)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			m = r.JSON(t)
			if (m["payment_currency"] == currency && m["payments_locked"] == locked) || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, currency, m["payment_currency"], "company card")
		require.Equal(t, locked, m["payments_locked"], "company card")
	}
	requireJSON(t, api(t, "GET", path, nil, operator()...), 200, state("RUB", false, 0))
	card("RUB", false)
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 3}), 3)
	requireJSON(t, api(t, "GET", path, nil, operator()...), 200, state("RUB", false, 3))

	requireJSON(t, api(t, "PATCH", path, map[string]any{"payment_currency": "USD"}, operator()...), 200, state("USD", false, 3))
	card("USD", false)
	requireJSON(t, api(t, "PATCH", path, map[string]any{"payments_locked": true}, operator()...), 200, state("USD", true, 3))
	card("USD", true)
	requireJSON(t, api(t, "PATCH", path, map[string]any{}, operator()...), 200, state("USD", true, 3))
	requireJSON(t, api(t, "GET", path, nil, operator()...), 200, state("USD", true, 3))
	requireLoc(t, api(t, "PATCH", path, map[string]any{"payment_currency": "EUR"}, operator()...), "body", "payment_currency")
	requireJSON(t, api(t, "PATCH", path, map[string]any{"payment_currency": "RUB", "payments_locked": false}, operator()...), 200, state("RUB", false, 3))
	card("RUB", false)

	unknown := p("/admin/v1/companies/%d/billing", c.ID+1_000_000_000)
	requireError(t, api(t, "GET", unknown, nil, operator()...), 404, 8000, "COMPANY_NOT_FOUND")
	requireError(t, api(t, "PATCH", unknown, map[string]any{"payments_locked": true}, operator()...), 404, 8000, "COMPANY_NOT_FOUND")
	require.Equal(t, 401, api(t, "GET", path, nil, key(c.Key)...).Status)
	require.Equal(t, 401, api(t, "PATCH", path, map[string]any{"payments_locked": true}, key(c.Key)...).Status)
	requireJSON(t, api(t, "GET", path, nil, operator()...), 200, state("RUB", false, 3))
}
