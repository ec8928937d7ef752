package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartnerPayments: GET /partners/partner_companies/payments/ lists
// the stored invoices of the partner's clients, newest first, each with
// its client's id and name, payer client (the client's own invoice) and
// client_amount the amount; filters by client and type, pages, and shows
// no other company's invoices. The literal route is not taken for a
// client id.
func TestPartnerPayments(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Payments Partner")
	own := ptClient(t, pt.Code, "Own Client")
	ref := ptClient(t, pt.ReferralCode, "Referred Client")
	stranger := newCompany(t, nil)

	store := func(c company, count int) map[string]any {
		t.Helper()
		r := api(t, "POST", cpath(c, "/subscriptions/invoices/"), map[string]any{
			"preview": false, "consents": map[string]any{"offer_accepted": true},
			"items":          []any{map[string]any{"type": "WABA_DIALOGS", "count": count}},
			"payment_method": "CARD_RU",
		}, key(c.Key)...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		var inv map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &inv))
		return inv
	}
	first := store(own, 10)  // 50.00
	second := store(ref, 20) // 100.00
	third := store(own, 30)  // 150.00
	store(stranger, 40)      // another company's: never listed
	paid := api(t, "POST", p("/sandbox/v1/invoices/%v/pay", first["id"]), nil, operator()...)
	require.Equal(t, 200, paid.Status, "%s", paid.Body)
	var firstPaid map[string]any
	require.NoError(t, json.Unmarshal(paid.Body, &firstPaid))

	payment := func(inv map[string]any, c company, name string) map[string]any {
		out := map[string]any{}
		for k, v := range inv {
			out[k] = v
		}
		out["company_id"], out["company_name"], out["client_amount"], out["payer"] = c.ID, name, inv["amount"], "client"
		return out
	}
	list := func(query string) response {
		return api(t, "GET", ptPath(pt.company, "/partner_companies/payments/"+query), nil, key(pt.Key)...)
	}
	all := []any{payment(third, own, "Own Client"), payment(second, ref, "Referred Client"), payment(firstPaid, own, "Own Client")}
	requireJSON(t, list(""), 200, map[string]any{"count": 3, "payments": all})
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/partner_companies/payments"), nil, key(pt.Key)...), 200,
		map[string]any{"count": 3, "payments": all})
	requireJSON(t, list("?partner_company_type=referral"), 200, map[string]any{"count": 1, "payments": all[1:2]})
	requireJSON(t, list(p("?partner_company_id=%d", own.ID)), 200, map[string]any{"count": 2, "payments": []any{all[0], all[2]}})
	requireJSON(t, list(p("?partner_company_id=%d", stranger.ID)), 200, map[string]any{"count": 0, "payments": []any{}})
	requireJSON(t, list("?limit=1&offset=1"), 200, map[string]any{"count": 3, "payments": all[1:2]})
	requireJSON(t, list("?offset=5"), 200, map[string]any{"count": 3, "payments": []any{}})
	for _, bad := range []struct{ query, param string }{
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?offset=-1", "offset"}, {"?partner_company_type=other", "partner_company_type"},
	} {
		r := list(bad.query)
		require.Equal(t, 422, r.Status, "%s: %s", bad.query, r.Body)
		var body struct {
			Detail struct {
				Errors []struct {
					Location []any `json:"location"`
				} `json:"errors"`
			} `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		require.Equal(t, []any{"query", bad.param}, body.Detail.Errors[0].Location, "%s", r.Body)
	}

	// A partner without clients has none; a company that is no partner may
	// not ask.
	other := ptNewPartner(t, "Payments Partner Two")
	requireJSON(t, api(t, "GET", ptPath(other.company, "/partner_companies/payments/"), nil, key(other.Key)...), 200,
		map[string]any{"count": 0, "payments": []any{}})
	r := api(t, "GET", ptPath(stranger, "/partner_companies/payments/"), nil, key(stranger.Key)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
}
