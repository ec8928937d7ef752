package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The five wrong answers of issue 9, one test each, through the gateway.

const nulMessage = "Input should be a valid string without the NUL character (U+0000)"

// requireNUL checks the 422 for a NUL at loc.
func requireNUL(t *testing.T, r response, loc ...any) {
	t.Helper()
	requireLoc(t, r, loc...)
	e := firstError(t, r)
	require.Equal(t, "string_nul", e["type"], "%s", r.Body)
	require.Equal(t, nulMessage, e["message"])
}

// TestNULIsRefused: a NUL anywhere in a request is 422 at its field, never
// a 500 from PostgreSQL, in every service and audience.
func TestNULIsRefused(t *testing.T) {
	c := newCompany(t, nil)
	requireNUL(t, api(t, "POST", cpath(c, "/tags/"), `{"name":"a\u0000b"}`, key(c.Key)...), "body", "name")
	requireNUL(t, api(t, "POST", cpath(c, "/contacts/"), `{"name":"\u0000"}`, key(c.Key)...), "body", "name")
	requireNUL(t, api(t, "GET", cpath(c, "/contacts/?query=a%s", "%00b"), nil, key(c.Key)...), "query", "query")
	requireNUL(t, api(t, "POST", cpath(c, "/connections/"),
		`{"name":"bot","type":"telegram_bot","params":{"bot_token":"1:a\u0000"}}`, key(c.Key)...), "body", "params", "bot_token")
	requireNUL(t, api(t, "POST", cpath(c, "/connections/"),
		`{"name":"bot","type":"telegram_bot","params":{"bot_token":"1:a","x\u0000":1}}`, key(c.Key)...), "body", "params", "x\u0000")
	requireNUL(t, api(t, "POST", "/admin/v1/companies", `{"name":"Acme\u0000"}`, operator()...), "body", "name")
	requireNUL(t, api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID),
		`{"name":"amo","type":"amocrm","params":{"deep":{"list":["\u0000"]}}}`, operator()...), "body", "params", "deep", "list", 0)
	// Nothing was stored on the way.
	requireJSON(t, api(t, "GET", cpath(c, "/tags/"), nil, key(c.Key)...), 200, []any{})
	requireJSON(t, api(t, "GET", cpath(c, "/connections/"), nil, key(c.Key)...), 200, map[string]any{"count": 0, "connections": []any{}})
}

// TestMalformedContentTypeOnBlockedRoutes: the user-account routes answer
// their 403 whatever the Content-Type; a malformed header is never a 500.
func TestMalformedContentTypeOnBlockedRoutes(t *testing.T) {
	c := newCompany(t, nil)
	for _, rt := range []struct{ method, path string }{
		{"POST", "/v2/companies"}, {"POST", "/v2/companies/join"},
		{"POST", "/v2/users/me"}, {"PUT", "/v2/users/me"}, {"PATCH", "/v2/users/me"},
		{"POST", "/v2/users/me/password"}, {"PUT", "/v2/users/me/x/y"}, {"PATCH", "/v2/users/me/settings"},
	} {
		for _, ct := range []string{"a/b; c", "application/x-www-form-urlencoded", ";"} {
			r := call(t, rt.method, rt.path, `{}`, append(key(c.Key), "Content-Type", ct)...)
			require.Equal(t, 403, r.Status, "%s %s (%s): %s", rt.method, rt.path, ct, r.Body)
			requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
		}
	}
	// And on an ordinary route the body is read as JSON.
	r := call(t, "POST", cpath(c, "/tags/"), `{"name":"vip"}`, append(key(c.Key), "Content-Type", "a/b; c")...)
	requireJSON(t, r, 200, map[string]any{"id": anyID, "name": "vip"})
}

