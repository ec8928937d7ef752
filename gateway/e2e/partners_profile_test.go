package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartnerCreation (partners.md "Promo codes, profile"): the operator's
// POST /admin/v1/companies with is_partner true makes a partner whose
// profile has two codes of 8 characters of ABCDEFGHJKLMNPQRSTUVWXYZ23456789,
// unique among all codes, the default commissions 20, 10, 10 (JSON numbers)
// and no active clients.
func TestPartnerCreation(t *testing.T) {
	t.Parallel()
	r := api(t, "POST", "/admin/v1/companies", map[string]any{"name": "Partner Creation", "is_partner": true}, operator()...)
	created := requireJSON(t, r, 200, map[string]any{
		"company": map[string]any{"id": anyID, "name": "Partner Creation", "owner_id": anyID, "timezone": "Europe/Moscow",
			"payment_currency": "RUB", "payments_locked": false, "waba_provider_partner_id": nil, "had_connections": false, "is_partner": true},
		"owner": anyPresent, "api_key": anyString, "integration_id": anyID}).(map[string]any)
	id := int64(created["company"].(map[string]any)["id"].(float64))
	k := key(created["api_key"].(string))
	pc := company{ID: id}
	profile := requireJSON(t, api(t, "GET", ptPath(pc, "/profile"), nil, k...), 200,
		ptProfile("Partner Creation", ptCode, ptCode, ptCommissions(20, 10, 10), 0, 0)).(map[string]any)
	// With the trailing slash too, the same.
	requireJSON(t, api(t, "GET", ptPath(pc, "/profile/"), nil, k...), 200, profile)
	// The card says partner.
	require.Equal(t, true, api(t, "GET", p("/v2/companies/%d", id), nil, k...).JSON(t)["is_partner"])

	// Codes are unique among all codes: five more partners, ten more codes.
	seen := map[string]bool{profile["promo_code"].(string): true, profile["referral_promo_code"].(string): true}
	require.Len(t, seen, 2)
	for i := 0; i < 5; i++ {
		pt := ptNewPartner(t, p("Partner Codes %d", i))
		for _, c := range []string{pt.Code, pt.ReferralCode} {
			require.False(t, seen[c], "code %s drawn twice", c)
			seen[c] = true
		}
	}
}

// TestPartnerClientsByPromoCode: the operator's creation with promo_code
// makes a client: the partner's promo_code a partner-type one, its
// referral_promo_code a referral-type one, in any case; an unknown code,
// or a code with is_partner true, is 422 on body.promo_code and makes
// nothing.
func TestPartnerClientsByPromoCode(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Promo Partner")
	other := ptNewPartner(t, "Promo Other")

	// A client's own card is no partner's.
	r := api(t, "POST", "/admin/v1/companies", map[string]any{"name": "Lower Partner Client", "promo_code": strings.ToLower(pt.Code)}, operator()...)
	got := requireJSON(t, r, 200, map[string]any{"company": ptCreated("Lower Partner Client"), "owner": anyPresent,
		"api_key": anyString, "integration_id": anyID}).(map[string]any)
	lowerPartner := company{ID: int64(got["company"].(map[string]any)["id"].(float64))}
	lowerRef := ptClient(t, strings.ToLower(pt.ReferralCode), "Lower Referral Client")
	upperPartner := ptClient(t, pt.Code, "Upper Partner Client")
	mixed := pt.ReferralCode[:4] + strings.ToLower(pt.ReferralCode[4:])
	mixedRef := ptClient(t, mixed, "Mixed Referral Client")
	otherClient := ptClient(t, other.Code, "Other's Client")

	all := ptPage(4,
		ptItem(lowerPartner, "Lower Partner Client", "partner"),
		ptItem(lowerRef, "Lower Referral Client", "referral"),
		ptItem(upperPartner, "Upper Partner Client", "partner"),
		ptItem(mixedRef, "Mixed Referral Client", "referral"))
	requireJSON(t, ptList(t, pt, ""), 200, all)
	requireJSON(t, ptList(t, other, ""), 200, ptPage(1, ptItem(otherClient, "Other's Client", "partner")))

	// Refusals: 422 on promo_code, nothing made.
	for _, tc := range []struct {
		name    string
		body    map[string]any
		message string
	}{
		{"unknown code", map[string]any{"name": "X", "promo_code": "zzzzzzzz"}, `unknown promo code "zzzzzzzz"`},
		{"a code one character short", map[string]any{"name": "X", "promo_code": pt.Code[:7]}, p("unknown promo code %q", pt.Code[:7])},
		{"a partner with a code", map[string]any{"name": "X", "is_partner": true, "promo_code": pt.Code},
			p("promo code %q cannot be given for a partner company", pt.Code)},
		{"a partner with a referral code", map[string]any{"name": "X", "is_partner": true, "promo_code": strings.ToLower(pt.ReferralCode)},
			p("promo code %q cannot be given for a partner company", strings.ToLower(pt.ReferralCode))},
		{"a partner with an unknown code", map[string]any{"name": "X", "is_partner": true, "promo_code": "nosuchco"},
			`promo code "nosuchco" cannot be given for a partner company`},
	} {
		r := api(t, "POST", "/admin/v1/companies", tc.body, operator()...)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireJSON(t, r, 422, unprocessable(fieldErr("value_error", tc.message, "body", "promo_code")))
	}
	requireJSON(t, ptList(t, pt, ""), 200, all)
}

