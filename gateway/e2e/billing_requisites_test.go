package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBillingRequisites (billing.md "Invoices", requisites): tin of 10 or 12
// digits, kpp of 9 required with 10 and optional (else null) with 12,
// name 1..255 characters; approval_status APPROVED; the list is a bare
// array, oldest first, of the company's own only.
func TestBillingRequisites(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	path := cpath(c, "/subscriptions/requisites/")
	post := func(body any) response { t.Helper(); return api(t, "POST", path, body, key(c.Key)...) }
	requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, []any{})

	org := requireJSON(t, post(map[string]any{"tin": "7707083893", "kpp": "773601001", "name": "Northwind LLC"}), 200,
		map[string]any{"id": anyID, "tin": "7707083893", "kpp": "773601001", "name": "Northwind LLC", "approval_status": "APPROVED"})
	// A person's 12-digit tin without kpp: kpp null (also when sent null).
	person := requireJSON(t, post(map[string]any{"tin": "500100732259", "name": "Ivan Petrov"}), 200,
		map[string]any{"id": anyID, "tin": "500100732259", "kpp": nil, "name": "Ivan Petrov", "approval_status": "APPROVED"})
	personNull := requireJSON(t, post(map[string]any{"tin": "500100732260", "kpp": nil, "name": "Anna Petrova"}), 200,
		map[string]any{"id": anyID, "tin": "500100732260", "kpp": nil, "name": "Anna Petrova", "approval_status": "APPROVED"})
	// With 12 digits a kpp is optional, and kept when given. No checksum
	// test: any digits do. 255 characters of any script (not bytes).
	long := strings.Repeat("я", 255)
	personKpp := requireJSON(t, api(t, "POST", cpath(c, "/subscriptions/requisites"), // no trailing slash
		map[string]any{"tin": "000000000000", "kpp": "000000000", "name": long}, key(c.Key)...), 200,
		map[string]any{"id": anyID, "tin": "000000000000", "kpp": "000000000", "name": long, "approval_status": "APPROVED"})
	all := []any{org, person, personNull, personKpp}
	for i := 1; i < len(all); i++ {
		require.NotEqual(t, all[i-1].(map[string]any)["id"], all[i].(map[string]any)["id"])
	}

	// Every refusal is 422 error 1 on the field, and stores nothing.
	for _, tc := range []struct {
		name  string
		body  any
		field string
	}{
		{"tin missing", map[string]any{"kpp": "773601001", "name": "X"}, "tin"},
		{"tin empty", map[string]any{"tin": "", "kpp": "773601001", "name": "X"}, "tin"},
		{"tin 9 digits", map[string]any{"tin": "770708389", "kpp": "773601001", "name": "X"}, "tin"},
		{"tin 11 digits", map[string]any{"tin": "77070838931", "kpp": "773601001", "name": "X"}, "tin"},
		{"tin 13 digits", map[string]any{"tin": "5001007322591", "name": "X"}, "tin"},
		{"tin with letters", map[string]any{"tin": "77070838AB", "kpp": "773601001", "name": "X"}, "tin"},
		{"tin with a space", map[string]any{"tin": "7707 83893", "kpp": "773601001", "name": "X"}, "tin"},
		{"tin a number", map[string]any{"tin": 7707083893, "kpp": "773601001", "name": "X"}, "tin"},
		{"kpp missing with 10 digits", map[string]any{"tin": "7707083893", "name": "X"}, "kpp"},
		{"kpp null with 10 digits", map[string]any{"tin": "7707083893", "kpp": nil, "name": "X"}, "kpp"},
		{"kpp 8 digits", map[string]any{"tin": "7707083893", "kpp": "77360100", "name": "X"}, "kpp"},
		{"kpp 10 digits", map[string]any{"tin": "7707083893", "kpp": "7736010011", "name": "X"}, "kpp"},
		{"kpp with a letter", map[string]any{"tin": "7707083893", "kpp": "77360100A", "name": "X"}, "kpp"},
		{"kpp wrong with 12 digits", map[string]any{"tin": "500100732259", "kpp": "1234", "name": "X"}, "kpp"},
		{"name missing", map[string]any{"tin": "7707083893", "kpp": "773601001"}, "name"},
		{"name empty", map[string]any{"tin": "7707083893", "kpp": "773601001", "name": ""}, "name"},
		{"name 256 characters", map[string]any{"tin": "7707083893", "kpp": "773601001", "name": strings.Repeat("n", 256)}, "name"},
	} {
		r := post(tc.body)
		require.Equal(t, 422, r.Status, "%s: %s", tc.name, r.Body)
		requireLoc(t, r, "body", tc.field)
	}

	// Oldest first, a bare array (also without the trailing slash).
	requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, all)
	requireJSON(t, api(t, "GET", cpath(c, "/subscriptions/requisites"), nil, key(c.Key)...), 200, all)

	// Another company has its own (none).
	other := newCompany(t, nil)
	requireJSON(t, api(t, "GET", cpath(other, "/subscriptions/requisites/"), nil, key(other.Key)...), 200, []any{})
	// A key of another company is refused on this company's path.
	require.Equal(t, 403, api(t, "GET", path, nil, key(other.Key)...).Status)

	// subscriptions:read reads, and may not write; other scopes nothing.
	ro := newKey(t, c.ID, "subscriptions:read")
	requireJSON(t, api(t, "GET", path, nil, key(ro)...), 200, all)
	bmRequireForbidden(t, api(t, "POST", path, map[string]any{"tin": "500100732259", "name": "X"}, key(ro)...))
	bmRequireForbidden(t, api(t, "GET", path, nil, key(newKey(t, c.ID, "connections"))...))
	requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, all)
}
