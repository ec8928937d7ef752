package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Invoices end to end, from billing.md (the authority) and spec 2.13/4.8.
// Prices: START 990, STANDARD 1990 a connection slot a month, FREE 0; a
// business dialog 5.00. Discounts add up (cap 50 %): period 1/3/6/12 →
// 0/5/10/20; quantity by the new size 1-4/5-9/10-49/50+ → 0/5/10/15; test
// period 10. Every amount below is worked out by hand in the comments.

// bmRequirePreview checks a whole preview answer and its receipt lines.
func bmRequirePreview(t *testing.T, r response, summary map[string]any, amount any, lines ...bmLine) map[string]any {
	t.Helper()
	got := requireJSON(t, r, 200, bmPreview(summary, amount)).(map[string]any)
	bmRequireReceipt(t, got, lines...)
	return got
}

// TestInvoicePreviewAmounts: previews compute exact amounts, store nothing,
// and carry every field (id, status, lifetime, payment_url, created_at null).
func TestInvoicePreviewAmounts(t *testing.T) {
	t.Parallel()
	noTest := map[string]any{"clear_test_until": true}

	t.Run("START 1 month", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", noTest)
		// 990 × size 1 × 1 month = 990; period 1: 0 %, size 1: 0 %, no
		// test period → discount 0, amount 990.
		d := bmDiscounts(0, 0, 0)
		want := bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d)))
		r := bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1)))
		got := bmRequirePreview(t, r, want, 990, bmLine{1, "990"})
		bmRequireRaw(t, r, `"amount":990,"currency":"RUB"`, `"top_up_amount":{"amount":990,"discount":0,`, `"total_discount":0,`)
		// period_months absent is 1; preview true is the default; null
		// promo_code, card_provider and company_requisite_id count as
		// absent. Same answer each time.
		for _, extra := range []map[string]any{
			{"period_months": 1},
			{"preview": true},
			{"promo_code": nil, "card_provider": nil, "company_requisite_id": nil},
		} {
			again := bmOK(t, bmInvoice(t, c, bmCardRU(extra, bmSubItem(sub["id"], "START", 1))))
			require.Equal(t, got, again, "%v", extra)
		}
		// The same without the trailing slash.
		again := bmOK(t, api(t, "POST", cpath(c, "/subscriptions/invoices"), bmCardRU(nil, bmSubItem(sub["id"], "START", 1)), key(c.Key)...))
		require.Equal(t, got, again)
		// Nothing is stored, nothing changes.
		requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(c.Key)...), 200, map[string]any{"count": 0, "invoices": []any{}})
		require.Equal(t, sub, bmSub(t, c, sub["id"]))
	})

	t.Run("STANDARD size 3, 3 months", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", noTest)
		// 1990 × 3 × 3 = 17910; period 3: 5 %, size 3: 0 % → discount
		// 17910 × 5 / 100 = 895.50; amount 17910 − 895.50 = 17014.50.
		d := bmDiscounts(5, 0, 0)
		want := bmSummary("CARD_RU", 3, 895.5, bmSubLine(sub, "STANDARD", 3, bmAmount(17014.5, 895.5, d), bmNoUpgrade(d)))
		r := bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 3}, bmSubItem(sub["id"], "STANDARD", 3)))
		bmRequirePreview(t, r, want, 17014.5, bmLine{1, "17014.5"})
		bmRequireRaw(t, r, `"amount":17014.5,"currency":"RUB"`, `"amount":17014.5,"discount":895.5,`, `"total_discount":895.5,`,
			`"period_discount_percent":5,`)
	})

	for _, tc := range []struct {
		name                     string
		size, period             int
		periodPct, qtyPct        int
		amount, discount, undisc float64
	}{
		// 1990 × 5 × 12 = 119400; 20 % + 5 % = 25 % → 29850; 89550.
		{"size 5, 12 months", 5, 12, 20, 5, 89550, 29850, 119400},
		// 1990 × 10 × 12 = 238800; 20 % + 10 % = 30 % → 71640; 167160.
		{"size 10, 12 months", 10, 12, 20, 10, 167160, 71640, 238800},
		// 1990 × 60 × 12 = 1432800; 20 % + 15 % = 35 % → 501480; 931320.
		{"size 60, 12 months", 60, 12, 20, 15, 931320, 501480, 1432800},
		// 1990 × 1 × 6 = 11940; 10 % → 1194; 10746.
		{"size 1, 6 months", 1, 6, 10, 0, 10746, 1194, 11940},
		// Quantity boundaries, one month: 1990 × 4 = 7960, 0 %.
		{"size 4", 4, 1, 0, 0, 7960, 0, 7960},
		// 1990 × 9 = 17910; 5 % → 895.50; 17014.50.
		{"size 9", 9, 1, 0, 5, 17014.5, 895.5, 17910},
		// 1990 × 49 = 97510; 10 % → 9751; 87759.
		{"size 49", 49, 1, 0, 10, 87759, 9751, 97510},
		// 1990 × 50 = 99500; 15 % → 14925; 84575.
		{"size 50", 50, 1, 0, 15, 84575, 14925, 99500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.undisc, tc.amount+tc.discount)
			c, sub := bmCompanyWith(t, "", noTest)
			d := bmDiscounts(tc.periodPct, tc.qtyPct, 0)
			want := bmSummary("CARD_RU", tc.period, tc.discount, bmSubLine(sub, "STANDARD", tc.size, bmAmount(tc.amount, tc.discount, d), bmNoUpgrade(d)))
			r := bmInvoice(t, c, bmCardRU(map[string]any{"period_months": tc.period}, bmSubItem(sub["id"], "STANDARD", tc.size)))
			bmRequirePreview(t, r, want, tc.amount, bmLine{1, bmStr(bmDec(t, tc.amount))})
		})
	}

	t.Run("test period", func(t *testing.T) {
		t.Parallel()
		// A new connection's subscription: test_until in 3 days, paid_until
		// null → in its test period: 10 % more.
		c, sub := bmCompanyWith(t, "", nil)
		require.Nil(t, sub["paid_until"])
		require.NotNil(t, sub["test_until"])
		// 990 × 1 × 1 = 990; test 10 % → 99; 891.
		d := bmDiscounts(0, 0, 10)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1))),
			bmSummary("CARD_RU", 1, 99, bmSubLine(sub, "START", 1, bmAmount(891, 99, d), bmNoUpgrade(d))), 891, bmLine{1, "891"})
		// 1990 × 10 × 6 = 119400; 10 + 10 + 10 = 30 % → 35820; 83580.
		d = bmDiscounts(10, 10, 10)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 6}, bmSubItem(sub["id"], "STANDARD", 10))),
			bmSummary("CARD_RU", 6, 35820, bmSubLine(sub, "STANDARD", 10, bmAmount(83580, 35820, d), bmNoUpgrade(d))), 83580, bmLine{1, "83580"})
		// The most without a promo code: 1990 × 50 × 12 = 1194000; 20 + 15
		// + 10 = 45 % (under the 50 % cap) → 537300; 656700.
		d = bmDiscounts(20, 15, 10)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 12}, bmSubItem(sub["id"], "STANDARD", 50))),
			bmSummary("CARD_RU", 12, 537300, bmSubLine(sub, "STANDARD", 50, bmAmount(656700, 537300, d), bmNoUpgrade(d))), 656700, bmLine{1, "656700"})
	})

	t.Run("test_until with a paid_until is no test period", func(t *testing.T) {
		t.Parallel()
		// test_until stays later than now, but paid_until is not null (and
		// past: no remaining time, no upgrade) → no test discount.
		c, sub := bmCompanyWith(t, "", map[string]any{"paid_until": bmTS(bmAt(-24 * time.Hour))})
		require.NotNil(t, sub["test_until"])
		// 990, no discount.
		d := bmDiscounts(0, 0, 0)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1))),
			bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d))), 990, bmLine{1, "990"})
	})

	t.Run("WABA_DIALOGS", func(t *testing.T) {
		t.Parallel()
		// A company without any subscription buys business dialogs: 7 ×
		// 5.00 = 35.00, no discount.
		c := newCompany(t, nil)
		r := bmInvoice(t, c, bmCardRU(nil, bmDialogsItem(7)))
		bmRequirePreview(t, r, bmSummary("CARD_RU", 1, 0, bmDialogsLine(7, 35)), 35, bmLine{7, "5"})
		bmRequireRaw(t, r, `"price":5,`, `"amount":35,"currency":"RUB"`)
		// The period does not discount dialogs: 1 × 5.00 = 5.00.
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 12}, bmDialogsItem(1))),
			bmSummary("CARD_RU", 12, 0, bmDialogsLine(1, 5)), 5, bmLine{1, "5"})
	})

	t.Run("mixed", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", noTest)
		// SUBSCRIPTION STANDARD 3 × 3 months: 17014.50 (discount 895.50,
		// above) + WABA_DIALOGS 7: 35.00 → amount 17049.50; total_discount
		// 895.50 + 0 = 895.50; receipt: 1 × 17014.50 and 7 × 5.00.
		d := bmDiscounts(5, 0, 0)
		subLine := bmSubLine(sub, "STANDARD", 3, bmAmount(17014.5, 895.5, d), bmNoUpgrade(d))
		r := bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 3}, bmSubItem(sub["id"], "STANDARD", 3), bmDialogsItem(7)))
		bmRequirePreview(t, r, bmSummary("CARD_RU", 3, 895.5, subLine, bmDialogsLine(7, 35)), 17049.5, bmLine{1, "17014.5"}, bmLine{7, "5"})
		bmRequireRaw(t, r, `"amount":17049.5,"currency":"RUB"`)
		// Summary items keep the request's order.
		r = bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 3}, bmDialogsItem(7), bmSubItem(sub["id"], "STANDARD", 3)))
		bmRequirePreview(t, r, bmSummary("CARD_RU", 3, 895.5, bmDialogsLine(7, 35), subLine), 17049.5, bmLine{1, "17014.5"}, bmLine{7, "5"})
	})

	t.Run("two subscriptions", func(t *testing.T) {
		t.Parallel()
		c, wa := bmCompanyWith(t, "", noTest)
		tok, _ := botToken()
		mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
		bot := bmAdjust(t, c, subscriptionOf(t, c, "telegram_bot")["id"], noTest)
		// whatsapp START 1 × 3: 2970; 5 % → 148.50; 2821.50.
		// bot STANDARD 2 × 3: 11940; 5 % (size 2: 0 %) → 597; 11343.
		// amount 2821.50 + 11343 = 14164.50; total_discount 148.50 + 597 = 745.50.
		d := bmDiscounts(5, 0, 0)
		r := bmInvoice(t, c, bmCardRU(map[string]any{"period_months": 3}, bmSubItem(wa["id"], "START", 1), bmSubItem(bot["id"], "STANDARD", 2)))
		bmRequirePreview(t, r, bmSummary("CARD_RU", 3, 745.5,
			bmSubLine(wa, "START", 1, bmAmount(2821.5, 148.5, d), bmNoUpgrade(d)),
			bmSubLine(bot, "STANDARD", 2, bmAmount(11343, 597, d), bmNoUpgrade(d))), 14164.5, bmLine{1, "2821.5"}, bmLine{1, "11343"})
	})

	t.Run("CARD_OTHER ROBOKASSA", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", noTest)
		// 990, no discount; card_provider as sent, no charge fields.
		d := bmDiscounts(0, 0, 0)
		want := bmSummary("CARD_OTHER", 1, 0, bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d)))
		want["card_provider"] = "ROBOKASSA"
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "ROBOKASSA"}, bmSubItem(sub["id"], "START", 1))),
			want, 990, bmLine{1, "990"})
	})

	t.Run("BANK_TRANSFER", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", noTest)
		req := bmRequisite(t, c)
		// 990; summary.company_requisite is the requisite.
		d := bmDiscounts(0, 0, 0)
		want := bmSummary("BANK_TRANSFER", 1, 0, bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d)))
		want["company_requisite"] = req
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": req["id"]}, bmSubItem(sub["id"], "START", 1))),
			want, 990, bmLine{1, "990"})
	})

	t.Run("FREE on a bot", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "telegram_bot", noTest)
		// FREE: 0 × 1 × 1 = 0; amount 0, no receipt line.
		d := bmDiscounts(0, 0, 0)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "FREE", 1))),
			bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "FREE", 1, bmAmount(0, 0, d), bmNoUpgrade(d))), 0)
	})
}

