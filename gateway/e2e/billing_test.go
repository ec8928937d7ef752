package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func listSubscriptions(t *testing.T, c company) []any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var out []any
	require.NoError(t, json.Unmarshal(r.Body, &out), "%s", r.Body)
	return out
}

// testUntil accepts a test period ending about three days from now.
func testUntil() matcher {
	return matcher{"about now + 3 days", func(v any) bool {
		s, _ := v.(string)
		if !timeRe.MatchString(s) {
			return false
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		want := time.Now().Add(72 * time.Hour)
		return err == nil && ts.After(want.Add(-10*time.Minute)) && ts.Before(want.Add(10*time.Minute))
	}}
}

var noAdvance = map[string]any{"is_active": false, "is_available": false}

// TestSubscriptionsList: the first connection of a type makes its START
// subscription with a test period; every type has its own.
func TestSubscriptionsList(t *testing.T) {
	c := newCompany(t, nil)
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...), 200, []any{})
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions"), nil, key(c.Key)...), 200, []any{})

	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	botSub := map[string]any{"id": bot["subscription_id"], "connections": []any{bot["id"]}, "subscription_type": "CONNECTION_TELEGRAM_BOT",
		"subscription_plan": "START", "current_size": 1, "max_size": 1, "test_until": testUntil(), "paid_until": nil, "advance": noAdvance}
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/"), nil, key(c.Key)...), 200, []any{botSub})

	wa := mustCreate(t, c, "whatsapp", nil)
	require.NotEqual(t, bot["subscription_id"], wa["subscription_id"])
	waSub := map[string]any{"id": wa["subscription_id"], "connections": []any{wa["id"]}, "subscription_type": "CONNECTION_WHATSAPP",
		"subscription_plan": "START", "current_size": 1, "max_size": 1, "test_until": testUntil(), "paid_until": nil, "advance": noAdvance}
	subs := listSubscriptions(t, c)
	require.Len(t, subs, 2)
	byType := map[any]any{}
	for _, s := range subs {
		byType[s.(map[string]any)["subscription_type"]] = s
	}
	for _, want := range []map[string]any{botSub, waSub} {
		requireValue(t, want, byType[want["subscription_type"]])
	}

	// Another company sees its own only.
	other := newCompany(t, nil)
	require.Empty(t, listSubscriptions(t, other))

	// Scopes: subscriptions and connections are separate grants.
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	r := api(t, "GET", cpath(c, "/subscriptions/"), nil, key(newKey(t, c.ID, "connections"))...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, forbidden, r)
	subsOnly := newKey(t, c.ID, "subscriptions")
	r = api(t, "GET", cpath(c, "/connections/"), nil, key(subsOnly)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, forbidden, r)
	require.Equal(t, 200, api(t, "GET", cpath(c, "/subscriptions/"), nil, key(subsOnly)...).Status)
	ro := newKey(t, c.ID, "subscriptions:read")
	require.Equal(t, 200, api(t, "GET", cpath(c, "/subscriptions/"), nil, key(ro)...).Status)
	r = api(t, "PATCH", cpath(c, "/subscriptions/%v", bot["subscription_id"]), map[string]any{"connections": []any{}}, key(ro)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, forbidden, r)
	require.Len(t, subscriptionOf(t, c, "telegram_bot")["connections"], 1)
}

