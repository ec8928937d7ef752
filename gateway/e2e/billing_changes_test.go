package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Plan and size changes (billing.md "Plan and size changes"): a change
// keeps the money already paid and recomputes time. The value left
// (remaining days × monthly price × size / 30) is spread over the new plan
// and size: new_paid_until = now + value left / (new monthly price × new
// size) × 30 days = now + (paid_until − now) × old monthly / new monthly.
// The instant is the request's, so new_paid_until is checked between what
// the instants before and after the request give (bmShifted).

func bmChangeAnswer(source, target any, preview bool) map[string]any {
	return map[string]any{"source": source, "target": target, "preview": preview}
}

// TestChangeSize: the preview (the default) changes nothing; preview false
// applies; the paid period stretches or shrinks with the size.
func TestChangeSize(t *testing.T) {
	t.Parallel()
	until := bmAt(30 * 24 * time.Hour)
	c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmTS(until), "clear_test_until": true})
	// STANDARD 2 → 4 with ≈30 days left: value left ≈ 30 × 1990 × 2 / 30
	// = 3980.00, over 1990 × 4 = 7960 a month → ≈ 15 days:
	// new_paid_until = now + (until − now) × 3980 / 7960 ≈ now + 15 days.
	for _, body := range []map[string]any{{"new_max_size": 4}, {"new_max_size": 4, "preview": true}} {
		before := time.Now()
		r := bmChange(t, c, sub["id"], "change_size", body)
		after := time.Now()
		requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 4, "STANDARD", bmShifted(until, 3980, 7960, bmFromNow, before, after)), nil, true))
		require.Equal(t, sub, bmSub(t, c, sub["id"]), "a preview changes nothing")
	}
	// With the trailing slash too.
	r := api(t, "POST", cpath(c, "/subscriptions/%v/actions/change_size/", sub["id"]), map[string]any{"new_max_size": 4}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)

	before := time.Now()
	r = bmChange(t, c, sub["id"], "change_size", map[string]any{"new_max_size": 4, "preview": false})
	after := time.Now()
	got := requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 4, "STANDARD", bmShifted(until, 3980, 7960, bmFromNow, before, after)), nil, false)).(map[string]any)
	newUntil := got["source"].(map[string]any)["new_paid_until"]
	half := bmParseTS(t, newUntil)
	require.WithinDuration(t, time.Now().Add(15*24*time.Hour), half, time.Minute, "≈ now + 15 days")
	sub4 := bmSub(t, c, sub["id"])
	require.Equal(t, bmWith(sub, map[string]any{"max_size": float64(4), "paid_until": newUntil}), sub4)

	// 4 → 1 (the one connection it holds): ≈15 days × 7960 / 1990 ≈ 60 days.
	before = time.Now()
	r = bmChange(t, c, sub["id"], "change_size", map[string]any{"new_max_size": 1, "preview": false})
	after = time.Now()
	got = requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub4, 1, "STANDARD", bmShifted(half, 7960, 1990, bmFromNow, before, after)), nil, false)).(map[string]any)
	newUntil = got["source"].(map[string]any)["new_paid_until"]
	require.WithinDuration(t, time.Now().Add(60*24*time.Hour), bmParseTS(t, newUntil), 5*time.Minute, "≈ now + 60 days")
	sub1 := bmSub(t, c, sub["id"])
	require.Equal(t, bmWith(sub4, map[string]any{"max_size": float64(1), "paid_until": newUntil}), sub1)

	// No value left (paid_until past): paid_until stays as it is.
	past := bmTS(bmAt(-24 * time.Hour))
	subPast := bmAdjust(t, c, sub["id"], map[string]any{"paid_until": past})
	requireJSON(t, bmChange(t, c, sub["id"], "change_size", map[string]any{"new_max_size": 3, "preview": false}), 200,
		bmChangeAnswer(bmSide(subPast, 3, "STANDARD", past), nil, false))
	require.Equal(t, bmWith(subPast, map[string]any{"max_size": float64(3)}), bmSub(t, c, sub["id"]))
	// paid_until null (no test period): stays null.
	subNull := bmAdjust(t, c, sub["id"], map[string]any{"clear_paid_until": true})
	requireJSON(t, bmChange(t, c, sub["id"], "change_size", map[string]any{"new_max_size": 5, "preview": false}), 200,
		bmChangeAnswer(bmSide(subNull, 5, "STANDARD", nil), nil, false))
	require.Equal(t, bmWith(subNull, map[string]any{"max_size": float64(5)}), bmSub(t, c, sub["id"]))
}