// TestInvoicePreviewUpgrade: growing the plan or size inside a paid period
// adds an upgrade for the remaining time (paid_until − now, exact, in days
// / 30), less the same discounts, with its own receipt line; it depends on
// the instant, so it is checked between the instants before and after the
// request.
func TestInvoicePreviewUpgrade(t *testing.T) {
	t.Parallel()

	// upgrade runs one preview and checks the top-up exactly and the
	// upgrade within bounds; it answers the invoice.
	upgrade := func(t *testing.T, c company, sub map[string]any, until time.Time, body map[string]any, plan string, size, period int,
		topUp, topUpDiscount float64, d map[string]any, monthlyDiff, pct int64) map[string]any {
		t.Helper()
		before := time.Now()
		r := bmInvoice(t, c, body)
		after := time.Now()
		up := bmAmount(bmMoney, bmMoney, d)
		got := requireJSON(t, r, 200, bmPreview(bmSummary("CARD_RU", period, bmMoney,
			bmSubLine(sub, plan, size, bmAmount(topUp, topUpDiscount, d), up)), bmMoney)).(map[string]any)
		item := got["summary"].(map[string]any)["items"].([]any)[0].(map[string]any)
		upA, upD := bmRequireUpgrade(t, item["upgrade_amount"], monthlyDiff, pct, until, before, after)
		require.Positive(t, upA.Sign())
		// amount = top-up + upgrade; total_discount = both discounts; the
		// receipt has a line for each.
		require.Zero(t, bmDec(t, got["amount"]).Cmp(bmAdd(bmDec(t, topUp), upA)), "amount %v", got["amount"])
		require.Zero(t, bmDec(t, got["summary"].(map[string]any)["total_discount"]).Cmp(bmAdd(bmDec(t, topUpDiscount), upD)))
		bmRequireReceipt(t, got, bmLine{1, bmStr(bmDec(t, topUp))}, bmLine{1, upA.RatString()})
		return got
	}

	t.Run("size grows", func(t *testing.T) {
		t.Parallel()
		until := bmAt(10 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmTS(until), "clear_test_until": true})
		require.Equal(t, bmTS(until), sub["paid_until"])
		// top-up: 1990 × 5 × 1 = 9950; size 5: 5 % → 497.50; 9452.50.
		// upgrade: (1990 × 5 − 1990 × 2) = 5970 a month × ≈10 days / 30 ≈
		// 1990.00 (a little less: the 10 days have begun), less 5 % ≈
		// 99.50 → ≈ 1890.50.
		upgrade(t, c, sub, until, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 5)), "STANDARD", 5, 1,
			9452.5, 497.5, bmDiscounts(0, 5, 0), 5970, 5)
	})

	t.Run("plan grows", func(t *testing.T) {
		t.Parallel()
		until := bmAt(20 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"paid_until": bmTS(until), "clear_test_until": true})
		require.Equal(t, "START", sub["subscription_plan"])
		// top-up: 1990 × 1 × 3 = 5970; 5 % → 298.50; 5671.50.
		// upgrade: (1990 − 990) = 1000 a month × ≈20/30 ≈ 666.67, less 5 %
		// ≈ 33.33 → ≈ 633.33.
		upgrade(t, c, sub, until, bmCardRU(map[string]any{"period_months": 3}, bmSubItem(sub["id"], "STANDARD", 1)), "STANDARD", 1, 3,
			5671.5, 298.5, bmDiscounts(5, 0, 0), 1000, 5)
	})

	t.Run("big discounts", func(t *testing.T) {
		t.Parallel()
		until := bmAt(45 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmTS(until), "clear_test_until": true})
		// top-up: 1990 × 10 × 12 = 238800; 20 + 10 = 30 % → 71640; 167160.
		// upgrade: (19900 − 3980) = 15920 a month × ≈45/30 ≈ 23880, less
		// 30 % ≈ 7164 → ≈ 16716.
		upgrade(t, c, sub, until, bmCardRU(map[string]any{"period_months": 12}, bmSubItem(sub["id"], "STANDARD", 10)), "STANDARD", 10, 12,
			167160, 71640, bmDiscounts(20, 10, 0), 15920, 30)
	})

	t.Run("nothing grows", func(t *testing.T) {
		t.Parallel()
		until := bmAt(10 * 24 * time.Hour)
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 4, "paid_until": bmTS(until), "clear_test_until": true})
		// A smaller size (not below the one connection held): 1990 × 2 =
		// 3980, no discount; the difference is negative → upgrade 0.
		d := bmDiscounts(0, 0, 0)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 2))),
			bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "STANDARD", 2, bmAmount(3980, 0, d), bmNoUpgrade(d))), 3980, bmLine{1, "3980"})
		// A cheaper plan: START 1: 990 (< 1990 × 4) → upgrade 0.
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1))),
			bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d))), 990, bmLine{1, "990"})
		// The same plan and size: 1990 × 4 = 7960, upgrade 0.
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 4))),
			bmSummary("CARD_RU", 1, 0, bmSubLine(sub, "STANDARD", 4, bmAmount(7960, 0, d), bmNoUpgrade(d))), 7960, bmLine{1, "7960"})
	})

	t.Run("paid period over", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2,
			"paid_until": bmTS(bmAt(-24 * time.Hour)), "clear_test_until": true})
		// No remaining time → upgrade 0; top-up 9950 less 5 % (497.50) = 9452.50.
		d := bmDiscounts(0, 5, 0)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 5))),
			bmSummary("CARD_RU", 1, 497.5, bmSubLine(sub, "STANDARD", 5, bmAmount(9452.5, 497.5, d), bmNoUpgrade(d))), 9452.5, bmLine{1, "9452.5"})
	})

	t.Run("test period", func(t *testing.T) {
		t.Parallel()
		c, sub := bmCompanyWith(t, "", nil)
		// paid_until null → upgrade 0. top-up 1990 × 5 = 9950; 5 + 10 = 15 %
		// → 1492.50; 8457.50.
		d := bmDiscounts(0, 5, 10)
		bmRequirePreview(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "STANDARD", 5))),
			bmSummary("CARD_RU", 1, 1492.5, bmSubLine(sub, "STANDARD", 5, bmAmount(8457.5, 1492.5, d), bmNoUpgrade(d))), 8457.5, bmLine{1, "8457.5"})
	})
}

