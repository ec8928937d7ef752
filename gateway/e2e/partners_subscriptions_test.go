package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPartnerClientSubscriptions (partners.md "Client subscriptions"): a
// bare array, the client's own list with each connection {id, type, name,
// phone} (phone: params.phone, null until a whatsapp is authorised; none
// for a bot); referral clients' too.
func TestPartnerClientSubscriptions(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Subs Partner")
	c := ptClient(t, pt.Code, "Subs Client")
	requireJSON(t, ptSubs(t, pt, c.ID), 200, []any{})

	wa := mustCreate(t, c, "whatsapp", nil)
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	conns := map[any]map[string]any{
		wa["id"]:  ptConn(wa["id"], "whatsapp", "My whatsapp", nil),
		bot["id"]: ptConn(bot["id"], "telegram_bot", "My telegram_bot", nil),
	}
	own := listSubscriptions(t, c)
	require.Len(t, own, 2)
	want := ptClientSubs(own, conns)
	requireJSON(t, ptSubs(t, pt, c.ID), 200, want)
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/partner_companies/%d/subscriptions/", c.ID), nil, key(pt.Key)...), 200, want)
	for _, s := range want {
		require.Equal(t, noAdvance, s.(map[string]any)["advance"], "in the test period")
	}

	// Authorised, the whatsapp connection has its phone; a second one in
	// the same subscription follows it.
	ph := newPhone()
	require.Equal(t, 200, api(t, "POST", cpath(c, "/whatsapp/%v/login", wa["id"]), map[string]any{}, key(c.Key)...).Status)
	r := api(t, "POST", p("/sandbox/v1/whatsapp/%v/scan", wa["id"]), map[string]any{"phone": ph}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, digits(ph), r.JSON(t)["params"].(map[string]any)["phone"])
	conns[wa["id"]] = ptConn(wa["id"], "whatsapp", "My whatsapp", digits(ph))
	raiseLimit(t, c, "whatsapp", 2)
	r = api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Second WA", "type": "whatsapp"}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	wa2 := r.JSON(t)
	conns[wa2["id"]] = ptConn(wa2["id"], "whatsapp", "Second WA", nil)
	own = listSubscriptions(t, c)
	requireJSON(t, ptSubs(t, pt, c.ID), 200, ptClientSubs(own, conns))
	waSub := subscriptionOf(t, c, "whatsapp")
	require.Len(t, waSub["connections"], 2)

	// A referral's subscriptions are listed too.
	ref := ptClient(t, pt.ReferralCode, "Subs Referral")
	refBot := mustCreate(t, ref, "telegram_bot", map[string]any{"bot_token": func() string { tk, _ := botToken(); return tk }()})
	requireJSON(t, ptSubs(t, pt, ref.ID), 200, ptClientSubs(listSubscriptions(t, ref),
		map[any]map[string]any{refBot["id"]: ptConn(refBot["id"], "telegram_bot", "My telegram_bot", nil)}))
}