// TestUncleanPathsAreNotFound: "." and ".." segments are 404 with the
// standard body, never a redirect to (possibly) another resource.
func TestUncleanPathsAreNotFound(t *testing.T) {
	c := newCompany(t, nil)
	for _, path := range []string{
		cpath(c, "/contacts/.."),
		cpath(c, "/contacts/../"),
		"/v2/companies/../subscriptions",
		cpath(c, "/./connections/"),
		cpath(c, "/connections/%s", "%2e%2e"),
		"/admin/v1/companies/../companies",
		"/healthz/..",
		"/..",
	} {
		r := call(t, "GET", path, nil, append(key(c.Key), "Authorization", "Bearer "+adminToken)...)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Body)
		require.Empty(t, r.Header.Get("Location"), path)
		requireBody(t, `{"error_code":404,"error_name":"NOT_FOUND","message":"not found","detail":{}}`, r)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		r := call(t, "GET", path, nil)
		requireBody(t, `{"status":"ok"}`, r)
	}
}

// TestCRMConnectionNeedsACompany: the operator's CRM create answers 404 8000
// for a company that does not exist and writes nothing.
func TestCRMConnectionNeedsACompany(t *testing.T) {
	body := map[string]any{"name": "amo", "type": "amocrm", "params": map[string]any{"domain": "acme.amocrm.ru"}}
	ids := []string{"0", "-1", "9223372036854775807"}
	for _, id := range ids {
		r := api(t, "POST", "/admin/v1/companies/"+id+"/connections", body, operator()...)
		requireError(t, r, 404, 8000, "COMPANY_NOT_FOUND")
	}
	var n int
	require.NoError(t, serviceDB(t, "connections").QueryRow(context.Background(),
		`SELECT count(*) FROM connections WHERE company_id <= 0 OR company_id = 9223372036854775807`).Scan(&n))
	require.Zero(t, n)
	// A company that exists still gets its connection.
	c := newCompany(t, nil)
	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID), body, operator()...), 200, anyPresent)
}

// TestPutTagsNeedsABody: PUT .../tags/ with no body, a blank one or null is
// 422 and keeps the tags; only [] clears them.
func TestPutTagsNeedsABody(t *testing.T) {
	c := newCompany(t, nil)
	tag := requireJSON(t, api(t, "POST", cpath(c, "/tags/"), map[string]any{"name": "vip"}, key(c.Key)...), 200, anyPresent).(map[string]any)["id"]
	ct := requireJSON(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Ann", "tags": []any{tag}}, key(c.Key)...), 200, anyPresent).(map[string]any)
	path := cpath(c, "/contacts/%v", ct["id"])
	for _, body := range []any{nil, "", " \n ", "null"} {
		r := api(t, "PUT", path+"/tags/", body, key(c.Key)...)
		requireLoc(t, r, "body")
		require.Equal(t, "missing", firstError(t, r)["type"], "%q", body)
		got := requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, anyPresent).(map[string]any)
		require.Equal(t, []any{tag}, got["tags"], "body %q kept the tags", body)
	}
	require.Equal(t, 204, api(t, "PUT", path+"/tags/", "[]", key(c.Key)...).Status)
	got := requireJSON(t, api(t, "GET", path, nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, []any{}, got["tags"])
}

// TestBodyDepthAndSizeAreBounded: the gateway refuses a body nested deeper
// than 32 levels (422) or larger than 1 MiB (413) on every route.
func TestBodyDepthAndSizeAreBounded(t *testing.T) {
	c := newCompany(t, nil)
	deep := `{"name":"amo","type":"amocrm","params":{"x":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `}}`
	r := api(t, "POST", p("/admin/v1/companies/%d/connections", c.ID), deep, operator()...)
	requireLoc(t, r, "body")
	require.Equal(t, "Value error, JSON nested deeper than 32 levels", firstError(t, r)["message"])
	requireJSON(t, api(t, "GET", cpath(c, "/connections/"), nil, key(c.Key)...), 200, map[string]any{"count": 0, "connections": []any{}})

	big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
	r = api(t, "POST", cpath(c, "/tags/"), big, key(c.Key)...)
	requireBody(t, `{"error_code":413,"error_name":"PAYLOAD_TOO_LARGE","message":"request body is too large","detail":{"max_bytes":1048576}}`, r)
	require.Equal(t, 413, r.Status)
}