// TestInvoiceRules: every refusal of billing.md's request rules, with its
// status, code and location, and the order of the checks; nothing is
// stored by a refusal.
func TestInvoiceRules(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", nil)
	sid := sub["id"]
	// A bot subscription holding two connections (for 22019).
	tok1, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok1})
	raiseLimit(t, c, "telegram_bot", 2)
	tok2, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok2})
	bots := subscriptionOf(t, c, "telegram_bot")
	require.EqualValues(t, 2, bots["current_size"])
	req := bmRequisite(t, c)
	other, otherSub := bmCompanyWith(t, "", nil)
	otherReq := bmRequisite(t, other)

	item := bmSubItem(sid, "START", 1)
	// The base request is fine.
	bmOK(t, bmInvoice(t, c, bmCardRU(nil, item)))

	stored := func(extra map[string]any, items ...any) map[string]any { return bmStored(bmCardRU(extra, items...)) }
	for _, tc := range []struct {
		name   string
		body   any
		loc    []any
		prefix bool // the location starts with loc
	}{
		{"items empty", bmCardRU(nil), []any{"body", "items"}, false},
		{"items missing", map[string]any{"payment_method": "CARD_RU"}, []any{"body", "items"}, false},
		{"one subscription twice", bmCardRU(nil, item, bmSubItem(sid, "STANDARD", 2)), []any{"body", "items"}, true},
		{"two WABA_DIALOGS", bmCardRU(nil, bmDialogsItem(1), bmDialogsItem(2)), []any{"body", "items"}, true},
		{"item type missing", bmCardRU(nil, map[string]any{"id": sid, "new_subscription_plan": "START", "new_size": 1}), []any{"body", "items", 0, "type"}, false},
		{"item type unknown", bmCardRU(nil, map[string]any{"type": "SMS", "count": 1}), []any{"body", "items", 0, "type"}, false},
		{"SUBSCRIPTION without id", bmCardRU(nil, map[string]any{"type": "SUBSCRIPTION", "new_subscription_plan": "START", "new_size": 1}), []any{"body", "items", 0, "id"}, false},
		{"SUBSCRIPTION without plan", bmCardRU(nil, map[string]any{"type": "SUBSCRIPTION", "id": sid, "new_size": 1}), []any{"body", "items", 0, "new_subscription_plan"}, false},
		{"SUBSCRIPTION without size", bmCardRU(nil, map[string]any{"type": "SUBSCRIPTION", "id": sid, "new_subscription_plan": "START"}), []any{"body", "items", 0, "new_size"}, false},
		{"new_size 0", bmCardRU(nil, bmSubItem(sid, "STANDARD", 0)), []any{"body", "items", 0, "new_size"}, false},
		{"plan ADVANCED", bmCardRU(nil, bmSubItem(sid, "ADVANCED", 1)), []any{"body", "items", 0, "new_subscription_plan"}, false},
		{"plan unknown", bmCardRU(nil, bmSubItem(sid, "GOLD", 1)), []any{"body", "items", 0, "new_subscription_plan"}, false},
		{"START size 2", bmCardRU(nil, bmSubItem(sid, "START", 2)), []any{"body", "items", 0, "new_size"}, false},
		{"FREE on whatsapp", bmCardRU(nil, bmSubItem(sid, "FREE", 1)), []any{"body", "items", 0, "new_subscription_plan"}, false},
		{"FREE on whatsapp second item", bmCardRU(nil, bmDialogsItem(1), bmSubItem(sid, "FREE", 1)), []any{"body", "items", 1, "new_subscription_plan"}, false},
		{"WABA_DIALOGS count 0", bmCardRU(nil, bmDialogsItem(0)), []any{"body", "items", 0, "count"}, false},
		{"WABA_DIALOGS without count", bmCardRU(nil, map[string]any{"type": "WABA_DIALOGS"}), []any{"body", "items", 0, "count"}, false},
		{"payment_method missing", bmCardRU(map[string]any{"payment_method": bmAbsent}, item), []any{"body", "payment_method"}, false},
		{"payment_method null", bmCardRU(map[string]any{"payment_method": nil}, item), []any{"body", "payment_method"}, false},
		{"payment_method PARTNER_BALANCE", bmCardRU(map[string]any{"payment_method": "PARTNER_BALANCE"}, item), []any{"body", "payment_method"}, false},
		{"card_provider with CARD_RU", bmCardRU(map[string]any{"card_provider": "ROBOKASSA"}, item), []any{"body", "card_provider"}, false},
		{"card_provider KEEPZ with CARD_RU", bmCardRU(map[string]any{"card_provider": "KEEPZ"}, item), []any{"body", "card_provider"}, false},
		{"CARD_OTHER without card_provider", bmCardRU(map[string]any{"payment_method": "CARD_OTHER"}, item), []any{"body", "card_provider"}, false},
		{"CARD_OTHER with card_provider null", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": nil}, item), []any{"body", "card_provider"}, false},
		{"card_provider with BANK_TRANSFER", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": req["id"], "card_provider": "ROBOKASSA"}, item), []any{"body", "card_provider"}, false},
		{"BANK_TRANSFER without requisite", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER"}, item), []any{"body", "company_requisite_id"}, false},
		{"BANK_TRANSFER with requisite null", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": nil}, item), []any{"body", "company_requisite_id"}, false},
		{"CARD_RU with requisite", bmCardRU(map[string]any{"company_requisite_id": req["id"]}, item), []any{"body", "company_requisite_id"}, false},
		{"CARD_OTHER with requisite", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "ROBOKASSA", "company_requisite_id": req["id"]}, item), []any{"body", "company_requisite_id"}, false},
		{"period 2", bmCardRU(map[string]any{"period_months": 2}, item), []any{"body", "period_months"}, false},
		{"period 0", bmCardRU(map[string]any{"period_months": 0}, item), []any{"body", "period_months"}, false},
		{"period 24", bmCardRU(map[string]any{"period_months": 24}, item), []any{"body", "period_months"}, false},
		{"period -1", bmCardRU(map[string]any{"period_months": -1}, item), []any{"body", "period_months"}, false},
		{"promo code unknown", bmCardRU(map[string]any{"promo_code": "NOSUCHCODE"}, item), []any{"body", "promo_code"}, false},
		{"stored without consents", bmCardRU(map[string]any{"preview": false}, item), []any{"body", "consents"}, false},
		{"stored, offer not accepted", bmCardRU(map[string]any{"preview": false, "consents": map[string]any{"offer_accepted": false}}, item), []any{"body", "consents"}, false},
		{"stored, consents empty", bmCardRU(map[string]any{"preview": false, "consents": map[string]any{}}, item), []any{"body", "consents"}, false},
		// The body rules come before anything that needs a lookup.
		{"body before 404", stored(map[string]any{"period_months": 2}, bmSubItem(999999999999, "START", 1)), []any{"body", "period_months"}, false},
		{"card_provider with CARD_RU, stored", stored(map[string]any{"card_provider": "KEEPZ"}, item), []any{"body", "card_provider"}, false},
		{"body before 22019", bmCardRU(map[string]any{"period_months": 5}, bmSubItem(bots["id"], "STANDARD", 1)), []any{"body", "period_months"}, false},
	} {
		r := bmInvoice(t, c, tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		if tc.prefix {
			bmRequireLocPrefix(t, r, tc.loc...)
		} else {
			requireLoc(t, r, tc.loc...)
		}
	}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   int
		err    string
	}{
		{"unknown subscription", bmCardRU(nil, bmSubItem(999999999999, "START", 1)), 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's subscription", bmCardRU(nil, bmSubItem(otherSub["id"], "START", 1)), 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's subscription, stored", stored(nil, bmSubItem(otherSub["id"], "START", 1)), 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's requisite", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": otherReq["id"]}, item), 404, 22020, "REQUISITE_NOT_FOUND"},
		{"unknown requisite", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": 999999999999}, item), 404, 22020, "REQUISITE_NOT_FOUND"},
		{"size below the connections", bmCardRU(nil, bmSubItem(bots["id"], "STANDARD", 1)), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
		{"START below the connections", bmCardRU(nil, bmSubItem(bots["id"], "START", 1)), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
		{"size below, stored", stored(nil, bmSubItem(bots["id"], "STANDARD", 1)), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
		{"KEEPZ without a keepz connection", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, item), 400, 18003, "INVOICE_PROVIDER_ERROR"},
		{"KEEPZ without a keepz connection, dialogs", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, bmDialogsItem(1)), 400, 18003, "INVOICE_PROVIDER_ERROR"},
		// Order: 22000, then 22020, then 22019.
		{"22000 before 22020", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": otherReq["id"]}, bmSubItem(999999999999, "START", 1)), 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"22020 before 22019", bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": otherReq["id"]}, bmSubItem(bots["id"], "STANDARD", 1)), 404, 22020, "REQUISITE_NOT_FOUND"},
		{"22000 before 22019", bmCardRU(nil, bmSubItem(bots["id"], "STANDARD", 1), bmSubItem(999999999999, "START", 1)), 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"22019 before 18003", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, bmSubItem(bots["id"], "STANDARD", 1)), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
	} {
		r := bmInvoice(t, c, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		requireError(t, r, tc.status, tc.code, tc.err)
	}
	// FREE is for bot types: fine on the bot subscription (size 2 ≥ its 2
	// connections), 0.
	free := bmOK(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(bots["id"], "FREE", 2))))
	require.EqualValues(t, 0, free["amount"])
	// CARD_OTHER with ROBOKASSA needs no connection.
	bmOK(t, bmInvoice(t, c, bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "ROBOKASSA"}, item)))

	// payments_locked: 400 22018, previews too; after 22000 and 22019.
	locked, lockedSub := bmCompanyWith(t, "", nil)
	tok3, _ := botToken()
	mustCreate(t, locked, "telegram_bot", map[string]any{"bot_token": tok3})
	raiseLimit(t, locked, "telegram_bot", 2)
	tok4, _ := botToken()
	mustCreate(t, locked, "telegram_bot", map[string]any{"bot_token": tok4})
	lockedBots := subscriptionOf(t, locked, "telegram_bot")
	requireValue(t, map[string]any{"company_id": locked.ID, "payment_currency": "RUB", "payments_locked": true, "waba_dialogs_balance": 0},
		bmSetBilling(t, locked.ID, map[string]any{"payments_locked": true}))
	lockedItem := bmSubItem(lockedSub["id"], "START", 1)
	for name, body := range map[string]any{
		"preview":         bmCardRU(nil, lockedItem),
		"stored":          stored(nil, lockedItem),
		"dialogs":         bmCardRU(nil, bmDialogsItem(3)),
		"bank transfer":   bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": bmRequisite(t, locked)["id"]}, lockedItem),
		"22018 vs 18003":  bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, lockedItem),
		"FREE on the bot": bmCardRU(nil, bmSubItem(lockedBots["id"], "FREE", 2)),
	} {
		r := bmInvoice(t, locked, body)
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		requireError(t, r, 400, 22018, "SUBSCRIPTION_PAYMENTS_LOCKED")
	}
	requireError(t, bmInvoice(t, locked, bmCardRU(nil, bmSubItem(999999999999, "START", 1))), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
	requireError(t, bmInvoice(t, locked, bmCardRU(nil, bmSubItem(lockedBots["id"], "STANDARD", 1))), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT")
	requireLoc(t, bmInvoice(t, locked, bmCardRU(map[string]any{"period_months": 2}, lockedItem)), "body", "period_months")

	// payment_currency USD: 400 18003 for every method, previews too.
	usd, usdSub := bmCompanyWith(t, "", nil)
	usdReq := bmRequisite(t, usd)
	mustCreate(t, usd, "keepz", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"login": "shop", "password": "keepz-secret"}})
	requireValue(t, map[string]any{"company_id": usd.ID, "payment_currency": "USD", "payments_locked": false, "waba_dialogs_balance": 0},
		bmSetBilling(t, usd.ID, map[string]any{"payment_currency": "USD"}))
	usdItem := bmSubItem(usdSub["id"], "START", 1)
	for name, body := range map[string]any{
		"CARD_RU":          bmCardRU(nil, usdItem),
		"CARD_RU stored":   stored(nil, usdItem),
		"ROBOKASSA":        bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "ROBOKASSA"}, usdItem),
		"KEEPZ":            bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, usdItem),
		"BANK_TRANSFER":    bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": usdReq["id"]}, usdItem),
		"dialogs":          bmCardRU(nil, bmDialogsItem(1)),
		"dialogs, stored":  stored(nil, bmDialogsItem(1)),
		"KEEPZ and stored": stored(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, bmDialogsItem(1)),
	} {
		r := bmInvoice(t, usd, body)
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		requireError(t, r, 400, 18003, "INVOICE_PROVIDER_ERROR")
	}
	// 22018 comes before 18003.
	bmSetBilling(t, usd.ID, map[string]any{"payments_locked": true})
	requireError(t, bmInvoice(t, usd, bmCardRU(nil, usdItem)), 400, 22018, "SUBSCRIPTION_PAYMENTS_LOCKED")

	// No refusal stored anything.
	for _, co := range []company{c, locked, usd} {
		requireJSON(t, api(t, "GET", cpath(co, "/subscriptions/invoices/"), nil, key(co.Key)...), 200, map[string]any{"count": 0, "invoices": []any{}})
	}
	require.Equal(t, sub["subscription_plan"], bmSub(t, c, sid)["subscription_plan"])
}

