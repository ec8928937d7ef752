package e2e

import (
	"encoding/json"
	"math/big"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Partner invoices end to end (partners.md "Partner invoices", "Rewards,
// balance"): billing's invoice made by the partner for a partner-type
// client, its partner discount, client_amount, the partner's balance
// paying first and held until the invoice is expired or cancelled.
// Partner commission 20 % (the default); a business dialog 5.00.

// pinvPath is the partner invoice route of a client.
func pinvPath(pt ptPartner, clientID any) string {
	return ptPath(pt.company, "/partner_companies/%v/payments/invoices/", clientID)
}

func pinvPost(t *testing.T, pt ptPartner, clientID any, body any) response {
	t.Helper()
	return api(t, "POST", pinvPath(pt, clientID), body, key(pt.Key)...)
}

// pinvDiscounts is a SUBSCRIPTION amount's discounts with the partner's
// 20 % and a balance part.
func pinvDiscounts(flat any) map[string]any {
	return map[string]any{"period_discount_percent": 0, "quantity_discount_percent": 0, "promo_discount_percent": 0,
		"partner_discount_percent": 20, "test_period_discount_percent": 0, "partner_balance_discount_flat": flat}
}

// pinvDialogs is a WABA_DIALOGS summary item with a balance part.
func pinvDialogs(count int, amount, flat any) map[string]any {
	return map[string]any{"type": "WABA_DIALOGS", "count": count, "price": 5,
		"top_up_amount": map[string]any{"amount": amount, "discount": flat, "discounts": map[string]any{"partner_balance_discount_flat": flat}}}
}

// pinvSummary is a partner invoice's summary (partner_discount_percent 20).
func pinvSummary(method string, totalDiscount any, requisite any, items ...any) map[string]any {
	s := bmSummary(method, 1, totalDiscount, items...)
	s["partner_discount_percent"], s["company_requisite"] = 20, requisite
	return s
}

// pinvAnswer is a whole answer: the invoice (a preview when stored is
// false) and the partner's fields.
func pinvAnswer(c company, name string, summary map[string]any, amount, clientAmount any) map[string]any {
	out := bmPreview(summary, amount)
	out["company_id"], out["company_name"], out["client_amount"], out["payer"] = c.ID, name, clientAmount, "partner"
	return out
}

// pinvStored makes want a stored invoice's answer: status, ids and times
// from got, checked apart by bmRequireStored.
func pinvStored(want map[string]any, status string, paymentURL any) map[string]any {
	out := bmWith(want, map[string]any{"id": anyID, "preview": false, "status": status, "lifetime": anyTime,
		"created_at": anyTime, "payment_url": paymentURL})
	return out
}

// pinvSetup is a partner with a partner-type client holding a STANDARD
// whatsapp subscription out of its test period, and a referral client.
type pinvSetup struct {
	pt       ptPartner
	client   company
	sub      map[string]any
	referral company
}

func pinvNew(t *testing.T, name string) pinvSetup {
	t.Helper()
	ptfAwayFromMonthEnd()
	pt := ptNewPartner(t, name)
	c, sub := ptfClient(t, pt.Code, name+" Client")
	ref, _ := ptfClient(t, pt.ReferralCode, name+" Referral")
	return pinvSetup{pt: pt, client: c, sub: sub, referral: ref}
}

// give makes the partner's balance grow by 10 % of amount: its referral
// pays amount/5 business dialogs. It waits for the balance.
func (s pinvSetup) give(t *testing.T, amount int, balance any) {
	t.Helper()
	ptfPay(t, s.referral, p("%d", amount), bmCardRU(nil, bmDialogsItem(amount/5)))
	ptfAwait(t, ptPath(s.pt.company, "/finance/balance"), map[string]any{"balance": balance}, key(s.pt.Key)...)
}

func (s pinvSetup) balance(t *testing.T, want any) {
	t.Helper()
	ptfAwait(t, ptPath(s.pt.company, "/finance/balance"), map[string]any{"balance": want}, key(s.pt.Key)...)
}

// pinvMail waits for the one mail to an address and answers it.
func pinvMail(t *testing.T, email string) map[string]any {
	t.Helper()
	var mails []map[string]any
	for deadline := time.Now().Add(3 * waitFor); ; time.Sleep(tick) {
		r := api(t, "GET", "/sandbox/v1/mailbox?to="+url.QueryEscape(email), nil, operator()...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		mails = nil
		require.NoError(t, json.Unmarshal(r.Body, &mails), "%s", r.Body)
		if len(mails) > 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Len(t, mails, 1, "one mail to %s", email)
	return mails[0]
}

// TestPartnerInvoiceAmounts: the preview and the stored invoice in full
// (partner discount 20 % on SUBSCRIPTION amounts, none on dialogs,
// client_amount = amount without the balance, payer partner), the mail to
// partner_email, the payments list, the payment in the sandbox and its
// rewards (a partner-type client's subscription earns nothing, its
// dialogs earn 10 % of their base).
func TestPartnerInvoiceAmounts(t *testing.T) {
	t.Parallel()
	s := pinvNew(t, "Pinv Amounts")
	name := "Pinv Amounts Client"
	// STANDARD × 1 × 1 month = 1990, 20 % off: discount 398, amount 1592;
	// 10 dialogs = 50.00, no discount. Amount 1642.
	body := bmCardRU(nil, bmSubItem(s.sub["id"], "STANDARD", 1), bmDialogsItem(10))
	want := pinvAnswer(s.client, name, pinvSummary("CARD_RU", 398, nil,
		bmSubLine(s.sub, "STANDARD", 1, bmAmount(1592, 398, pinvDiscounts(0)), bmAmount(0, 0, pinvDiscounts(0))),
		pinvDialogs(10, 50, 0)), 1642, 1642)
	preview := requireJSON(t, pinvPost(t, s.pt, s.client.ID, body), 200, want).(map[string]any)
	bmRequireReceipt(t, preview, bmLine{1, "1592"}, bmLine{10, "5"})
	// use_partner_balance with no balance changes nothing.
	requireJSON(t, pinvPost(t, s.pt, s.client.ID, bmWith(body, map[string]any{"use_partner_balance": true})), 200, want)
	// Nothing stored.
	requireJSON(t, api(t, "GET", ptPath(s.pt.company, "/partner_companies/payments/"), nil, key(s.pt.Key)...), 200,
		map[string]any{"count": 0, "payments": []any{}})

	// Stored, mailed to the partner.
	email := ptEmail(t, "pinv-amounts")
	before := bmAt(0)
	r := pinvPost(t, s.pt, s.client.ID, bmStored(bmWith(body, map[string]any{"partner_email": email})))
	stored := requireJSON(t, r, 200, pinvStored(want, "new", anyString)).(map[string]any)
	bmRequireStored(t, stored, "new", true, before, time.Now())
	id := int64(stored["id"].(float64))
	m := pinvMail(t, email)
	requireValue(t, map[string]any{"id": anyID, "from": "Switchboard <noreply@switchboard.local>", "to": []any{email},
		"subject": p("Invoice %d", id), "sent_at": anyTime,
		"text": p("Invoice %d\nStatus: new\nAmount: 1642.00 RUB\nClient amount: 1642.00 RUB\nPayment URL: %s\n", id, stored["payment_url"])}, m)

	// The payments list: payer partner.
	listed := bmWith(stored, nil)
	requireJSON(t, api(t, "GET", ptPath(s.pt.company, "/partner_companies/payments/"), nil, key(s.pt.Key)...), 200,
		map[string]any{"count": 1, "payments": []any{listed}})

	// Paid in the sandbox: the dialogs earn 10 % of 50.00; the
	// subscription nothing (the discount was the partner's commission).
	paid := api(t, "POST", p("/sandbox/v1/invoices/%d/pay", id), nil, operator()...)
	require.Equal(t, 200, paid.Status, "%s", paid.Body)
	ptfAwait(t, ptfRewardsPath(s.pt, ""), ptfRewards(ptfDialogsReward(s.client, name, 50, 0, 5, 10, anyTime)), key(s.pt.Key)...)
	s.balance(t, 5)
	after := bmSub(t, s.client, s.sub["id"])
	require.Equal(t, "STANDARD", after["subscription_plan"])
}

// TestPartnerInvoiceBalance: the balance pays first, item by item (top-up,
// then upgrade, then the next item), shown as partner_balance_discount_flat
// and in discount; amount = client_amount - balance used; it is held from
// storing (the balance and a payout see it), back when the invoice
// expires or the operator cancels it; an invoice the balance pays in full
// is paid at once (PARTNER_BALANCE, payment_url null), and its dialogs
// earn on their whole base.
func TestPartnerInvoiceBalance(t *testing.T) {
	t.Parallel()
	s := pinvNew(t, "Pinv Balance")
	name := "Pinv Balance Client"
	s.give(t, 10000, 1000) // 10 % of 10000

	// STANDARD 1592 after 20 %, then 300 dialogs = 1500: 1000 of the
	// balance goes to the top-up; client_amount 3092, amount 2092.
	body := bmCardRU(map[string]any{"use_partner_balance": true}, bmSubItem(s.sub["id"], "STANDARD", 1), bmDialogsItem(300))
	want := pinvAnswer(s.client, name, pinvSummary("CARD_RU", 1398, nil,
		bmSubLine(s.sub, "STANDARD", 1, bmAmount(592, 1398, pinvDiscounts(1000)), bmAmount(0, 0, pinvDiscounts(0))),
		pinvDialogs(300, 1500, 0)), 2092, 3092)
	preview := requireJSON(t, pinvPost(t, s.pt, s.client.ID, body), 200, want).(map[string]any)
	bmRequireReceipt(t, preview, bmLine{1, "592"}, bmLine{300, "5"})
	s.balance(t, 1000) // a preview holds nothing

	// Stored: the balance is held.
	first := requireJSON(t, pinvPost(t, s.pt, s.client.ID, bmStored(body)), 200, pinvStored(want, "new", anyString)).(map[string]any)
	s.balance(t, 0)
	bank := map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Payee LLC", "bic": "044525225",
		"current_account": "40702810900000000001"}
	req := ptfRequisite(t, s.pt, bank)
	ptfBelowMin(t, ptfPayout(t, s.pt, map[string]any{"requisite_id": req}), "0.00")
	// A second invoice finds nothing to spend.
	noBalance := pinvAnswer(s.client, name, pinvSummary("CARD_RU", 398, nil,
		bmSubLine(s.sub, "STANDARD", 1, bmAmount(1592, 398, pinvDiscounts(0)), bmAmount(0, 0, pinvDiscounts(0))),
		pinvDialogs(300, 1500, 0)), 3092, 3092)
	requireJSON(t, pinvPost(t, s.pt, s.client.ID, body), 200, noBalance)

	// Expired: the balance is back.
	r := api(t, "POST", p("/sandbox/v1/invoices/%v/expire", first["id"]), nil, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	s.balance(t, 1000)

	// 50 dialogs = 250, all paid by the balance of 1000.
	r = pinvPost(t, s.pt, s.client.ID, bmStored(bmCardRU(map[string]any{"use_partner_balance": true}, bmDialogsItem(50))))
	allPaid := pinvAnswer(s.client, name, pinvSummary("PARTNER_BALANCE", 250, nil, pinvDialogs(50, 0, 250)), 0, 250)
	paidNow := requireJSON(t, r, 200, pinvStored(allPaid, "paid", nil)).(map[string]any)
	bmRequireReceipt(t, paidNow)
	// 750 left; the paid invoice's dialogs earn 10 % of 250 = 25.
	s.balance(t, 775)

	// Cancelled by the operator: the balance is back.
	third := requireJSON(t, pinvPost(t, s.pt, s.client.ID, bmStored(body)), 200, pinvStored(pinvAnswer(s.client, name,
		pinvSummary("CARD_RU", 1173, nil,
			bmSubLine(s.sub, "STANDARD", 1, bmAmount(817, 1173, pinvDiscounts(775)), bmAmount(0, 0, pinvDiscounts(0))),
			pinvDialogs(300, 1500, 0)), 2317, 3092), "new", anyString)).(map[string]any)
	s.balance(t, 0)
	r = api(t, "POST", p("/admin/v1/invoices/%v/cancel", third["id"]), nil, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	s.balance(t, 775)
}

// TestPartnerInvoiceParallel: invoices stored at once never spend more
// than the balance between them (the rewards of those paid at once
// included).
func TestPartnerInvoiceParallel(t *testing.T) {
	t.Parallel()
	s := pinvNew(t, "Pinv Parallel")
	s.give(t, 10000, 1000)
	const n = 6
	var wg sync.WaitGroup
	used := make([]map[string]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 60 dialogs = 300 each: six would take 1800.
			r := pinvPost(t, s.pt, s.client.ID, bmStored(bmCardRU(map[string]any{"use_partner_balance": true}, bmDialogsItem(60))))
			if r.Status == 200 {
				used[i] = r.JSON(t)
			}
		}()
	}
	wg.Wait()
	spent := bmR("0")
	for i, inv := range used {
		require.NotNil(t, inv, "invoice %d stored", i)
		summary := inv["summary"].(map[string]any)
		item := summary["items"].([]any)[0].(map[string]any)
		flat := item["top_up_amount"].(map[string]any)["discounts"].(map[string]any)["partner_balance_discount_flat"]
		spent = bmAdd(spent, bmDec(t, flat))
		require.Zero(t, bmAdd(bmDec(t, inv["amount"]), bmDec(t, flat)).Cmp(bmR("300")), "amount + balance part = client_amount")
	}
	require.Positive(t, spent.Sign(), "the balance paid something")
	// An invoice the balance paid in full is paid at once and earns 10 %
	// of its 300 (business dialogs), which a later invoice may spend: the
	// balance ever had is 1000 plus those. What is left is that less what
	// was spent, never below 0.
	had := bmR("1000")
	for _, inv := range used {
		if bmDec(t, inv["amount"]).Sign() == 0 {
			require.Equal(t, "paid", inv["status"])
			require.Nil(t, inv["payment_url"])
			had = bmAdd(had, bmR("30"))
		}
	}
	require.True(t, spent.Cmp(had) <= 0, "spent %s of %s", bmStr(spent), bmStr(had))
	f, _ := bmAdd(had, new(big.Rat).Neg(spent)).Float64()
	s.balance(t, f)
}

// TestPartnerInvoiceRules: every refusal with its code, in order, and
// the requisites: the client's for business dialogs alone, the
// partner's for BANK_TRANSFER; a client's payments_locked does not stop
// its partner.
func TestPartnerInvoiceRules(t *testing.T) {
	t.Parallel()
	s := pinvNew(t, "Pinv Rules")
	other := ptNewPartner(t, "Pinv Rules Other")
	stranger := newCompany(t, nil)
	sub := bmSubItem(s.sub["id"], "STANDARD", 1)
	mine := ptfRequisite(t, s.pt, map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Partner LLC"})
	foreign := ptfRequisite(t, other, map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Other LLC"})
	clientReq := bmRequisite(t, s.client)

	requireLoc(t, pinvPost(t, s.pt, s.client.ID, bmCardRU(map[string]any{"partner_requisite_id": mine}, sub)), "body", "partner_requisite_id")
	requireLoc(t, pinvPost(t, s.pt, s.client.ID, bmCardRU(map[string]any{"payment_method": "BANK_TRANSFER"}, sub)), "body", "partner_requisite_id")
	requireLoc(t, pinvPost(t, s.pt, s.client.ID, bmCardRU(map[string]any{"partner_email": "not-an-address"}, sub)), "body", "partner_email")
	requireLoc(t, pinvPost(t, s.pt, s.client.ID, map[string]any{"items": []any{sub}}), "body", "payment_method")
	requireLoc(t, pinvPost(t, s.pt, s.client.ID, bmWith(bmStored(bmCardRU(nil, sub)), map[string]any{"consents": map[string]any{}})), "body", "consents")
	ptReferral(t, pinvPost(t, s.pt, s.referral.ID, bmCardRU(nil, sub)))
	ptNotClient(t, pinvPost(t, s.pt, stranger.ID, bmCardRU(nil, sub)))
	ptNotClient(t, pinvPost(t, other, s.client.ID, bmCardRU(nil, sub)))
	bankBody := func(extra map[string]any, items ...any) map[string]any {
		return bmCardRU(bmWith(map[string]any{"payment_method": "BANK_TRANSFER"}, extra), items...)
	}
	for _, id := range []any{foreign, 999_999_999} {
		ptfUnknownRequisite(t, pinvPost(t, s.pt, s.client.ID, bankBody(map[string]any{"partner_requisite_id": id}, sub)))
	}
	ptRequireErr(t, pinvPost(t, s.pt, s.client.ID, bmCardRU(nil, bmSubItem(999_999_999, "STANDARD", 1))), 404, 22000,
		"SUBSCRIPTION_NOT_FOUND", "subscription not found")
	otherReq := bmRequisite(t, stranger)
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		code   int
		error  string
	}{
		{"another company's requisite", bankBody(map[string]any{"company_requisite_id": otherReq["id"]}, bmDialogsItem(1)), 404, 22020, "REQUISITE_NOT_FOUND"},
		{"the client's requisite with a subscription", bankBody(map[string]any{"company_requisite_id": clientReq["id"]}, sub), 400, 22018, "SUBSCRIPTION_PAYMENTS_LOCKED"},
		{"KEEPZ without a keepz connection", bmCardRU(map[string]any{"payment_method": "CARD_OTHER", "card_provider": "KEEPZ"}, sub), 400, 18003, "INVOICE_PROVIDER_ERROR"},
	} {
		r := pinvPost(t, s.pt, s.client.ID, c.body)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
		require.EqualValues(t, c.code, r.JSON(t)["error_code"], "%s: %s", c.name, r.Body)
		require.Equal(t, c.error, r.JSON(t)["error_name"], "%s", c.name)
	}

	// The client's requisite for dialogs alone; the partner's for
	// anything. The client's payments_locked stops only its own.
	bmSetBilling(t, s.client.ID, map[string]any{"payments_locked": true})
	own := bmInvoice(t, s.client, bmCardRU(nil, bmDialogsItem(1)))
	require.Equal(t, 400, own.Status, "%s", own.Body)
	name := "Pinv Rules Client"
	r := pinvPost(t, s.pt, s.client.ID, bankBody(map[string]any{"company_requisite_id": clientReq["id"]}, bmDialogsItem(2)))
	requireJSON(t, r, 200, pinvAnswer(s.client, name, pinvSummary("BANK_TRANSFER", 0, clientReq, pinvDialogs(2, 10, 0)), 10, 10))
	r = pinvPost(t, s.pt, s.client.ID, bankBody(map[string]any{"partner_requisite_id": mine}, sub))
	requireJSON(t, r, 200, pinvAnswer(s.client, name, pinvSummary("BANK_TRANSFER", 398,
		map[string]any{"id": mine, "tin": "7707083893", "kpp": "773601001", "name": "Partner LLC", "approval_status": "APPROVED"},
		bmSubLine(s.sub, "STANDARD", 1, bmAmount(1592, 398, pinvDiscounts(0)), bmAmount(0, 0, pinvDiscounts(0)))), 1592, 1592))
	// Stored by transfer: no payment link.
	r = pinvPost(t, s.pt, s.client.ID, bmStored(bankBody(map[string]any{"partner_requisite_id": mine}, sub)))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Nil(t, r.JSON(t)["payment_url"])
	require.True(t, strings.Contains(string(r.Body), `"payer":"partner"`), "%s", r.Body)

	// Not a partner: 403.
	r = api(t, "POST", ptPath(stranger, "/partner_companies/%d/payments/invoices/", s.client.ID), bmCardRU(nil, sub), key(stranger.Key)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
}
