package e2e

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPartnerClientRequisites (partners.md "Client subscriptions,
// requisites"): the client's requisites as it registered them itself
// (/subscriptions/requisites/), a bare array, oldest first, of either type
// of client.
func TestPartnerClientRequisites(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Client Req Partner")
	c := ptClient(t, pt.Code, "Client Req")
	ref := ptClient(t, pt.ReferralCode, "Client Req Referral")
	path := func(id int64) string { return ptPath(pt.company, "/partner_companies/%d/payments/requisites", id) }
	requireJSON(t, api(t, "GET", path(c.ID), nil, key(pt.Key)...), 200, []any{})

	org := bmRequisite(t, c)
	r := api(t, "POST", cpath(c, "/subscriptions/requisites/"), map[string]any{"tin": "500100732259", "name": "Ivan Petrov"}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	person := r.JSON(t)
	own := requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/requisites/"), nil, key(c.Key)...), 200, []any{org, person})
	requireJSON(t, api(t, "GET", path(c.ID), nil, key(pt.Key)...), 200, own)
	requireJSON(t, api(t, "GET", path(c.ID)+"/", nil, key(pt.Key)...), 200, own)
	requireJSON(t, api(t, "GET", path(c.ID), nil, key(newKey(t, pt.ID, "partners:read"))...), 200, own)
	requireJSON(t, api(t, "GET", path(ref.ID), nil, key(pt.Key)...), 200, []any{})
	refOrg := bmRequisite(t, ref)
	requireJSON(t, api(t, "GET", path(ref.ID), nil, key(pt.Key)...), 200, []any{refOrg})
	// The partner's own requisites are apart.
	requireJSON(t, api(t, "GET", ptPath(pt.company, "/payments/requisites"), nil, key(pt.Key)...), 200, []any{})
}

// ptRequisite is a partner requisite answer.
func ptRequisite(typ, tin string, kpp any, name string, def bool, bic, account any) map[string]any {
	return map[string]any{"id": anyID, "type": typ, "tin": tin, "kpp": kpp, "name": name, "default": def, "bic": bic,
		"current_account": account, "approval_status": "APPROVED"}
}

// TestPartnerRequisites (partners.md "Client subscriptions, requisites"):
// POST /partners/payments/requisites/ → {id, type (company unless given),
// tin, kpp, name, default (false unless given), bic, current_account,
// approval_status APPROVED}, absent ones null; tin 10 or 12 digits, kpp,
// bic 9, current_account 20, name 1..255 (422 naming the field); a default
// one needs bic, current_account and, with a 10-digit tin, kpp (422 naming
// the missing one) and clears the old default; GET: a bare array, oldest
// first, of the partner's own.
func TestPartnerRequisites(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Requisites Partner")
	path := ptPath(pt.company, "/payments/requisites")
	post := func(body any) response { t.Helper(); return api(t, "POST", path, body, key(pt.Key)...) }
	list := func() response { t.Helper(); return api(t, "GET", path, nil, key(pt.Key)...) }
	requireJSON(t, list(), 200, []any{})

	// The least: tin and name; type company, not default, the rest null.
	first := requireJSON(t, post(map[string]any{"tin": "7707083893", "name": "Northwind LLC"}), 200,
		ptRequisite("company", "7707083893", nil, "Northwind LLC", false, nil, nil)).(map[string]any)
	ie := requireJSON(t, post(map[string]any{"type": "individual_entrepreneur", "tin": "500100732259", "name": "IE Ivan Petrov",
		"bic": "044525225", "current_account": "40802810900000000001"}), 200,
		ptRequisite("individual_entrepreneur", "500100732259", nil, "IE Ivan Petrov", false, "044525225", "40802810900000000001")).(map[string]any)
	// Default with everything: bic, current_account, kpp for 10 digits.
	def1 := requireJSON(t, api(t, "POST", path+"/", map[string]any{"type": "company", "tin": "7707083893", "kpp": "773601001",
		"name": "Northwind Payouts", "default": true, "bic": "044525225", "current_account": "40702810900000000001"}, key(pt.Key)...), 200,
		ptRequisite("company", "7707083893", "773601001", "Northwind Payouts", true, "044525225", "40702810900000000001")).(map[string]any)
	long := strings.Repeat("я", 255)
	explicit := requireJSON(t, post(map[string]any{"tin": "000000000000", "kpp": "000000000", "name": long, "default": false}), 200,
		ptRequisite("company", "000000000000", "000000000", long, false, nil, nil)).(map[string]any)
	requireJSON(t, list(), 200, []any{first, ie, def1, explicit})

	// Refusals: 422 naming the field; nothing stored.
	ok := map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "X", "bic": "044525225", "current_account": "40702810900000000001"}
	with := func(changes map[string]any) map[string]any {
		b := bmWith(ok, nil)
		for k, v := range changes {
			if v == bmAbsent {
				delete(b, k)
				continue
			}
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"tin missing", with(map[string]any{"tin": bmAbsent}), "tin"},
		{"tin empty", with(map[string]any{"tin": ""}), "tin"},
		{"tin 9 digits", with(map[string]any{"tin": "770708389"}), "tin"},
		{"tin 11 digits", with(map[string]any{"tin": "77070838931"}), "tin"},
		{"tin 13 digits", with(map[string]any{"tin": "5001007322591"}), "tin"},
		{"tin letters", with(map[string]any{"tin": "77070838AB"}), "tin"},
		{"tin a number", with(map[string]any{"tin": 7707083893}), "tin"},
		{"kpp 8 digits", with(map[string]any{"kpp": "77360100"}), "kpp"},
		{"kpp 10 digits", with(map[string]any{"kpp": "7736010011"}), "kpp"},
		{"kpp a letter", with(map[string]any{"kpp": "77360100A"}), "kpp"},
		{"kpp empty", with(map[string]any{"kpp": ""}), "kpp"},
		{"bic 8 digits", with(map[string]any{"bic": "04452522"}), "bic"},
		{"bic 10 digits", with(map[string]any{"bic": "0445252250"}), "bic"},
		{"bic letters", with(map[string]any{"bic": "04452522X"}), "bic"},
		{"current_account 19 digits", with(map[string]any{"current_account": "4070281090000000000"}), "current_account"},
		{"current_account 21 digits", with(map[string]any{"current_account": "407028109000000000011"}), "current_account"},
		{"current_account letters", with(map[string]any{"current_account": "4070281090000000000X"}), "current_account"},
		{"name missing", with(map[string]any{"name": bmAbsent}), "name"},
		{"name empty", with(map[string]any{"name": ""}), "name"},
		{"name 256", with(map[string]any{"name": strings.Repeat("n", 256)}), "name"},
		{"type unknown", with(map[string]any{"type": "person"}), "type"},
		{"type upper case", with(map[string]any{"type": "COMPANY"}), "type"},
		{"default not a bool", with(map[string]any{"default": "yes"}), "default"},
		// A default one: bic, current_account, kpp with 10 digits.
		{"default without bic", with(map[string]any{"default": true, "bic": bmAbsent}), "bic"},
		{"default without current_account", with(map[string]any{"default": true, "current_account": bmAbsent}), "current_account"},
		{"default without kpp", with(map[string]any{"default": true, "kpp": bmAbsent}), "kpp"},
		{"default without kpp, bic or account", with(map[string]any{"default": true, "kpp": bmAbsent, "bic": bmAbsent, "current_account": bmAbsent}), "bic"},
		{"default, null bic", with(map[string]any{"default": true, "bic": nil}), "bic"},
	} {
		r := post(tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, "body", tc.field)
	}
	requireJSON(t, post(with(map[string]any{"default": true, "bic": bmAbsent})), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "bic")))
	requireJSON(t, post(with(map[string]any{"default": true, "kpp": bmAbsent})), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "kpp")))
	requireJSON(t, list(), 200, []any{first, ie, def1, explicit})

	// A 12-digit tin needs no kpp, even as the default; the new default
	// clears the old one.
	def2 := requireJSON(t, post(map[string]any{"type": "individual_entrepreneur", "tin": "500100732260", "name": "IE Anna", "default": true,
		"bic": "044525974", "current_account": "40802810000000000002"}), 200,
		ptRequisite("individual_entrepreneur", "500100732260", nil, "IE Anna", true, "044525974", "40802810000000000002")).(map[string]any)
	def1 = bmWith(def1, map[string]any{"default": false})
	requireJSON(t, list(), 200, []any{first, ie, def1, explicit, def2})
	// A non-default one leaves the default alone.
	last := requireJSON(t, post(map[string]any{"tin": "7707083894", "name": "Not default"}), 200,
		ptRequisite("company", "7707083894", nil, "Not default", false, nil, nil))
	requireJSON(t, list(), 200, []any{first, ie, def1, explicit, def2, last})

	// Another partner has its own (none); a read-only key reads.
	other := ptNewPartner(t, "Requisites Other")
	requireJSON(t, api(t, "GET", ptPath(other.company, "/payments/requisites"), nil, key(other.Key)...), 200, []any{})
	requireJSON(t, api(t, "GET", path, nil, key(newKey(t, pt.ID, "partners:read"))...), 200, []any{first, ie, def1, explicit, def2, last})
	// Its default does not touch this partner's.
	requireJSON(t, api(t, "POST", ptPath(other.company, "/payments/requisites"), with(map[string]any{"default": true}), key(other.Key)...), 200,
		ptRequisite("company", "7707083893", "773601001", "X", true, "044525225", "40702810900000000001"))
	requireJSON(t, list(), 200, []any{first, ie, def1, explicit, def2, last})
}