// TestChangePlan: the value left is spread over the new plan's price; to
// FREE (bots) paid_until becomes null.
func TestChangePlan(t *testing.T) {
	t.Parallel()
	until := bmAt(30 * 24 * time.Hour)
	c, sub := bmCompanyWith(t, "", map[string]any{"paid_until": bmTS(until), "clear_test_until": true})
	require.Equal(t, "START", sub["subscription_plan"])
	// START 1 → STANDARD 1: ≈30 days × 990 / 1990 ≈ 14.92 days.
	before := time.Now()
	r := bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"})
	after := time.Now()
	requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 1, "STANDARD", bmShifted(until, 990, 1990, bmFromNow, before, after)), nil, true))
	require.Equal(t, sub, bmSub(t, c, sub["id"]), "a preview changes nothing")
	before = time.Now()
	r = bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false})
	after = time.Now()
	got := requireJSON(t, r, 200, bmChangeAnswer(bmSide(sub, 1, "STANDARD", bmShifted(until, 990, 1990, bmFromNow, before, after)), nil, false)).(map[string]any)
	newUntil := got["source"].(map[string]any)["new_paid_until"]
	require.WithinDuration(t, time.Now().Add(30*24*time.Hour*990/1990), bmParseTS(t, newUntil), time.Minute)
	std := bmSub(t, c, sub["id"])
	require.Equal(t, bmWith(sub, map[string]any{"subscription_plan": "STANDARD", "paid_until": newUntil}), std)

	// And back: × 1990 / 990, ≈ 30 days again.
	shorter := bmParseTS(t, newUntil)
	before = time.Now()
	r = bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "START", "preview": false})
	after = time.Now()
	got = requireJSON(t, r, 200, bmChangeAnswer(bmSide(std, 1, "START", bmShifted(shorter, 1990, 990, bmFromNow, before, after)), nil, false)).(map[string]any)
	require.Equal(t, bmWith(std, map[string]any{"subscription_plan": "START", "paid_until": got["source"].(map[string]any)["new_paid_until"]}), bmSub(t, c, sub["id"]))

	// No value left: paid_until stays (past, or null).
	past := bmTS(bmAt(-time.Hour))
	subPast := bmAdjust(t, c, sub["id"], map[string]any{"paid_until": past})
	requireJSON(t, bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false}), 200,
		bmChangeAnswer(bmSide(subPast, 1, "STANDARD", past), nil, false))
	subNull := bmAdjust(t, c, sub["id"], map[string]any{"clear_paid_until": true})
	requireJSON(t, bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "START", "preview": false}), 200,
		bmChangeAnswer(bmSide(subNull, 1, "START", nil), nil, false))
	require.Equal(t, bmWith(subNull, map[string]any{"subscription_plan": "START"}), bmSub(t, c, sub["id"]))

	// A bot to FREE: paid_until null, whatever was left.
	bc, bot := bmCompanyWith(t, "telegram_bot", map[string]any{"subscription_plan": "STANDARD", "paid_until": bmTS(bmAt(30 * 24 * time.Hour)), "clear_test_until": true})
	requireJSON(t, bmChange(t, bc, bot["id"], "change_plan", map[string]any{"new_subscription_plan": "FREE"}), 200,
		bmChangeAnswer(bmSide(bot, 1, "FREE", nil), nil, true))
	require.Equal(t, bot, bmSub(t, bc, bot["id"]))
	requireJSON(t, bmChange(t, bc, bot["id"], "change_plan", map[string]any{"new_subscription_plan": "FREE", "preview": false}), 200,
		bmChangeAnswer(bmSide(bot, 1, "FREE", nil), nil, false))
	require.Equal(t, bmWith(bot, map[string]any{"subscription_plan": "FREE", "paid_until": nil}), bmSub(t, bc, bot["id"]))
}