// TestPartnerClientChanges (partners.md "Client subscriptions"):
// change_size and change_plan on a partner-type client's subscription,
// with billing's rules (preview by default; 409 22015 for change_size in
// the test period; the value left spread over the new price); a referral
// is 400 31003; a subscription not the client's 404 22000.
func TestPartnerClientChanges(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Changes Partner")
	c := ptClient(t, pt.Code, "Changes Client")
	mustCreate(t, c, "whatsapp", nil)
	sub := subscriptionOf(t, c, "whatsapp")
	change := func(action string, body any) response {
		t.Helper()
		return ptAction(t, pt, c.ID, sub["id"], action, body)
	}

	// In the test period: change_size 409 22015; change_plan keeps
	// paid_until (null).
	requireError(t, change("change_size", map[string]any{"new_max_size": 2}), 409, 22015, "SUBSCRIPTION_IN_TEST")
	requireError(t, change("change_size", map[string]any{"new_max_size": 2, "preview": false}), 409, 22015, "SUBSCRIPTION_IN_TEST")
	requireJSON(t, change("change_plan", map[string]any{"new_subscription_plan": "STANDARD"}), 200,
		bmChangeAnswer(bmSide(sub, 1, "STANDARD", nil), nil, true))
	require.Equal(t, sub, subscriptionOf(t, c, "whatsapp"), "a preview changes nothing")

	// Paid for 30 days on START: to STANDARD ≈ 30 × 990 / 1990 ≈ 14.92
	// days.
	until := bmAt(30 * 24 * time.Hour)
	sub = bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(until), "clear_test_until": true})
	for _, body := range []map[string]any{{"new_subscription_plan": "STANDARD"}, {"new_subscription_plan": "STANDARD", "preview": true}} {
		before := time.Now()
		r := change("change_plan", body)
		after := time.Now()
		requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 1, "STANDARD", bmShifted(until, 990, 1990, bmFromNow, before, after)), nil, true))
	}
	require.Equal(t, sub, subscriptionOf(t, c, "whatsapp"), "a preview changes nothing")
	before := time.Now()
	r := api(t, "POST", ptPath(pt.company, "/partner_companies/%d/subscriptions/%v/actions/change_plan/", c.ID, sub["id"]),
		map[string]any{"new_subscription_plan": "STANDARD", "preview": false}, key(pt.Key)...)
	after := time.Now()
	got := requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 1, "STANDARD", bmShifted(until, 990, 1990, bmFromNow, before, after)), nil, false)).(map[string]any)
	newUntil := got["source"].(map[string]any)["new_paid_until"]
	std := bmWith(sub, map[string]any{"subscription_plan": "STANDARD", "paid_until": newUntil})
	require.Equal(t, std, subscriptionOf(t, c, "whatsapp"))

	// STANDARD 1 → 3: × 1990 / 5970.
	shorter := bmParseTS(t, newUntil)
	before = time.Now()
	r = change("change_size", map[string]any{"new_max_size": 3})
	after = time.Now()
	requireJSON(t, r, 200, bmChangeAnswer(bmSide(std, 3, "STANDARD", bmShifted(shorter, 1990, 5970, bmFromNow, before, after)), nil, true))
	require.Equal(t, std, subscriptionOf(t, c, "whatsapp"))
	before = time.Now()
	r = change("change_size", map[string]any{"new_max_size": 3, "preview": false})
	after = time.Now()
	got = requireJSON(t, r, 200, bmChangeAnswer(bmSide(std, 3, "STANDARD", bmShifted(shorter, 1990, 5970, bmFromNow, before, after)), nil, false)).(map[string]any)
	std3 := bmWith(std, map[string]any{"max_size": float64(3), "paid_until": got["source"].(map[string]any)["new_paid_until"]})
	require.Equal(t, std3, subscriptionOf(t, c, "whatsapp"))
	// The partner's list shows the same.
	requireJSON(t, ptSubs(t, pt, c.ID), 200, ptClientSubs(listSubscriptions(t, c),
		map[any]map[string]any{std3["connections"].([]any)[0]: ptConn(std3["connections"].([]any)[0], "whatsapp", "My whatsapp", nil)}))

	// Refusals: nothing changes.
	other := ptClient(t, pt.Code, "Changes Other Client")
	mustCreate(t, other, "whatsapp", nil)
	otherSub := subscriptionOf(t, other, "whatsapp")
	_, strangerSub := bmCompanyWith(t, "", nil)
	for _, tc := range []struct {
		name   string
		id     any
		action string
		body   any
		status int
		code   int
		field  string
	}{
		{"new_max_size missing", sub["id"], "change_size", map[string]any{}, 422, 1, "new_max_size"},
		{"new_max_size negative", sub["id"], "change_size", map[string]any{"new_max_size": -1}, 422, 1, "new_max_size"},
		{"new_max_size 0 without a target", sub["id"], "change_size", map[string]any{"new_max_size": 0}, 422, 1, ""},
		{"plan missing", sub["id"], "change_plan", map[string]any{}, 422, 1, "new_subscription_plan"},
		{"plan unknown", sub["id"], "change_plan", map[string]any{"new_subscription_plan": "GOLD"}, 422, 1, "new_subscription_plan"},
		{"START with 3 places", sub["id"], "change_plan", map[string]any{"new_subscription_plan": "START"}, 422, 1, ""},
		{"FREE for whatsapp", sub["id"], "change_plan", map[string]any{"new_subscription_plan": "FREE"}, 422, 1, ""},
		{"unknown subscription", 999999999999, "change_size", map[string]any{"new_max_size": 1}, 404, 22000, ""},
		{"unknown subscription plan", 999999999999, "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, 404, 22000, ""},
		{"another client's", otherSub["id"], "change_size", map[string]any{"new_max_size": 1}, 404, 22000, ""},
		{"another client's plan", otherSub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, 404, 22000, ""},
		{"a stranger's", strangerSub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false}, 404, 22000, ""},
	} {
		r := ptAction(t, pt, c.ID, tc.id, tc.action, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		switch {
		case tc.field != "":
			requireLoc(t, r, "body", tc.field)
		case tc.code == 22000:
			requireBody(t, `{"error_code":22000,"error_name":"SUBSCRIPTION_NOT_FOUND","message":"subscription not found","detail":{}}`, r)
		default:
			require.EqualValues(t, tc.code, r.JSON(t)["error_code"], "%s", r.Body)
		}
	}
	require.Equal(t, std3, subscriptionOf(t, c, "whatsapp"))
	require.Equal(t, otherSub, subscriptionOf(t, other, "whatsapp"))

	// A referral's subscription: 400 31003, its own or not.
	ref := ptClient(t, pt.ReferralCode, "Changes Referral")
	mustCreate(t, ref, "whatsapp", nil)
	refSub := bmAdjust(t, ref, subscriptionOf(t, ref, "whatsapp")["id"], map[string]any{"paid_until": bmTS(until), "clear_test_until": true})
	for _, id := range []any{refSub["id"], sub["id"]} {
		ptReferral(t, ptAction(t, pt, ref.ID, id, "change_size", map[string]any{"new_max_size": 1}))
		ptReferral(t, ptAction(t, pt, ref.ID, id, "change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false}))
	}
	require.Equal(t, refSub, subscriptionOf(t, ref, "whatsapp"))
	// The referral changes its own (billing's route).
	require.Equal(t, 200, bmChange(t, ref, refSub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}).Status)
}

// TestPartnerClientAdvance: a partner-type client may not have its own
// advance (its route 400 22016, its list is_available false); the
// partner's route grants it (billing's conditions: a paying plan, a real
// payment, at most 2 days left), answering the subscription as the
// partner lists it; a referral's is 31003 on the partner's route and its
// own to take.
func TestPartnerClientAdvance(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Advance Partner")
	eligible := func(code, name string) (company, map[string]any, time.Time) {
		t.Helper()
		c := ptClient(t, code, name)
		mustCreate(t, c, "whatsapp", nil)
		sub := bmAdjust(t, c, subscriptionOf(t, c, "whatsapp")["id"], map[string]any{"clear_test_until": true})
		bmPaidOnce(t, c, sub["id"])
		until := bmAt(24 * time.Hour)
		return c, bmAdjust(t, c, sub["id"], map[string]any{"paid_until": bmTS(until)}), until
	}
	c, sub, until := eligible(pt.Code, "Advance Client")
	conns := map[any]map[string]any{sub["connections"].([]any)[0]: ptConn(sub["connections"].([]any)[0], "whatsapp", "My whatsapp", nil)}

	// The client's own view: not available, refused.
	require.Equal(t, noAdvance, sub["advance"])
	bmRequireNoAdvance(t, c, sub)
	// The partner's: available.
	requireJSON(t, ptSubs(t, pt, c.ID), 200, ptClientSubs([]any{bmWith(sub, map[string]any{"advance": bmAdvanceAvailable})}, conns))
	// Only with scope partners (read-write).
	bmRequireForbidden(t, ptAction(t, pt, c.ID, sub["id"], "advance", nil, key(newKey(t, pt.ID, "partners:read"))...))
	bmRequireForbidden(t, ptAction(t, pt, c.ID, sub["id"], "advance", nil, key(newKey(t, pt.ID, "subscriptions"))...))
	require.Equal(t, sub, bmSub(t, c, sub["id"]))

	granted := bmWith(sub, map[string]any{"paid_until": bmTS(until.Add(120 * time.Hour)), "advance": bmAdvanceActive})
	requireJSON(t, ptAction(t, pt, c.ID, sub["id"], "advance", nil), 200, ptClientSubs([]any{granted}, conns)[0])
	require.Equal(t, granted, bmSub(t, c, sub["id"]))
	requireJSON(t, ptSubs(t, pt, c.ID), 200, ptClientSubs([]any{granted}, conns))
	// Once.
	requireError(t, ptAction(t, pt, c.ID, sub["id"], "advance", nil), 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
	// Active, it blocks changes on the partner's route too.
	requireError(t, ptAction(t, pt, c.ID, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	require.Equal(t, granted, bmSub(t, c, sub["id"]))

	// Conditions unmet on the partner's route: 400 22016 (the test
	// period; a month left).
	fresh := ptClient(t, pt.Code, "Advance Fresh")
	mustCreate(t, fresh, "whatsapp", nil)
	freshSub := subscriptionOf(t, fresh, "whatsapp")
	requireError(t, ptAction(t, pt, fresh.ID, freshSub["id"], "advance", nil), 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
	c2, sub2, _ := eligible(pt.Code, "Advance Month Left")
	sub2 = bmAdjust(t, c2, sub2["id"], map[string]any{"paid_until": bmTS(bmAt(30 * 24 * time.Hour))})
	requireJSON(t, ptSubs(t, pt, c2.ID), 200, ptClientSubs([]any{sub2},
		map[any]map[string]any{sub2["connections"].([]any)[0]: ptConn(sub2["connections"].([]any)[0], "whatsapp", "My whatsapp", nil)}))
	requireError(t, ptAction(t, pt, c2.ID, sub2["id"], "advance", nil), 400, 22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED")
	require.Equal(t, sub2, bmSub(t, c2, sub2["id"]))
	// Not the client's subscription: 404 22000.
	requireError(t, ptAction(t, pt, c.ID, 999999999999, "advance", nil), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
	requireError(t, ptAction(t, pt, c.ID, sub2["id"], "advance", nil), 404, 22000, "SUBSCRIPTION_NOT_FOUND")

	// A referral: 31003 on the partner's route; its own route grants it.
	ref, refSub, refUntil := eligible(pt.ReferralCode, "Advance Referral")
	require.Equal(t, bmAdvanceAvailable, refSub["advance"])
	ptReferral(t, ptAction(t, pt, ref.ID, refSub["id"], "advance", nil))
	require.Equal(t, refSub, bmSub(t, ref, refSub["id"]))
	requireJSON(t, bmAdvance(t, ref, refSub["id"]), 200,
		bmWith(refSub, map[string]any{"paid_until": bmTS(refUntil.Add(120 * time.Hour)), "advance": bmAdvanceActive}))
}
