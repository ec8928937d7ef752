package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompanyCard(t *testing.T) {
	c := newCompany(t, map[string]any{"timezone": "Asia/Yekaterinburg"})
	want := p(`{"id":%d,"name":"Acme TestCompanyCard","owner_id":%d,"timezone":"Asia/Yekaterinburg",
		"payment_currency":"RUB","payments_locked":false,"waba_provider_partner_id":null,
		"had_connections":false,"is_partner":false}`, c.ID, c.OwnerID)
	for _, path := range []string{p("/v2/companies/%d", c.ID), p("/v2/companies/%d/", c.ID)} {
		r := call(t, "GET", path, nil, key(c.Key)...)
		require.Equal(t, 200, r.Status, path)
		requireBody(t, want, r)
	}
	// Any key of the company reads the card, whatever its scopes.
	r := call(t, "GET", p("/v2/companies/%d", c.ID), nil, key(newKey(t, c.ID, "sales:read"))...)
	require.Equal(t, 200, r.Status)

	other := newCompany(t, nil)
	r = call(t, "GET", p("/v2/companies/%d", c.ID), nil, key(other.Key)...)
	require.Equal(t, 404, r.Status)
	requireBody(t, `{"error_code":8000,"error_name":"COMPANY_NOT_FOUND","message":"company not found","detail":{}}`, r)
}

func TestUnauthenticated(t *testing.T) {
	c := newCompany(t, nil)
	r := call(t, "GET", p("/v2/companies/%d", c.ID), nil)
	require.Equal(t, 401, r.Status)
	requireBody(t, `{"error_code":401,"error_name":"UNAUTHORIZED","message":"missing API key: send it in the X-Api-Key header","detail":{}}`, r)
	r = call(t, "GET", p("/v2/companies/%d/members/", c.ID), nil, key("sb_not-a-key")...)
	require.Equal(t, 401, r.Status)
	requireBody(t, `{"error_code":401,"error_name":"UNAUTHORIZED","message":"unknown api key","detail":{}}`, r)
}