// TestChangeTestPeriod: in the test period change_size is 409 22015;
// change_plan changes the plan and keeps test_until (paid_until stays null).
func TestChangeTestPeriod(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", nil)
	require.NotNil(t, sub["test_until"])
	require.Nil(t, sub["paid_until"])
	for _, body := range []map[string]any{{"new_max_size": 2}, {"new_max_size": 2, "preview": false}, {"new_max_size": 1}} {
		requireError(t, bmChange(t, c, sub["id"], "change_size", body), 409, 22015, "SUBSCRIPTION_IN_TEST")
	}
	requireJSON(t, bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}), 200,
		bmChangeAnswer(bmSide(sub, 1, "STANDARD", nil), nil, true))
	require.Equal(t, sub, bmSub(t, c, sub["id"]))
	requireJSON(t, bmChange(t, c, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD", "preview": false}), 200,
		bmChangeAnswer(bmSide(sub, 1, "STANDARD", nil), nil, false))
	require.Equal(t, bmWith(sub, map[string]any{"subscription_plan": "STANDARD"}), bmSub(t, c, sub["id"]), "test_until kept, paid_until null")
	// Still in the test period.
	requireError(t, bmChange(t, c, sub["id"], "change_size", map[string]any{"new_max_size": 3, "preview": false}), 409, 22015, "SUBSCRIPTION_IN_TEST")

	// A bot in its test period to FREE.
	bc, bot := bmCompanyWith(t, "telegram_bot", nil)
	requireJSON(t, bmChange(t, bc, bot["id"], "change_plan", map[string]any{"new_subscription_plan": "FREE", "preview": false}), 200,
		bmChangeAnswer(bmSide(bot, 1, "FREE", nil), nil, false))
	require.Equal(t, bmWith(bot, map[string]any{"subscription_plan": "FREE"}), bmSub(t, bc, bot["id"]))
}