// TestInvoiceStored: preview false stores the invoice as new, payable for 3
// days, with the same summary, amount and receipt as its preview; the list
// is newest first with the count of all; previews are never listed;
// another company's invoice is unknown.
func TestInvoiceStored(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
	req := bmRequisite(t, c)

	// 1. CARD_RU, START 1 month: 990.
	body1 := bmCardRU(nil, bmSubItem(sub["id"], "START", 1))
	preview1 := bmOK(t, bmInvoice(t, c, body1))
	before := time.Now()
	inv1 := bmOK(t, bmInvoice(t, c, bmStored(body1)))
	after := time.Now()
	bmRequireStored(t, inv1, "new", true, before, after)
	bmSameInvoice(t, preview1, inv1)
	requireValue(t, bmURLOrNull, inv1["preview_url"])
	requireValue(t, bmURLOrNull, inv1["act_url"])
	require.EqualValues(t, 990, inv1["amount"])

	// 2. BANK_TRANSFER, 7 dialogs: 35.00; no payment URL; the requisite in
	// the summary.
	body2 := bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER", "company_requisite_id": req["id"]}, bmDialogsItem(7))
	preview2 := bmOK(t, bmInvoice(t, c, body2))
	before = time.Now()
	inv2 := bmOK(t, bmInvoice(t, c, bmStored(body2)))
	after = time.Now()
	bmRequireStored(t, inv2, "new", false, before, after)
	bmSameInvoice(t, preview2, inv2)
	want2 := bmSummary("BANK_TRANSFER", 1, 0, bmDialogsLine(7, 35))
	want2["company_requisite"] = req
	requireValue(t, want2, inv2["summary"])

	// 3. CARD_OTHER ROBOKASSA, STANDARD 3 × 3 months, + 7 dialogs:
	// 17014.50 + 35 = 17049.50 (TestInvoicePreviewAmounts/mixed).
	body3 := bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "ROBOKASSA", "period_months": 3},
		bmSubItem(sub["id"], "STANDARD", 3), bmDialogsItem(7))
	preview3 := bmOK(t, bmInvoice(t, c, body3))
	before = time.Now()
	r3 := bmInvoice(t, c, bmStored(body3))
	after = time.Now()
	inv3 := bmOK(t, r3)
	bmRequireStored(t, inv3, "new", true, before, after)
	bmSameInvoice(t, preview3, inv3)
	bmRequireRaw(t, r3, `"amount":17049.5,"currency":"RUB"`, `"total_discount":895.5,`)
	bmRequireReceipt(t, inv3, bmLine{1, "17014.5"}, bmLine{7, "5"})
	// Distinct ids; storing changed no subscription (nothing is paid).
	require.NotEqual(t, inv1["id"], inv2["id"])
	require.NotEqual(t, inv2["id"], inv3["id"])
	require.Equal(t, sub, bmSub(t, c, sub["id"]))

	// More previews store nothing.
	bmOK(t, bmInvoice(t, c, body1))
	bmOK(t, bmInvoice(t, c, body3))

	list := func(query string) response {
		t.Helper()
		return api(t, "GET", cpath(c, "/subscriptions/invoices/%s", query), nil, key(c.Key)...)
	}
	all := map[string]any{"count": 3, "invoices": []any{inv3, inv2, inv1}}
	requireJSON(t, list(""), 200, all)
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices"), nil, key(c.Key)...), 200, all)
	requireJSON(t, list("?limit=2"), 200, map[string]any{"count": 3, "invoices": []any{inv3, inv2}})
	requireJSON(t, list("?limit=2&offset=2"), 200, map[string]any{"count": 3, "invoices": []any{inv1}})
	requireJSON(t, list("?offset=1"), 200, map[string]any{"count": 3, "invoices": []any{inv2, inv1}})
	requireJSON(t, list("?offset=3"), 200, map[string]any{"count": 3, "invoices": []any{}})
	requireJSON(t, list("?limit=100"), 200, all)
	requireJSON(t, list("?limit=1"), 200, map[string]any{"count": 3, "invoices": []any{inv3}})
	requireLoc(t, list("?limit=0"), "query", "limit")
	requireLoc(t, list("?limit=101"), "query", "limit")
	requireLoc(t, list("?offset=-1"), "query", "offset")
	requireLoc(t, list("?limit=x"), "query", "limit")

	// One by id: the stored invoice.
	for _, inv := range []map[string]any{inv1, inv2, inv3} {
		requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", inv["id"]), nil, key(c.Key)...), 200, inv)
		requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v/", inv["id"]), nil, key(c.Key)...), 200, inv)
	}

	// Another company's invoice is unknown; its own list is empty.
	other := newCompany(t, nil)
	requireError(t, api(t, "GET", cpath(other, "/subscriptions/invoices/%v", inv1["id"]), nil, key(other.Key)...), 404, 22021, "INVOICE_NOT_FOUND")
	requireError(t, api(t, "GET", cpath(c, "/subscriptions/invoices/999999999999"), nil, key(c.Key)...), 404, 22021, "INVOICE_NOT_FOUND")
	requireJSON(t, api(t, "GET", cpath(other, "/subscriptions/invoices/"), nil, key(other.Key)...), 200, map[string]any{"count": 0, "invoices": []any{}})

	// The default page is 20.
	for range 19 {
		bmOK(t, bmInvoice(t, c, bmStored(bmCardRU(nil, bmDialogsItem(1)))))
	}
	page := requireJSON(t, list(""), 200, map[string]any{"count": 22, "invoices": anyPresent}).(map[string]any)
	require.Len(t, page["invoices"], 20)
	// 19 newer ones, then the newest of the first three.
	require.Equal(t, inv3, page["invoices"].([]any)[19])
}

