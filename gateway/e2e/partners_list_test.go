package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPartnerClientList (partners.md "Clients"): {count (all matching),
// partner_companies}; query is a part of the name (case ignored) or, all
// digits, also the exact id; partner_company_type; subscription_type;
// subscription_status (FREE: the plan; else PAID: paid_until later than
// now; else TEST: test_until later than now and paid_until null; else
// NOT_PAID), one of the client's subscriptions (of subscription_type, when
// given) having it; order_by id:asc (default), id:desc, name:asc,
// name:desc (case ignored, ties by id); limit 1..100, offset. Other values
// are 422 naming the parameter. The profile counts clients with a PAID
// subscription, by type.
func TestPartnerClientList(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "List Partner")
	requireJSON(t, ptList(t, pt, ""), 200, ptPage(0))

	// Alpha Bakery (partner): whatsapp PAID (paid for 30 days, test period
	// kept).
	c1 := ptClient(t, pt.Code, "Alpha Bakery")
	mustCreate(t, c1, "whatsapp", nil)
	s1 := bmAdjust(t, c1, subscriptionOf(t, c1, "whatsapp")["id"], map[string]any{"paid_until": bmTS(bmAt(30 * 24 * time.Hour))})
	// beta Shop (referral): whatsapp in its test period.
	c2 := ptClient(t, pt.ReferralCode, "beta Shop")
	mustCreate(t, c2, "whatsapp", nil)
	s2 := subscriptionOf(t, c2, "whatsapp")
	// Gamma alpha (partner): whatsapp NOT_PAID (no test period, never
	// paid); a FREE bot, whose paid_until counts for nothing.
	c3 := ptClient(t, pt.Code, "Gamma alpha")
	mustCreate(t, c3, "whatsapp", nil)
	bmAdjust(t, c3, subscriptionOf(t, c3, "whatsapp")["id"], map[string]any{"clear_test_until": true})
	tok, _ := botToken()
	mustCreate(t, c3, "telegram_bot", map[string]any{"bot_token": tok})
	s3bot := bmAdjust(t, c3, subscriptionOf(t, c3, "telegram_bot")["id"],
		map[string]any{"subscription_plan": "FREE", "paid_until": "2040-01-01T00:00:00Z"})
	// delta (referral): whatsapp PAID for 10 days, and a further whatsapp
	// subscription whose paid period ended an hour ago (NOT_PAID).
	c4 := ptClient(t, pt.ReferralCode, "delta")
	mustCreate(t, c4, "whatsapp", nil)
	s4 := bmAdjust(t, c4, subscriptionOf(t, c4, "whatsapp")["id"],
		map[string]any{"paid_until": bmTS(bmAt(10 * 24 * time.Hour)), "clear_test_until": true})
	bmNewSubscription(t, c4, map[string]any{"subscription_type": "CONNECTION_WHATSAPP", "subscription_plan": "STANDARD", "max_size": 2,
		"paid_until": bmTS(bmAt(-time.Hour))})
	// Store <Alpha Bakery's id> and alpha bakery (partner): none.
	c5Name := p("Store %d", c1.ID)
	c5 := ptClient(t, pt.Code, c5Name)
	c6 := ptClient(t, pt.Code, "alpha bakery")

	i1 := bmWith(ptItem(c1, "Alpha Bakery", "partner"), map[string]any{"paid_until": s1["paid_until"], "test_until": s1["test_until"]})
	i2 := bmWith(ptItem(c2, "beta Shop", "referral"), map[string]any{"test_until": s2["test_until"]})
	i3 := bmWith(ptItem(c3, "Gamma alpha", "partner"), map[string]any{"test_until": s3bot["test_until"]})
	i4 := bmWith(ptItem(c4, "delta", "referral"), map[string]any{"paid_until": s4["paid_until"]})
	i5 := ptItem(c5, c5Name, "partner")
	i6 := ptItem(c6, "alpha bakery", "partner")
	require.NotNil(t, s1["test_until"])
	require.NotNil(t, s2["test_until"])
	require.NotNil(t, s3bot["test_until"])

	// Each client alone reads as its item.
	for _, it := range []map[string]any{i1, i2, i3, i4, i5, i6} {
		requireJSON(t, ptGet(t, pt, it["id"]), 200, it)
		requireJSON(t, api(t, "GET", ptPath(pt.company, "/partner_companies/%v/", it["id"]), nil, key(pt.Key)...), 200, it)
	}
	// One PAID partner-type client (Alpha Bakery; Gamma alpha's FREE bot
	// is FREE), one PAID referral (delta).
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/profile"), nil, key(pt.Key)...), 200,
		ptProfile(pt.Name, pt.Code, pt.ReferralCode, ptCommissions(20, 10, 10), 1, 1))

	for _, tc := range []struct {
		query string
		count int
		items []map[string]any
	}{
		// All, by id.
		{"", 6, []map[string]any{i1, i2, i3, i4, i5, i6}},
		{"order_by=id:asc", 6, []map[string]any{i1, i2, i3, i4, i5, i6}},
		{"order_by=id%3Adesc", 6, []map[string]any{i6, i5, i4, i3, i2, i1}},
		// By name, case ignored; equal names by id.
		{"order_by=name:asc", 6, []map[string]any{i1, i6, i2, i4, i3, i5}},
		{"order_by=name:desc", 6, []map[string]any{i5, i3, i4, i2, i1, i6}},
		// query: a part of the name, case ignored.
		{"query=alpha", 3, []map[string]any{i1, i3, i6}},
		{"query=ALPHA", 3, []map[string]any{i1, i3, i6}},
		{"query=BaKeRy&order_by=id:desc", 2, []map[string]any{i6, i1}},
		{"query=a%20b", 2, []map[string]any{i1, i6}},
		{"query=st", 1, []map[string]any{i5}},
		{"query=", 6, []map[string]any{i1, i2, i3, i4, i5, i6}},
		{"query=nomatch", 0, nil},
		{"query=%25", 0, nil},
		{"query=_", 0, nil},
		// All digits: also the exact id (Store <id> holds them in its name).
		{p("query=%d", c1.ID), 2, []map[string]any{i1, i5}},
		{p("query=%d", c4.ID), 1, []map[string]any{i4}},
		{p("query=%d", c6.ID), 1, []map[string]any{i6}},
		{"query=999999999999", 0, nil},
		{"query=99999999999999999999", 0, nil},
		// Types.
		{"partner_company_type=partner", 4, []map[string]any{i1, i3, i5, i6}},
		{"partner_company_type=referral", 2, []map[string]any{i2, i4}},
		// Subscription types and statuses.
		{"subscription_type=CONNECTION_WHATSAPP", 4, []map[string]any{i1, i2, i3, i4}},
		{"subscription_type=CONNECTION_TELEGRAM_BOT", 1, []map[string]any{i3}},
		{"subscription_type=CONNECTION_VK_GROUP", 0, nil},
		{"subscription_status=PAID", 2, []map[string]any{i1, i4}},
		{"subscription_status=TEST", 1, []map[string]any{i2}},
		{"subscription_status=NOT_PAID", 2, []map[string]any{i3, i4}},
		{"subscription_status=FREE", 1, []map[string]any{i3}},
		{"subscription_type=CONNECTION_TELEGRAM_BOT&subscription_status=FREE", 1, []map[string]any{i3}},
		{"subscription_type=CONNECTION_WHATSAPP&subscription_status=FREE", 0, nil},
		{"subscription_type=CONNECTION_WHATSAPP&subscription_status=NOT_PAID", 2, []map[string]any{i3, i4}},
		{"subscription_type=CONNECTION_TELEGRAM_BOT&subscription_status=PAID", 0, nil},
		{"subscription_type=CONNECTION_WHATSAPP&subscription_status=TEST", 1, []map[string]any{i2}},
		{"partner_company_type=referral&subscription_status=PAID", 1, []map[string]any{i4}},
		{"partner_company_type=partner&subscription_status=NOT_PAID&query=gamma", 1, []map[string]any{i3}},
		{"partner_company_type=partner&subscription_status=TEST", 0, nil},
		// Pages: count is every match.
		{"limit=2", 6, []map[string]any{i1, i2}},
		{"limit=2&offset=2", 6, []map[string]any{i3, i4}},
		{"limit=2&offset=5", 6, []map[string]any{i6}},
		{"offset=6", 6, nil},
		{"offset=100", 6, nil},
		{"limit=100", 6, []map[string]any{i1, i2, i3, i4, i5, i6}},
		{"limit=1&order_by=id:desc", 6, []map[string]any{i6}},
		{"order_by=name:asc&limit=3&offset=1", 6, []map[string]any{i6, i2, i4}},
		{"partner_company_type=partner&limit=1&offset=1", 4, []map[string]any{i3}},
		{"query=alpha&order_by=name:desc&limit=2", 3, []map[string]any{i3, i1}},
	} {
		r := ptList(t, pt, tc.query)
		require.Equal(t, 200, r.Status, "%s: %s", tc.query, r.Body)
		requireJSON(t, r, 200, ptPage(tc.count, tc.items...))
	}

	// Other values: 422 naming the parameter.
	for _, tc := range []struct{ query, param string }{
		{"order_by=name", "order_by"},
		{"order_by=id", "order_by"},
		{"order_by=ID:ASC", "order_by"},
		{"order_by=name:up", "order_by"},
		{"order_by=created_at:asc", "order_by"},
		{"partner_company_type=Partner", "partner_company_type"},
		{"partner_company_type=client", "partner_company_type"},
		{"subscription_type=whatsapp", "subscription_type"},
		{"subscription_type=CONNECTION_", "subscription_type"},
		{"subscription_type=connection_whatsapp", "subscription_type"},
		{"subscription_status=paid", "subscription_status"},
		{"subscription_status=ACTIVE", "subscription_status"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=-1", "limit"},
		{"limit=abc", "limit"},
		{"limit=1.5", "limit"},
		{"offset=-1", "offset"},
		{"offset=x", "offset"},
		{"query=" + strings.Repeat("q", 257), "query"},
	} {
		r := ptList(t, pt, tc.query)
		require.Equal(t, 422, r.Status, "%s: %s", tc.query, r.Body)
		requireLoc(t, r, "query", tc.param)
	}
	requireJSON(t, ptList(t, pt, "order_by=name"), 422, unprocessable(fieldErr("enum",
		"Input should be 'id:asc', 'id:desc', 'name:asc' or 'name:desc'", "query", "order_by")))
	requireJSON(t, ptList(t, pt, "limit=101"), 422, unprocessable(fieldErr("less_than_equal",
		"Input should be less than or equal to 100", "query", "limit")))
	// 256 characters are fine.
	requireJSON(t, ptList(t, pt, "query="+strings.Repeat("q", 256)), 200, ptPage(0))
}
