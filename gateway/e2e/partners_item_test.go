package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPartnerClientItemFields (partners.md "Clients"): waba_dialogs_balance
// is billing's; paid_until the latest of the non-FREE subscriptions'
// paid_until, test_until the latest of all, null when none.
func TestPartnerClientItemFields(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Item Fields")
	c := ptClient(t, pt.Code, "Fields Client")
	item := ptItem(c, "Fields Client", "partner")
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)

	// Dialogs: added and taken away by the operator, below 0 too.
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": 7}), 7)
	item["waba_dialogs_balance"] = 7
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	requireBalance(t, addWabaDialogs(t, c.ID, map[string]any{"count": -9}), -2)
	item["waba_dialogs_balance"] = -2
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(1, item))

	// A whatsapp subscription in its test period: test_until.
	mustCreate(t, c, "whatsapp", nil)
	wa := subscriptionOf(t, c, "whatsapp")
	item["test_until"] = wa["test_until"]
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	// Paid until 2031: paid_until.
	wa = bmAdjust(t, c, wa["id"], map[string]any{"paid_until": "2031-03-04T05:06:07.123456Z", "test_until": "2030-01-01T00:00:00Z"})
	item["paid_until"], item["test_until"] = "2031-03-04T05:06:07.123456Z", "2030-01-01T00:00:00.000000Z"
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	// A FREE bot paid until 2040 and testing until 2035: its paid_until
	// does not count, its test_until does (the latest).
	tok, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	bot := subscriptionOf(t, c, "telegram_bot")["id"]
	bmAdjust(t, c, bot, map[string]any{"subscription_plan": "FREE",
		"paid_until": "2040-01-01T00:00:00Z", "test_until": "2035-01-01T00:00:00Z"})
	item["test_until"] = "2035-01-01T00:00:00.000000Z"
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	// A further subscription paid until 2032 (later): paid_until moves;
	// an earlier one does not.
	bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "STANDARD", "max_size": 1,
		"paid_until": "2032-01-01T00:00:00Z"})
	bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_TELEGRAM_BOT", "subscription_plan": "START", "max_size": 1,
		"paid_until": "2029-01-01T00:00:00Z", "test_until": "2028-01-01T00:00:00Z"})
	item["paid_until"] = "2032-01-01T00:00:00.000000Z"
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	// The bot leaves FREE: its paid_until (2040) counts now.
	bmAdjust(t, c, bot, map[string]any{"subscription_plan": "START"})
	item["paid_until"] = "2040-01-01T00:00:00.000000Z"
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	// Everything cleared: null again.
	for _, s := range listSubscriptions(t, c) {
		bmAdjust(t, c, s.(map[string]any)["id"], map[string]any{"clear_paid_until": true, "clear_test_until": true})
	}
	item["paid_until"], item["test_until"] = nil, nil
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(1, item))
}

// TestPartnerClientNote: note is null until set; PUT .../note {note}
// answers 204 without a body; "" is kept as ""; at most 4096 characters;
// the note is the partner's, on either type of client.
func TestPartnerClientNote(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Note Partner")
	c := ptClient(t, pt.Code, "Note Client")
	ref := ptClient(t, pt.ReferralCode, "Note Referral")
	item, refItem := ptItem(c, "Note Client", "partner"), ptItem(ref, "Note Referral", "referral")
	put := func(id any, body any) response {
		t.Helper()
		return api(t, "PUT", ptPath(pt.company, "/partner_companies/%v/note", id), body, key(pt.Key)...)
	}
	noContent := func(r response) {
		t.Helper()
		require.Equal(t, 204, r.Status, "%s", r.Body)
		require.Empty(t, r.Body)
	}
	requireJSON(t, ptGet(t, pt, c.ID), 200, item)

	for _, note := range []string{"Call on Monday", "", "  spaces kept  ", "Многострочная\nзаметка 😀", strings.Repeat("я", 4096)} {
		noContent(put(c.ID, map[string]any{"note": note}))
		item["note"] = note
		requireJSON(t, ptGet(t, pt, c.ID), 200, item)
	}
	// With the trailing slash too.
	noContent(api(t, "PUT", ptPath(pt.company, "/partner_companies/%d/note/", c.ID), map[string]any{"note": "slash"}, key(pt.Key)...))
	item["note"] = "slash"
	// A referral's note.
	noContent(put(ref.ID, map[string]any{"note": ""}))
	refItem["note"] = ""
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(2, item, refItem))

	// Refusals: 422 on body.note, nothing changes.
	for name, body := range map[string]any{
		"missing":       map[string]any{},
		"null":          map[string]any{"note": nil},
		"not a string":  map[string]any{"note": 5},
		"4097":          map[string]any{"note": strings.Repeat("я", 4097)},
		"other field":   map[string]any{"text": "x"},
		"no body":       nil,
		"a bare string": `"x"`,
	} {
		r := put(c.ID, body)
		require.Equal(t, 422, r.Status, "%s: %s", name, r.Body)
		if name != "no body" && name != "a bare string" {
			requireLoc(t, r, "body", "note")
		}
	}
	requireJSON(t, put(c.ID, map[string]any{}), 422, unprocessable(fieldErr("missing", "Field required", "body", "note")))
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(2, item, refItem))

	// Another partner has no note on its own client of the same name.
	other := ptNewPartner(t, "Note Other")
	oc := ptClient(t, other.Code, "Note Client")
	requireJSON(t, ptGet(t, other, oc.ID), 200, ptItem(oc, "Note Client", "partner"))
}