// TestInvoiceKeyScopes: subscriptions:read reads invoices but may not make
// even a preview; a key without the scope reads nothing.
func TestInvoiceKeyScopes(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", nil)
	body := bmCardRU(nil, bmSubItem(sub["id"], "START", 1))
	inv := bmOK(t, bmInvoice(t, c, bmStored(body)))

	ro := newKey(t, c.ID, "subscriptions:read")
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(ro)...), 200, map[string]any{"count": 1, "invoices": []any{inv}})
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", inv["id"]), nil, key(ro)...), 200, inv)
	bmRequireForbidden(t, bmInvoice(t, c, body, key(ro)...))
	bmRequireForbidden(t, bmInvoice(t, c, bmStored(body), key(ro)...))

	none := newKey(t, c.ID, "connections", "messaging")
	bmRequireForbidden(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(none)...))
	bmRequireForbidden(t, bmInvoice(t, c, body, key(none)...))

	rw := newKey(t, c.ID, "subscriptions")
	bmOK(t, bmInvoice(t, c, body, key(rw)...))
	// Another company's key on this company's path.
	other := newCompany(t, nil)
	bmRequireForbidden(t, bmInvoice(t, c, body, key(other.Key)...))
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/"), nil, key(ro)...), 200, map[string]any{"count": 1, "invoices": []any{inv}})
}