// TestPartnerRequisitesDefaultConcurrent: eight default requisites at once
// are all stored, and exactly one is the default after them (the last
// one stored, which cleared the others).
func TestPartnerRequisitesDefaultConcurrent(t *testing.T) {
	t.Parallel()
	pt := ptNewPartner(t, "Requisites Concurrent")
	path := ptPath(pt.company, "/payments/requisites")
	const n = 8
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tryCall("POST", path, map[string]any{"tin": "7707083893", "kpp": "773601001", "name": p("Default %d", i),
				"default": true, "bic": "044525225", "current_account": "40702810900000000001"}, key(pt.Key)...)
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		requireJSON(t, results[i], 200, ptRequisite("company", "7707083893", "773601001", p("Default %d", i), true, "044525225", "40702810900000000001"))
	}
	list := requireJSON(t, api(t, "GET", path, nil, key(pt.Key)...), 200, anyPresent).([]any)
	require.Len(t, list, n)
	defaults := 0
	for i, r := range list {
		m := r.(map[string]any)
		if i > 0 {
			require.Greater(t, m["id"].(float64), list[i-1].(map[string]any)["id"].(float64), "oldest first")
		}
		if m["default"] == true {
			defaults++
			require.Equal(t, len(list)-1, i, "the last stored is the default")
		}
	}
	require.Equal(t, 1, defaults)
}