// TestPartnerOperatorSettings (partners.md, operator table): PATCH
// /admin/v1/partners/{company_id} changes the given commissions (0..100,
// at most two decimals, else 422 naming the field) and the daily cap
// (null: back to the default); the profile shows the commissions; a
// company that is no partner is 404 8000.
func TestPartnerOperatorSettings(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Operator Settings")
	profile := func(commissions map[string]any) {
		t.Helper()
		requireJSON(t, api(t, "GET", ptPath(pt.company, "/profile"), nil, key(pt.Key)...), 200,
			ptProfile(pt.Name, pt.Code, pt.ReferralCode, commissions, 0, 0))
	}

	// Nothing to change: the defaults, the default cap (null).
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{}), 200, ptSettings(pt.ID, ptCommissions(20, 10, 10), nil))
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"partner_commission_percent": 15.75}), 200,
		ptSettings(pt.ID, ptCommissions(15.75, 10, 10), nil))
	profile(ptCommissions(15.75, 10, 10))
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"referral_commission_percent": 0, "waba_dialogs_commission_percent": 100}), 200,
		ptSettings(pt.ID, ptCommissions(15.75, 0, 100), nil))
	profile(ptCommissions(15.75, 0, 100))
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"partner_commission_percent": 0.01, "referral_commission_percent": 99.99,
		"waba_dialogs_commission_percent": 12.5}), 200, ptSettings(pt.ID, ptCommissions(0.01, 99.99, 12.5), nil))
	// Trailing zeros are no decimals.
	requireJSON(t, ptOperator(t, pt.ID, `{"partner_commission_percent": 30.000}`), 200, ptSettings(pt.ID, ptCommissions(30, 99.99, 12.5), nil))
	want := ptCommissions(30, 99.99, 12.5)
	profile(want)

	// Refusals name the field and change nothing.
	for _, field := range []string{"partner_commission_percent", "referral_commission_percent", "waba_dialogs_commission_percent"} {
		for _, v := range []any{-0.01, 100.01, 101, -1, 12.345, 0.001} {
			r := ptOperator(t, pt.ID, map[string]any{field: v})
			require.Equal(t, 422, r.Status, "%s %v: %s", field, v, r.Body)
			requireLoc(t, r, "body", field)
		}
		for _, v := range []any{"abc", true, map[string]any{}, []any{1}} {
			r := ptOperator(t, pt.ID, map[string]any{field: v})
			require.Equal(t, 422, r.Status, "%s %v: %s", field, v, r.Body)
			requireLoc(t, r, "body", field)
		}
	}
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"partner_commission_percent": 12.345}), 422, unprocessable(fieldErr("value_error",
		"Value error, a percent from 0 to 100 with at most two decimals, not 12.345", "body", "partner_commission_percent")))
	for _, v := range []any{-1, 1.5, 100001, "3", true} {
		r := ptOperator(t, pt.ID, map[string]any{"clients_per_day": v})
		require.Equal(t, 422, r.Status, "clients_per_day %v: %s", v, r.Body)
		requireLoc(t, r, "body", "clients_per_day")
	}
	profile(want)
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{}), 200, ptSettings(pt.ID, want, nil))

	// The cap: a number, 0 included; the profile does not show it.
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 5}), 200, ptSettings(pt.ID, want, 5))
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 0}), 200, ptSettings(pt.ID, want, 0))
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"partner_commission_percent": 20}), 200, ptSettings(pt.ID, ptCommissions(20, 99.99, 12.5), 0))
	want = ptCommissions(20, 99.99, 12.5)
	profile(want)
	requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": 7}), 200, ptSettings(pt.ID, want, 7))

	// No partner: 404 8000, also for an unknown company; the operator
	// token only.
	notFound := `{"error_code":8000,"error_name":"COMPANY_NOT_FOUND","message":"company not found","detail":{}}`
	plain := newCompany(t, nil)
	for _, id := range []int64{plain.ID, 999999999999} {
		r := ptOperator(t, id, map[string]any{"partner_commission_percent": 5})
		require.Equal(t, 404, r.Status, "%s", r.Body)
		requireBody(t, notFound, r)
	}
	r := api(t, "PATCH", p("/admin/v1/partners/%d", pt.ID), map[string]any{"partner_commission_percent": 5}, key(pt.Key)...)
	require.Equal(t, 401, r.Status, "%s", r.Body)
	profile(want)

	// null sets the cap back to the default (absent leaves it). The
	// gateway's JSON decoder drops a null field before the service sees
	// it (httpapi decodeMessage), so this fails until the gateway or the
	// proto changes.
	t.Run("clients_per_day null", func(t *testing.T) {
		requireJSON(t, ptOperator(t, pt.ID, map[string]any{"clients_per_day": nil}), 200, ptSettings(pt.ID, want, nil))
		requireJSON(t, ptOperator(t, pt.ID, map[string]any{}), 200, ptSettings(pt.ID, want, nil))
	})
}