// TestSubscriptionUpdate: setting a subscription's connections, with and
// without preview, and every refusal.
func TestSubscriptionUpdate(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	a := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	sub := subscriptionOf(t, c, "telegram_bot")
	sid := sub["id"]
	patch := func(c company, id any, body any) response {
		t.Helper()
		return api(t, "PATCH", cpath(c, "/subscriptions/%v", id), body, key(c.Key)...)
	}
	with := func(conns ...any) map[string]any {
		out := map[string]any{}
		for k, v := range sub {
			out[k] = v
		}
		if conns == nil {
			conns = []any{}
		}
		out["connections"] = conns
		out["current_size"] = float64(len(conns))
		return out
	}
	getConn := func(id any) map[string]any {
		t.Helper()
		r := api(t, "GET", cpath(c, "/connections/%v", id), nil, key(c.Key)...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON(t)
	}

	// A preview answers the result and changes nothing.
	requireJSON(t, patch(c, sid, map[string]any{"connections": []any{}, "preview": true}), 200, with())
	require.Equal(t, sub, subscriptionOf(t, c, "telegram_bot"))
	require.Equal(t, a, getConn(a["id"]))

	// Taking every connection out: the connection has no subscription, the
	// limit still counts it.
	requireJSON(t, patch(c, sid, map[string]any{"connections": []any{}}), 200, with())
	require.Equal(t, with(), subscriptionOf(t, c, "telegram_bot"))
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	out["subscription_id"], out["subscription"] = nil, nil
	require.Equal(t, out, getConn(a["id"]))
	requireLimit(t, c, "connections_telegram_bot", 1, 1)
	tok2, _ := botToken()
	requireError(t, createConnection(t, c, "telegram_bot", map[string]any{"bot_token": tok2}), 400, 10010, "CONNECTION_LIMIT_EXCEEDED")

	// And back in.
	requireJSON(t, patch(c, sid, map[string]any{"connections": []any{a["id"]}, "preview": false}), 200, with(a["id"]))
	require.Equal(t, a, getConn(a["id"]))

	// Refusals name the field; nothing changes.
	wa := mustCreate(t, c, "whatsapp", nil)
	other := newCompany(t, nil)
	tok3, _ := botToken()
	foreign := mustCreate(t, other, "telegram_bot", map[string]any{"bot_token": tok3})
	for _, tc := range []struct {
		name string
		body any
		loc  []any
	}{
		{"missing", map[string]any{}, []any{"body", "connections"}},
		{"only preview", map[string]any{"preview": true}, []any{"body", "connections"}},
		{"not an array", map[string]any{"connections": "all"}, []any{"body", "connections"}},
		{"not an integer", map[string]any{"connections": []any{"x"}}, []any{"body", "connections", 0}},
		{"over max_size", map[string]any{"connections": []any{a["id"], a["id"]}}, nil},
		{"another type", map[string]any{"connections": []any{wa["id"]}}, []any{"body", "connections", 0}},
		{"another type second", map[string]any{"connections": []any{a["id"], wa["id"]}}, nil},
		{"unknown connection", map[string]any{"connections": []any{999999999}}, []any{"body", "connections", 0}},
		{"another company's", map[string]any{"connections": []any{foreign["id"]}}, []any{"body", "connections", 0}},
	} {
		r := patch(c, sid, tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		if tc.loc != nil {
			requireLoc(t, r, tc.loc...)
		}
	}
	require.Equal(t, with(a["id"]), subscriptionOf(t, c, "telegram_bot"))

	// Over max_size.
	raiseLimit(t, c, "telegram_bot", 2)
	sub = subscriptionOf(t, c, "telegram_bot")
	b := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok2})
	require.Equal(t, sid, b["subscription_id"])
	requireJSON(t, patch(c, sid, map[string]any{"connections": []any{}}), 200, with())
	r := adjust(t, c, sid, map[string]any{"max_size": 1})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	sub = r.JSON(t)
	r = patch(c, sid, map[string]any{"connections": []any{a["id"], b["id"]}})
	requireLoc(t, r, "body", "connections")
	requireJSON(t, patch(c, sid, map[string]any{"connections": []any{b["id"]}}), 200, with(b["id"]))
	require.Nil(t, getConn(a["id"])["subscription_id"])
	require.Equal(t, sid, getConn(b["id"])["subscription_id"])
	requireLimit(t, c, "connections_telegram_bot", 2, 1)

	// Unknown and foreign subscriptions.
	notFound := `{"error_code":22000,"error_name":"SUBSCRIPTION_NOT_FOUND","message":"subscription not found","detail":{}}`
	r = patch(c, 999999999, map[string]any{"connections": []any{}})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
	r = patch(other, sid, map[string]any{"connections": []any{}})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
	require.Equal(t, with(b["id"]), subscriptionOf(t, c, "telegram_bot"))
}