// TestInvoiceKeepz: KEEPZ charges in dollars at the rate of the day
// (sandbox: 90.0000 unless set for the company's keepz connection): the
// invoice stays in roubles; charge_amount = amount / rate rounded half up
// to cents.
func TestInvoiceKeepz(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
	conn := mustCreate(t, c, "keepz", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"login": "shop", "password": "keepz-secret"}})
	keepz := map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}
	rate := func(connID any, v any) response {
		t.Helper()
		return api(t, "PUT", p("/sandbox/v1/connections/%v/conversion_rate", connID), map[string]any{"rate": v}, operator()...)
	}
	// summary with the card fields; the date is Moscow's today (before or
	// after the request, should it cross midnight).
	withCharge := func(s map[string]any, charge, rate float64, before, after time.Time) map[string]any {
		s["payment_method"], s["card_provider"], s["charge_currency"] = "CARD_OTHER", "KEEPZ", "USD"
		s["charge_amount"], s["conversion_rate"] = charge, rate
		d1, d2 := before.In(bmMSK).Format("2006-01-02"), after.In(bmMSK).Format("2006-01-02")
		s["conversion_rate_date"] = matcher{"Moscow's date " + d1, func(v any) bool { return v == d1 || v == d2 }}
		return s
	}
	d := bmDiscounts(0, 0, 0)
	start := bmSubLine(sub, "START", 1, bmAmount(990, 0, d), bmNoUpgrade(d))

	// 990 / 90 = 11.00.
	before := time.Now()
	r := bmInvoice(t, c, bmCardRU(keepz, bmSubItem(sub["id"], "START", 1)))
	after := time.Now()
	bmRequirePreview(t, r, withCharge(bmSummary("", 1, 0, start), 11, 90, before, after), 990, bmLine{1, "990"})
	bmRequireRaw(t, r, `"charge_currency":"USD","charge_amount":11,"conversion_rate":90,`, `"amount":990,"currency":"RUB"`)

	// STANDARD 3 × 3 + 7 dialogs = 17049.50 (TestInvoicePreviewAmounts/
	// mixed); 17049.50 / 90 = 189.43888… → 189.44.
	d5 := bmDiscounts(5, 0, 0)
	mixedItems := []any{bmSubLine(sub, "STANDARD", 3, bmAmount(17014.5, 895.5, d5), bmNoUpgrade(d5)), bmDialogsLine(7, 35)}
	mixedBody := bmCardRU(bmWith(keepz, map[string]any{"period_months": 3}), bmSubItem(sub["id"], "STANDARD", 3), bmDialogsItem(7))
	before = time.Now()
	r = bmInvoice(t, c, mixedBody)
	after = time.Now()
	preview := bmRequirePreview(t, r, withCharge(bmSummary("", 3, 895.5, mixedItems...), 189.44, 90, before, after), 17049.5, bmLine{1, "17014.5"}, bmLine{7, "5"})
	bmRequireRaw(t, r, `"charge_amount":189.44,`)
	// Stored: the same, payable at the sandbox.
	before = time.Now()
	stored := bmOK(t, bmInvoice(t, c, bmStored(mixedBody)))
	after = time.Now()
	bmRequireStored(t, stored, "new", true, before, after)
	bmSameInvoice(t, preview, stored)

	// The company's own rate: 40 → 1 dialog 5.00 / 40 = 0.125 → 0.13 (half
	// up, not to even).
	requireJSON(t, rate(conn["id"], 40), 200, map[string]any{"connection_id": conn["id"], "rate": 40})
	before = time.Now()
	r = bmInvoice(t, c, bmCardRU(keepz, bmDialogsItem(1)))
	after = time.Now()
	bmRequirePreview(t, r, withCharge(bmSummary("", 1, 0, bmDialogsLine(1, 5)), 0.13, 40, before, after), 5, bmLine{1, "5"})
	bmRequireRaw(t, r, `"charge_amount":0.13,"conversion_rate":40,`)

	// 95.4321 (four decimals): 990 / 95.4321 = 10.37386… → 10.37.
	rr := rate(conn["id"], 95.4321)
	requireJSON(t, rr, 200, map[string]any{"connection_id": conn["id"], "rate": 95.4321})
	bmRequireRaw(t, rr, `"rate":95.4321`)
	before = time.Now()
	r = bmInvoice(t, c, bmCardRU(keepz, bmSubItem(sub["id"], "START", 1)))
	after = time.Now()
	bmRequirePreview(t, r, withCharge(bmSummary("", 1, 0, start), 10.37, 95.4321, before, after), 990, bmLine{1, "990"})
	bmRequireRaw(t, r, `"charge_amount":10.37,"conversion_rate":95.4321,`)

	// 77.7777: 17014.50 / 77.7777 = 218.75807… → 218.76.
	rate(conn["id"], 77.7777)
	before = time.Now()
	r = bmInvoice(t, c, bmCardRU(bmWith(keepz, map[string]any{"period_months": 3}), bmSubItem(sub["id"], "STANDARD", 3)))
	after = time.Now()
	bmRequirePreview(t, r, withCharge(bmSummary("", 3, 895.5, mixedItems[0]), 218.76, 77.7777, before, after), 17014.5, bmLine{1, "17014.5"})

	// The stored invoice keeps the rate it was made at.
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/invoices/%v", stored["id"]), nil, key(c.Key)...), 200, stored)

	// Another company's keepz connection still converts at 90: 990 / 90 = 11.
	other, otherSub := bmCompanyWith(t, "", map[string]any{"clear_test_until": true})
	mustCreate(t, other, "keepz", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"login": "shop2", "password": "keepz-secret-2"}})
	r = bmInvoice(t, other, bmCardRU(keepz, bmSubItem(otherSub["id"], "START", 1)))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	bmRequireRaw(t, r, `"charge_amount":11,"conversion_rate":90,`)

	// Refused rates (sandbox.proto: more than 0, up to 4 decimals).
	for _, v := range []any{0, -1, 1.23456} {
		requireLoc(t, rate(conn["id"], v), "body", "rate")
	}
	// Only a keepz connection has a rate.
	wa := subscriptionOf(t, c, "whatsapp")["connections"].([]any)[0]
	requireError(t, rate(wa, 90), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, rate(999999999999, 90), 404, 10000, "CONNECTION_NOT_FOUND")

	// null: no rate → 400 18003 for KEEPZ, previews and stored; other
	// methods are unaffected.
	requireJSON(t, rate(conn["id"], nil), 200, map[string]any{"connection_id": conn["id"], "rate": nil})
	requireError(t, bmInvoice(t, c, bmCardRU(keepz, bmSubItem(sub["id"], "START", 1))), 400, 18003, "INVOICE_PROVIDER_ERROR")
	requireError(t, bmInvoice(t, c, bmStored(bmCardRU(keepz, bmDialogsItem(1)))), 400, 18003, "INVOICE_PROVIDER_ERROR")
	bmOK(t, bmInvoice(t, c, bmCardRU(nil, bmSubItem(sub["id"], "START", 1))))
	// And back.
	rate(conn["id"], 90)
	r = bmInvoice(t, c, bmCardRU(keepz, bmSubItem(sub["id"], "START", 1)))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	bmRequireRaw(t, r, `"charge_amount":11,"conversion_rate":90,`)
}