func TestMembersAndRoles(t *testing.T) {
	c := newCompany(t, map[string]any{"owner_email": "Owner.Members@example.com", "owner_name": "Olga Owner"})
	r := call(t, "POST", p("/admin/v1/companies/%d/members", c.ID),
		map[string]any{"email": "manager@example.com", "display_name": "Max Manager", "role": "MANAGER"}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	manager := r.JSON(t)

	r = call(t, "GET", p("/v2/companies/%d/roles/", c.ID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	var roles []map[string]any
	require.NoError(t, jsonUnmarshal(r.Body, &roles))
	require.Len(t, roles, 2)
	require.Equal(t, "ADMINISTRATOR", roles[0]["system_type"])
	require.Equal(t, "MANAGER", roles[1]["system_type"])
	require.Contains(t, roles[0]["permissions"], "MEMBERS_VIEW")
	adminRole, managerRole := int64(roles[0]["id"].(float64)), int64(roles[1]["id"].(float64))
	require.EqualValues(t, managerRole, manager["role_id"])

	r = call(t, "GET", p("/v2/companies/%d/members", c.ID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	require.EqualValues(t, 2, r.JSON(t)["count"])
	ownerMember := r.JSON(t)["members"].([]any)[0].(map[string]any)["member_id"]
	requireBody(t, p(`{"count":2,"company_id":%d,"members":[
		{"member_id":%v,"user_id":%d,"role_id":%d,"display_name":"Olga Owner","login":"Owner.Members@example.com","email":"Owner.Members@example.com"},
		{"member_id":%v,"user_id":%v,"role_id":%d,"display_name":"Max Manager","login":"manager@example.com","email":"manager@example.com"}]}`,
		c.ID, ownerMember, c.OwnerID, adminRole, manager["member_id"], manager["user_id"], managerRole), r)

	// A custom role: permissions in any case, stored canonically; system_type null.
	r = call(t, "POST", p("/admin/v1/companies/%d/roles", c.ID),
		map[string]any{"name": "Support", "permissions": []string{"contacts_view", "Members_View", "CONTACTS_VIEW"}}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	custom := r.JSON(t)
	requireBody(t, p(`{"id":%v,"name":"Support","system_type":null,"permissions":["CONTACTS_VIEW","MEMBERS_VIEW"]}`, custom["id"]), r)
	r = call(t, "POST", p("/admin/v1/companies/%d/roles", c.ID), map[string]any{"name": "X", "permissions": []string{"fly"}}, operator()...)
	require.Equal(t, []any{"body", "permissions"}, firstError(t, r)["location"])
	r = call(t, "POST", p("/admin/v1/companies/%d/members", c.ID),
		map[string]any{"email": "support@example.com", "display_name": "Sue", "role": p("%v", custom["id"])}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, custom["id"], r.JSON(t)["role_id"])
	r = call(t, "GET", p("/v2/companies/%d/roles/", c.ID), nil, key(c.Key)...)
	require.Contains(t, string(r.Body), `"name":"Support","system_type":null`)

	// A role by id works; the same person twice is 409.
	r = call(t, "POST", p("/admin/v1/companies/%d/members", c.ID),
		map[string]any{"email": "manager@example.com", "display_name": "Max", "role": managerRole}, operator()...)
	require.Equal(t, 409, r.Status, "%s", r.Body)
	r = call(t, "POST", p("/admin/v1/companies/%d/members", c.ID),
		map[string]any{"email": "x@example.com", "display_name": "X", "role": "JANITOR"}, operator()...)
	require.Equal(t, 422, r.Status)
	require.Equal(t, []any{"body", "role"}, firstError(t, r)["location"])

	// Roles need scope members and permission members_view; members only the scope.
	readOnly := newKey(t, c.ID, "members:read")
	require.Equal(t, 200, call(t, "GET", p("/v2/companies/%d/roles", c.ID), nil, key(readOnly)...).Status)
	noMembers := newKey(t, c.ID, "connections")
	for _, path := range []string{"roles", "members"} {
		r = call(t, "GET", p("/v2/companies/%d/%s", c.ID, path), nil, key(noMembers)...)
		require.Equal(t, 403, r.Status)
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	}
}

func TestIntegrationsAndKeyReset(t *testing.T) {
	c := newCompany(t, nil)
	r := call(t, "GET", p("/v2/companies/%d/integrations/", c.ID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	list := r.JSON(t)
	require.EqualValues(t, 1, list["count"])
	first := list["integrations"].([]any)[0].(map[string]any)
	require.EqualValues(t, c.IntegID, first["id"])
	require.Equal(t, "api", first["type"])
	require.Equal(t, "enabled", first["status"])
	params := first["params"].(map[string]any)
	require.Nil(t, params["api_key"])
	require.Contains(t, params, "api_key")
	require.Len(t, params["scopes"], 8)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, first["created_at"])

	r = call(t, "GET", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), nil, key(c.Key)...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, first, r.JSON(t))
	r = call(t, "GET", p("/v2/companies/%d/integrations/999999", c.ID), nil, key(c.Key)...)
	require.Equal(t, 404, r.Status)
	requireBody(t, `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}`, r)

	// Rename and reset with the key itself: the answer has the new key once,
	// the old one stops at once in every service (each had it in memory:
	// pkg/auth.Local), the new one works.
	require.Equal(t, 200, call(t, "GET", p("/v2/companies/%d/contacts/", c.ID), nil, key(c.Key)...).Status)
	require.Equal(t, 200, call(t, "GET", p("/v2/companies/%d/connections/", c.ID), nil, key(c.Key)...).Status)
	r = call(t, "PATCH", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID),
		map[string]any{"name": "Main key", "params": map[string]any{"reset_api_key": true}}, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	updated := r.JSON(t)
	require.Equal(t, "Main key", updated["name"])
	newK, _ := updated["params"].(map[string]any)["api_key"].(string)
	require.True(t, strings.HasPrefix(newK, "sb_"), "new key %q", newK)
	require.NotEqual(t, c.Key, newK)
	require.Equal(t, 401, call(t, "GET", p("/v2/companies/%d", c.ID), nil, key(c.Key)...).Status)
	require.Equal(t, 401, call(t, "GET", p("/v2/companies/%d/contacts/", c.ID), nil, key(c.Key)...).Status)
	require.Equal(t, 401, call(t, "GET", p("/v2/companies/%d/connections/", c.ID), nil, key(c.Key)...).Status)
	r = call(t, "GET", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), nil, key(newK)...)
	require.Equal(t, 200, r.Status)
	require.Nil(t, r.JSON(t)["params"].(map[string]any)["api_key"])

	// A read-only grant cannot write; a bad name is 422 naming the field.
	ro := newKey(t, c.ID, "integrations:read")
	require.Equal(t, 200, call(t, "GET", p("/v2/companies/%d/integrations", c.ID), nil, key(ro)...).Status)
	require.Equal(t, 403, call(t, "PATCH", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), map[string]any{"name": "x"}, key(ro)...).Status)
	r = call(t, "PATCH", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), map[string]any{"name": ""}, key(newK)...)
	require.Equal(t, 422, r.Status)
	require.Equal(t, []any{"body", "name"}, firstError(t, r)["location"])
	r = call(t, "GET", p("/v2/companies/%d/integrations?limit=0", c.ID), nil, key(newK)...)
	require.Equal(t, 422, r.Status)
	require.Equal(t, []any{"query", "limit"}, firstError(t, r)["location"])
	r = call(t, "GET", p("/v2/companies/%d/integrations?limit=1&offset=1", c.ID), nil, key(newK)...)
	require.Equal(t, 200, r.Status)
	page := r.JSON(t)
	require.EqualValues(t, 2, page["count"])
	require.Len(t, page["integrations"], 1)
}

func TestIntegrationTypes(t *testing.T) {
	c := newCompany(t, nil)
	want := `[{"type":"api","name":"API","description":"Key for the REST and gRPC API with a chosen set of scopes"},
		{"type":"webhook","name":"Webhook","description":"Events pushed to an address of yours"},
		{"type":"amocrm","name":"amoCRM","description":"Chats and contacts synchronised with an amoCRM account"},
		{"type":"bitrix24","name":"Bitrix24","description":"Chats and contacts synchronised with a Bitrix24 portal"}]`
	for _, scope := range []string{"integrations", "webhooks:read"} {
		r := call(t, "GET", p("/v2/companies/%d/integrations/types/", c.ID), nil, key(newKey(t, c.ID, scope))...)
		require.Equal(t, 200, r.Status, "%s: %s", scope, r.Body)
		requireBody(t, want, r)
	}
	r := call(t, "GET", p("/v2/companies/%d/integrations/types", c.ID), nil, key(newKey(t, c.ID, "members"))...)
	require.Equal(t, 403, r.Status)
}

func TestUserAccount(t *testing.T) {
	c := newCompany(t, map[string]any{"owner_email": "me@example.com", "owner_name": "Mia"})
	r := call(t, "GET", "/v2/users/me", nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	requireBody(t, p(`{"id":%d,"email":"me@example.com","login":"me@example.com","display_name":"Mia","company_id":%d}`, c.OwnerID, c.ID), r)
	r = call(t, "GET", "/v2/users/me/profile/", nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	requireBody(t, p(`{"user_id":%d,"display_name":"Mia","email":"me@example.com","phone":null,"timezone":"Europe/Moscow","locale":"ru"}`, c.OwnerID), r)

	blocked := [][2]string{
		{"POST", "/v2/companies/"}, {"POST", "/v2/companies/join"}, {"GET", "/v2/companies/by_code/ABC123"},
		{"PATCH", "/v2/users/me/profile"}, {"POST", "/v2/users/me/first_login"}, {"GET", "/v2/users/me/forms"},
		{"POST", "/v2/users/me/forms/"}, {"DELETE", "/v2/users/me"}, {"PUT", "/v2/users/me/settings/locale"},
	}
	for _, b := range blocked {
		r := call(t, b[0], b[1], `{"name":"x"}`, key(c.Key)...)
		require.Equal(t, 403, r.Status, "%s %s: %s", b[0], b[1], r.Body)
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	}
}

func TestUnknownRoutes(t *testing.T) {
	c := newCompany(t, nil)
	want := `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}`
	for _, rq := range [][2]string{
		{"GET", "/v2/nothing/here"}, {"DELETE", p("/v2/companies/%d", c.ID)}, {"GET", "/"},
		{"POST", p("/v2/companies/%d/members", c.ID)}, {"GET", "/v3/companies/1"},
	} {
		r := call(t, rq[0], rq[1], nil, key(c.Key)...)
		require.Equal(t, 404, r.Status, "%s %s", rq[0], rq[1])
		requireBody(t, want, r)
	}
}

func TestBadPathAndBody(t *testing.T) {
	c := newCompany(t, nil)
	r := call(t, "GET", "/v2/companies/abc/members", nil, key(c.Key)...)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.EqualValues(t, 1, r.JSON(t)["error_code"])
	require.Equal(t, "REQUEST_VALIDATION_ERROR", r.JSON(t)["error_name"])
	require.Equal(t, []any{"path", "company_id"}, firstError(t, r)["location"])

	r = call(t, "PATCH", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), `{"name": "x",`, key(c.Key)...)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, "json_invalid", firstError(t, r)["type"])

	r = call(t, "PATCH", p("/v2/companies/%d/integrations/%d", c.ID, c.IntegID), `{"params": {"reset_api_key": "yes"}}`, key(c.Key)...)
	require.Equal(t, 422, r.Status, "%s", r.Body)
	require.Equal(t, []any{"body", "params", "reset_api_key"}, firstError(t, r)["location"])
}

func TestOperatorAPI(t *testing.T) {
	r := call(t, "POST", "/admin/v1/companies", map[string]any{"name": "X"})
	require.Equal(t, 401, r.Status)
	r = call(t, "POST", "/admin/v1/companies", map[string]any{"name": "X"}, "Authorization", "Bearer wrong")
	require.Equal(t, 401, r.Status)
	require.Equal(t, "UNAUTHORIZED", r.JSON(t)["error_name"])

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "name"},
		{map[string]any{"name": "X", "timezone": "Mars/Olympus"}, "timezone"},
		{map[string]any{"name": "X", "owner_email": "not-an-email"}, "owner_email"},
		{map[string]any{"name": "X", "promo_code": "NOPE"}, "promo_code"},
	} {
		r := call(t, "POST", "/admin/v1/companies", tc.body, operator()...)
		require.Equal(t, 422, r.Status, "%v: %s", tc.body, r.Body)
		require.Equal(t, []any{"body", tc.field}, firstError(t, r)["location"], "%s", r.Body)
	}

	c := newCompany(t, map[string]any{"is_partner": true})
	r = call(t, "GET", p("/v2/companies/%d/roles", c.ID), nil, key(c.Key)...)
	require.Contains(t, string(r.Body), `"system_type":"PARTNER"`)
	require.Contains(t, string(call(t, "GET", p("/v2/companies/%d", c.ID), nil, key(c.Key)...).Body), `"is_partner":true`)

	r = call(t, "POST", p("/admin/v1/companies/%d/api_keys", c.ID), map[string]any{"scopes": []string{"members", "bogus"}}, operator()...)
	require.Equal(t, 422, r.Status)
	require.Equal(t, []any{"body", "scopes"}, firstError(t, r)["location"])
	r = call(t, "POST", "/admin/v1/companies/999999/api_keys", map[string]any{"scopes": []string{"members"}}, operator()...)
	require.Equal(t, 404, r.Status)
	r = call(t, "POST", p("/admin/v1/companies/%d/api_keys", c.ID), map[string]any{"scopes": []string{"members:read", "members:read", "sales"}}, operator()...)
	require.Equal(t, 200, r.Status)
	require.Equal(t, []any{"members:read", "sales"}, r.JSON(t)["scopes"])
}

func TestPerKeyRateLimit(t *testing.T) {
	if benchMode {
		t.Skip("benchmark run: the per-key rate limit is off")
	}
	c := newCompany(t, nil)
	k := newKey(t, c.ID, "members")
	var limited *response
	for i := 0; i < 120 && limited == nil; i++ {
		r := call(t, "GET", p("/v2/companies/%d/members", c.ID), nil, key(k)...)
		if r.Status == 429 {
			limited = &r
		} else {
			require.Equal(t, 200, r.Status)
		}
	}
	require.NotNil(t, limited, "120 quick calls never hit the 50/s limit")
	requireBody(t, `{"error_code":429,"error_name":"TOO_MANY_REQUESTS","message":"too many requests","detail":{}}`, *limited)
	require.Equal(t, "1", limited.Header.Get("Retry-After"))
}

func TestTracePropagation(t *testing.T) {
	c := newCompany(t, nil)
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	// A refused call: services log successful ones at debug level only
	// (the gateway's access log has every request).
	r := call(t, "GET", p("/v2/companies/%d/integrations/999999", c.ID), nil, "X-Api-Key", c.Key, "Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	require.Equal(t, 404, r.Status)
	require.Eventually(t, func() bool {
		return strings.Contains(stack.Log("identity"), `"trace_id":"`+traceID+`"`)
	}, waitFor, tick, "the identity service did not log the caller's trace id")
}