// TestSubscriptionOperatorAdjust: the operator changes plan, size and dates;
// the connection's subscription reference follows.
func TestSubscriptionOperatorAdjust(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	sub := subscriptionOf(t, c, "telegram_bot")
	sid := sub["id"]
	expect := func(changes map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range sub {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}

	r := api(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%v", c.ID, sid), map[string]any{"max_size": 2})
	require.Equal(t, 401, r.Status)
	r = api(t, "PATCH", p("/admin/v1/companies/%d/subscriptions/%v", c.ID, sid), map[string]any{"max_size": 2}, key(c.Key)...)
	require.Equal(t, 401, r.Status, "%s", r.Body)

	// START has one place.
	requireLoc(t, adjust(t, c, sid, map[string]any{"max_size": 2}), "body", "max_size")
	requireLoc(t, adjust(t, c, sid, map[string]any{"subscription_plan": "START", "max_size": 3}), "body", "max_size")
	requireLoc(t, adjust(t, c, sid, map[string]any{"subscription_plan": "GOLD"}), "body", "subscription_plan")
	requireLoc(t, adjust(t, c, sid, map[string]any{"subscription_plan": "STANDARD", "max_size": -1}), "body", "max_size")
	requireLoc(t, adjust(t, c, sid, map[string]any{"paid_until": "next week"}), "body", "paid_until")
	require.Equal(t, sub, subscriptionOf(t, c, "telegram_bot"))

	r = adjust(t, c, sid, map[string]any{"subscription_plan": "STANDARD", "max_size": 3, "paid_until": "2030-01-02T03:04:05Z"})
	sub = requireJSON(t, r, 200, expect(map[string]any{"subscription_plan": "STANDARD", "max_size": 3, "paid_until": "2030-01-02T03:04:05.000000Z"})).(map[string]any)
	require.Equal(t, sub, subscriptionOf(t, c, "telegram_bot"))
	ref := map[string]any{"id": sid, "subscription_plan": "STANDARD", "paid_until": "2030-01-02T03:04:05.000000Z"}
	r = api(t, "GET", cpath(c, "/connections/%v", bot["id"]), nil, key(c.Key)...)
	require.Equal(t, ref, r.JSON(t)["subscription"])
	require.Equal(t, ref, listConnections(t, c, "")["connections"].([]any)[0].(map[string]any)["subscription"])
	requireLimit(t, c, "connections_telegram_bot", 1, 3)

	sub = requireJSON(t, adjust(t, c, sid, map[string]any{"test_until": "2031-05-06T07:08:09.123456Z"}), 200,
		expect(map[string]any{"test_until": "2031-05-06T07:08:09.123456Z"})).(map[string]any)
	sub = requireJSON(t, adjust(t, c, sid, map[string]any{"clear_paid_until": true, "clear_test_until": true}), 200,
		expect(map[string]any{"paid_until": nil, "test_until": nil})).(map[string]any)
	r = api(t, "GET", cpath(c, "/connections/%v", bot["id"]), nil, key(c.Key)...)
	require.Equal(t, map[string]any{"id": sid, "subscription_plan": "STANDARD", "paid_until": nil}, r.JSON(t)["subscription"])
	// An empty change answers the subscription as it is.
	requireJSON(t, adjust(t, c, sid, map[string]any{}), 200, sub)
	// Back to START with its one place.
	requireJSON(t, adjust(t, c, sid, map[string]any{"subscription_plan": "START", "max_size": 1}), 200,
		expect(map[string]any{"subscription_plan": "START", "max_size": 1}))

	notFound := `{"error_code":22000,"error_name":"SUBSCRIPTION_NOT_FOUND","message":"subscription not found","detail":{}}`
	r = adjust(t, c, 999999999, map[string]any{"max_size": 1})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
	other := newCompany(t, nil)
	r = adjust(t, other, sid, map[string]any{"max_size": 1})
	require.Equal(t, 404, r.Status, "%s", r.Body)
	requireBody(t, notFound, r)
}