// TestPartnerPaymentsLocked: PATCH .../{id} {payments_locked} on a
// partner-type client answers the item; the client's card follows and its
// own invoices (previews too) are 400 22018 until unlocked; a referral is
// 400 31003.
func TestPartnerPaymentsLocked(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Lock Partner")
	c := ptClient(t, pt.Code, "Lock Client")
	ref := ptClient(t, pt.ReferralCode, "Lock Referral")
	patch := func(id any, body any) response {
		t.Helper()
		return api(t, "PATCH", ptPath(pt.company, "/partner_companies/%v", id), body, key(pt.Key)...)
	}
	card := func(cc company, locked bool) {
		t.Helper()
		var m map[string]any
		for deadline := time.Now().Add(waitFor); ; time.Sleep(tick) {
			r := api(t, "GET", p("/v2/companies/%d", cc.ID), nil, key(cc.Key)...)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			m = r.JSON(t)
			if m["payments_locked"] == locked || time.Now().After(deadline) {
				break
			}
		}
		requireValue(t, bmWith(ptCreated(m["name"].(string)), map[string]any{"id": cc.ID, "payments_locked": locked}), m)
	}
	dialogs := bmCardRU(nil, bmDialogsItem(3))
	invoice := func(want int) response {
		t.Helper()
		var r response
		for deadline := time.Now().Add(waitFor); ; time.Sleep(tick) {
			r = bmInvoice(t, c, dialogs)
			if r.Status == want || time.Now().After(deadline) {
				return r
			}
		}
	}
	item := ptItem(c, "Lock Client", "partner")
	require.Equal(t, 200, invoice(200).Status)

	requireJSON(t, patch(c.ID, map[string]any{"payments_locked": true}), 200, bmWith(item, map[string]any{"payments_locked": true}))
	requireJSON(t, ptGet(t, pt, c.ID), 200, bmWith(item, map[string]any{"payments_locked": true}))
	card(c, true)
	requireError(t, invoice(400), 400, 22018, "SUBSCRIPTION_PAYMENTS_LOCKED")
	requireError(t, bmInvoice(t, c, bmStored(dialogs)), 400, 22018, "SUBSCRIPTION_PAYMENTS_LOCKED")
	// Again: the same.
	requireJSON(t, patch(c.ID, map[string]any{"payments_locked": true}), 200, bmWith(item, map[string]any{"payments_locked": true}))
	// The operator's view of the client's billing says the same.
	require.Equal(t, true, bmBilling(t, c.ID)["payments_locked"])

	// Refusals: the body, a referral; nothing changes.
	for name, body := range map[string]any{"missing": map[string]any{}, "null": map[string]any{"payments_locked": nil},
		"a string": map[string]any{"payments_locked": "yes"}} {
		r := patch(c.ID, body)
		require.Equal(t, 422, r.Status, "%s: %s", name, r.Body)
		requireLoc(t, r, "body", "payments_locked")
	}
	ptReferral(t, patch(ref.ID, map[string]any{"payments_locked": true}))
	ptReferral(t, patch(ref.ID, map[string]any{"payments_locked": false}))
	card(ref, false)
	require.Equal(t, 200, bmInvoice(t, ref, dialogs).Status, "the referral pays for itself")

	// Unlocked: the card and the invoices follow.
	requireJSON(t, patch(c.ID, map[string]any{"payments_locked": false}), 200, item)
	card(c, false)
	require.Equal(t, 200, invoice(200).Status)
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(2, item, ptItem(ref, "Lock Referral", "referral")))
}