// TestChangeRefusals: every refusal of a change, with its status, code and
// location; none changes anything.
func TestChangeRefusals(t *testing.T) {
	t.Parallel()
	c, sub := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2,
		"paid_until": bmTS(bmAt(30 * 24 * time.Hour)), "clear_test_until": true})
	mustCreate(t, c, "whatsapp", nil)
	sub = bmSub(t, c, sub["id"])
	require.EqualValues(t, 2, sub["current_size"])
	tok, _ := botToken()
	mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	bot := subscriptionOf(t, c, "telegram_bot")
	start := bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "START", "max_size": 1,
		"paid_until": bmTS(bmAt(30 * 24 * time.Hour))})
	small := bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "STANDARD", "max_size": 1})
	_, otherSub := bmCompanyWith(t, "", nil)
	sid := sub["id"]
	snapshot := listSubscriptions(t, c)

	for _, tc := range []struct {
		name   string
		id     any
		action string
		body   any
		field  string
	}{
		{"size missing", sid, "change_size", map[string]any{}, "new_max_size"},
		{"size only preview", sid, "change_size", map[string]any{"preview": false}, "new_max_size"},
		{"size null", sid, "change_size", map[string]any{"new_max_size": nil}, "new_max_size"},
		{"size negative", sid, "change_size", map[string]any{"new_max_size": -1}, "new_max_size"},
		{"size too big", sid, "change_size", map[string]any{"new_max_size": 10001}, "new_max_size"},
		{"size a string", sid, "change_size", map[string]any{"new_max_size": "4"}, "new_max_size"},
		{"size 0 without target", sid, "change_size", map[string]any{"new_max_size": 0, "preview": false}, "target_subscription_id"},
		{"size 0, target itself", sid, "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": sid}, "target_subscription_id"},
		{"size 0, target of another type", sid, "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": bot["id"]}, "target_subscription_id"},
		{"START size 2", start["id"], "change_size", map[string]any{"new_max_size": 2, "preview": false}, "new_max_size"},
		{"plan missing", sid, "change_plan", map[string]any{}, "new_subscription_plan"},
		{"plan unknown", sid, "change_plan", map[string]any{"new_subscription_plan": "GOLD"}, "new_subscription_plan"},
		{"plan FREE on whatsapp", sid, "change_plan", map[string]any{"new_subscription_plan": "FREE", "preview": false}, "new_subscription_plan"},
		{"plan ADVANCED", sid, "change_plan", map[string]any{"new_subscription_plan": "ADVANCED", "preview": false}, "new_subscription_plan"},
		{"plan START with size 2", sid, "change_plan", map[string]any{"new_subscription_plan": "START", "preview": false}, "new_subscription_plan"},
	} {
		r := bmChange(t, c, tc.id, tc.action, tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, "body", tc.field)
	}

	for _, tc := range []struct {
		name   string
		id     any
		action string
		body   any
		status int
		code   int
		err    string
	}{
		{"unknown subscription", 999999999999, "change_size", map[string]any{"new_max_size": 2}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"unknown subscription, plan", 999999999999, "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's", otherSub["id"], "change_size", map[string]any{"new_max_size": 2}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's, plan", otherSub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"unknown target", sid, "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": 999999999999}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"another company's target", sid, "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": otherSub["id"]}, 404, 22000, "SUBSCRIPTION_NOT_FOUND"},
		{"below the connections", sid, "change_size", map[string]any{"new_max_size": 1}, 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
		{"below the connections, applied", sid, "change_size", map[string]any{"new_max_size": 1, "preview": false}, 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
		{"target without room", sid, "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": small["id"], "preview": false}, 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT"},
	} {
		r := bmChange(t, c, tc.id, tc.action, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Body)
		requireError(t, r, tc.status, tc.code, tc.err)
	}
	require.Equal(t, snapshot, listSubscriptions(t, c))
	// The scope: read-only keys may not change.
	ro := newKey(t, c.ID, "subscriptions:read")
	bmRequireForbidden(t, bmChange(t, c, sid, "change_size", map[string]any{"new_max_size": 3}, key(ro)...))
	bmRequireForbidden(t, bmChange(t, c, sid, "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}, key(ro)...))
}

// TestChangeSizeToTarget: size 0 with a target of the same type moves the
// connections and the value left to it (from max(now, its paid_until));
// the source keeps max_size 0 and paid_until null.
func TestChangeSizeToTarget(t *testing.T) {
	t.Parallel()
	until := bmAt(30 * 24 * time.Hour)
	c, src := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 2, "paid_until": bmTS(until), "clear_test_until": true})
	a := src["connections"].([]any)[0]
	b := mustCreate(t, c, "whatsapp", nil)["id"]
	src = bmSub(t, c, src["id"])
	require.ElementsMatch(t, []any{a, b}, src["connections"])
	targetUntil := bmAt(5 * 24 * time.Hour)
	dst := bmNewSubscription(t, c, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "STANDARD", "max_size": 4, "paid_until": bmTS(targetUntil)})
	requireValue(t, map[string]any{"id": anyID, "connections": []any{}, "subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "STANDARD",
		"current_size": 0, "max_size": 4, "test_until": nil, "paid_until": bmTS(targetUntil), "advance": noAdvance}, dst)
	// Value left ≈ 30 days × 1990 × 2 / 30 = 3980.00, over the target's
	// 1990 × 4 = 7960 a month → ≈ 15 days on from the target's
	// paid_until (later than now): ≈ now + 5 + 15 = 20 days.
	move := map[string]any{"new_max_size": 0, "target_subscription_id": dst["id"]}
	before := time.Now()
	r := bmChange(t, c, src["id"], "change_size", move)
	after := time.Now()
	requireJSON(t, r, 200, bmChangeAnswer(bmSide(src, 0, "STANDARD", nil),
		bmSide(dst, 4, "STANDARD", bmShifted(until, 3980, 7960, bmFromLater(targetUntil), before, after)), true))
	require.Equal(t, src, bmSub(t, c, src["id"]))
	require.Equal(t, dst, bmSub(t, c, dst["id"]))

	before = time.Now()
	r = bmChange(t, c, src["id"], "change_size", bmWith(move, map[string]any{"preview": false}))
	after = time.Now()
	got := requireJSON(t, r, 200, bmChangeAnswer(bmSide(src, 0, "STANDARD", nil),
		bmSide(dst, 4, "STANDARD", bmShifted(until, 3980, 7960, bmFromLater(targetUntil), before, after)), false)).(map[string]any)
	moved := got["target"].(map[string]any)["new_paid_until"]
	require.WithinDuration(t, time.Now().Add(20*24*time.Hour), bmParseTS(t, moved), time.Minute, "≈ now + 20 days")
	require.Equal(t, bmWith(src, map[string]any{"connections": []any{}, "current_size": float64(0), "max_size": float64(0), "paid_until": nil}), bmSub(t, c, src["id"]))
	gotDst := bmSub(t, c, dst["id"])
	require.ElementsMatch(t, []any{a, b}, gotDst["connections"])
	require.Equal(t, bmWith(dst, map[string]any{"connections": gotDst["connections"], "current_size": float64(2), "paid_until": moved}), gotDst)
	// The connections follow.
	for _, conn := range []any{a, b} {
		r := api(t, "GET", cpath(c, "/connections/%v", conn), nil, key(c.Key)...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.Equal(t, dst["id"], r.JSON(t)["subscription_id"])
	}
	// Back to the source: it has no room now (max_size 0).
	requireError(t, bmChange(t, c, dst["id"], "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": src["id"]}), 409, 22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT")

	// A target whose paid period is over gets the value from now: ≈30 days
	// × 1990 × 1 / 30 = 1990.00 over START 990 a month → ≈ 60.3 days.
	until2 := bmAt(30 * 24 * time.Hour)
	c2, src2 := bmCompanyWith(t, "", map[string]any{"subscription_plan": "STANDARD", "max_size": 1, "paid_until": bmTS(until2), "clear_test_until": true})
	dst2 := bmNewSubscription(t, c2, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "START", "max_size": 1,
		"paid_until": bmTS(bmAt(-3 * 24 * time.Hour))})
	before = time.Now()
	r = bmChange(t, c2, src2["id"], "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": dst2["id"], "preview": false})
	after = time.Now()
	got = requireJSON(t, r, 200, bmChangeAnswer(bmSide(src2, 0, "STANDARD", nil),
		bmSide(dst2, 1, "START", bmShifted(until2, 1990, 990, bmFromNow, before, after)), false)).(map[string]any)
	moved = got["target"].(map[string]any)["new_paid_until"]
	require.Equal(t, moved, bmSub(t, c2, dst2["id"])["paid_until"])
	require.Equal(t, src2["connections"], bmSub(t, c2, dst2["id"])["connections"])
}

// TestChangeErrorOrder: body 422, then 404, then 22017, then 22015, then
// the plan rules (422), then 22019.
func TestChangeErrorOrder(t *testing.T) {
	t.Parallel()
	// Body before 404.
	c, fresh := bmCompanyWith(t, "", nil)
	requireLoc(t, bmChange(t, c, 999999999999, "change_size", map[string]any{}), "body", "new_max_size")
	requireLoc(t, bmChange(t, c, 999999999999, "change_plan", map[string]any{"new_subscription_plan": "GOLD"}), "body", "new_subscription_plan")
	// 404 before 22015 (a test period source, an unknown target).
	requireError(t, bmChange(t, c, fresh["id"], "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": 999999999999}), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
	// 22015 before the plan rules: START in its test period to size 2.
	requireError(t, bmChange(t, c, fresh["id"], "change_size", map[string]any{"new_max_size": 2}), 409, 22015, "SUBSCRIPTION_IN_TEST")
	// 22015 before 22019: two connections in the test period, size 1.
	bmAdjust(t, c, fresh["id"], map[string]any{"subscription_plan": "STANDARD", "max_size": 2})
	mustCreate(t, c, "whatsapp", nil)
	require.EqualValues(t, 2, bmSub(t, c, fresh["id"])["current_size"])
	requireError(t, bmChange(t, c, fresh["id"], "change_size", map[string]any{"new_max_size": 1}), 409, 22015, "SUBSCRIPTION_IN_TEST")
	// Plan rules before 22019: out of the test period, STANDARD 2 with
	// two connections to START (size 1 < 2 connections) is the plan's 422.
	bmAdjust(t, c, fresh["id"], map[string]any{"clear_test_until": true, "paid_until": bmTS(bmAt(10 * 24 * time.Hour))})
	requireLoc(t, bmChange(t, c, fresh["id"], "change_plan", map[string]any{"new_subscription_plan": "START"}), "body", "new_subscription_plan")

	// With an active advance (billing_advance_test.go).
	ac, sub, _ := bmEligible(t)
	require.Equal(t, 200, bmAdvance(t, ac, sub["id"]).Status)
	// 404 before 22017.
	requireError(t, bmChange(t, ac, sub["id"], "change_size", map[string]any{"new_max_size": 0, "target_subscription_id": 999999999999}), 404, 22000, "SUBSCRIPTION_NOT_FOUND")
	// 22017 before the plan rules: START to size 2, whatsapp to FREE.
	requireError(t, bmChange(t, ac, sub["id"], "change_size", map[string]any{"new_max_size": 2}), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	requireError(t, bmChange(t, ac, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "FREE"}), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	// 22017 before 22015: the operator puts it in a test period (not a
	// payment: the advance stays unrepaid).
	bmAdjust(t, ac, sub["id"], map[string]any{"clear_paid_until": true, "test_until": bmTS(bmAt(48 * time.Hour))})
	requireError(t, bmChange(t, ac, sub["id"], "change_size", map[string]any{"new_max_size": 1}), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	requireError(t, bmChange(t, ac, sub["id"], "change_plan", map[string]any{"new_subscription_plan": "STANDARD"}), 409, 22017, "SUBSCRIPTION_ADVANCE_ACTIVE")
	// Body still first.
	requireLoc(t, bmChange(t, ac, sub["id"], "change_size", map[string]any{"new_max_size": 0}), "body", "target_subscription_id")
}
