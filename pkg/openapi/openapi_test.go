package openapi_test

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/proto/openapi"
)

// The committed documents are what `make generate` writes from the protos
// (make check-generate keeps them so); these tests read them for the
// rules of pkg/openapi that the e2e validation relies on.

func load(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	return doc
}

func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%v: not an object at %q", path, p)
		v, ok = m[p]
		require.True(t, ok, "%v: no %q", path, p)
	}
	return v
}

func TestAnswersAreTheWalkersJSON(t *testing.T) {
	doc := load(t, openapi.Public())
	chat := at(t, doc, "components", "schemas", "messaging.v1.Chat").(map[string]any)
	require.Equal(t, false, chat["additionalProperties"], "answers allow no field the document lacks")
	props := chat["properties"].(map[string]any)
	require.ElementsMatch(t, chat["required"], keys(props), "every field is always written")
	require.Equal(t, "integer", at(t, props, "id", "type"), "int64 is a JSON integer")
	require.Equal(t, "int64", at(t, props, "id", "format"))
	require.Equal(t, []any{"string", "null"}, at(t, props, "avatar_url", "type"), "an unset optional field is null")
	require.Equal(t, "date-time", at(t, props, "created_at", "format"), "a timestamp is a string")
	require.Equal(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$`, at(t, props, "created_at", "pattern"), "with microseconds, in UTC")

	typ := at(t, doc, "components", "schemas", "messaging.v1.Message", "properties", "message_type").(map[string]any)
	require.Contains(t, typ["enum"], "waba_template", "enums are their JSON strings")
	require.Contains(t, typ["enum"], nil, "UNSPECIFIED is written as null")

	list := at(t, doc, "paths", "/v2/companies/{company_id}/messaging/waba_templates", "get", "responses", "200",
		"content", "application/json", "schema").(map[string]any)
	require.Equal(t, "array", list["type"], "response_body gives a bare array")
	del := at(t, doc, "paths", "/v2/companies/{company_id}/messaging/templates/waba_templates/actions/delete", "post", "responses").(map[string]any)
	require.Contains(t, del, "204", "google.protobuf.Empty is 204")
	require.NotContains(t, del, "200")
}

func TestRequestsCarryTheirRules(t *testing.T) {
	doc := load(t, openapi.Public())
	body := at(t, doc, "paths", "/v2/companies/{company_id}/messaging/templates/waba_templates", "post",
		"requestBody", "content", "application/json", "schema").(map[string]any)
	require.NotContains(t, body["properties"], "company_id", "path variables are not body fields")
	require.ElementsMatch(t, []any{"connection_id", "custom_name", "category", "components", "template_locale"}, body["required"])
	name := at(t, body, "properties", "custom_name").(map[string]any)
	require.EqualValues(t, 505, name["maxLength"])
	require.Equal(t, "^[a-z0-9_]+$", name["pattern"])
	require.Equal(t, []any{"AUTHENTICATION", "MARKETING", "UTILITY"}, at(t, body, "properties", "category", "enum"))
	require.EqualValues(t, 4, at(t, body, "properties", "components", "maxItems"))

	send := at(t, doc, "paths", "/v2/companies/{company_id}/messaging/messages", "post").(map[string]any)
	var header map[string]any
	for _, p := range send["parameters"].([]any) {
		if p.(map[string]any)["in"] == "header" {
			header = p.(map[string]any)
		}
	}
	require.Equal(t, "Idempotency-Key", header["name"])
}

func TestErrorsSecurityAndIDs(t *testing.T) {
	doc := load(t, openapi.Public())
	update := at(t, doc, "paths", "/v2/companies/{company_id}/messaging/templates/waba_templates/actions/update", "patch").(map[string]any)
	ref := at(t, update, "responses", "404", "$ref").(string)
	resp := at(t, doc, "components", "responses", ref[len("#/components/responses/"):]).(map[string]any)
	// 15010 is 400 in the catalogue; the RPC's comment says 404 here.
	require.Equal(t, []any{404.0, 10000.0, 15010.0}, resp["x-error-codes"])
	require.Equal(t, []any{map[string]any{"ApiKey": []any{"messaging"}}}, update["security"])

	roles := at(t, doc, "paths", "/v2/companies/{company_id}/roles", "get", "security").([]any)
	require.Equal(t, []any{"members", "permission:members_view"}, roles[0].(map[string]any)["ApiKey"], "a scope and a permission")

	seen := map[string]bool{}
	for _, item := range at(t, doc, "paths").(map[string]any) {
		for verb, op := range item.(map[string]any) {
			if strings.HasPrefix(verb, "x-") {
				continue
			}
			id := op.(map[string]any)["operationId"].(string)
			require.NotContains(t, id, " ")
			require.False(t, seen[id], id)
			seen[id] = true
		}
	}
	// A literal path keeps the methods its template serves there; a
	// variable over several segments is marked.
	require.Contains(t, at(t, doc, "paths", "/v2/users/me/profile"), "patch")
	require.Equal(t, []any{"path"}, at(t, doc, "paths", "/v2/users/me/{path}", "get", "x-multi-segment-variables"))

	op := load(t, openapi.Operator())
	require.Contains(t, at(t, op, "paths"), "/sandbox/v1/waba/{connection_id}/templates/{name}/status")
	require.NotContains(t, at(t, doc, "paths"), "/sandbox/v1/waba/{connection_id}/templates/{name}/status")
	require.Equal(t, []any{map[string]any{"OperatorToken": []any{}}},
		at(t, op, "paths", "/admin/v1/companies", "post", "security"))
}

func keys(m map[string]any) []any {
	var out []any
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestEveryRequestListShowsItsMaximum (issue 25): every array a request
// may send, in a body (request schemas, the ...Input components) or in
// the query, shows maxItems, and every map maxProperties: the reference
// tells a client each list's limit before a 422 does.
func TestEveryRequestListShowsItsMaximum(t *testing.T) {
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		doc := load(t, raw)
		var missing []string
		var walk func(where string, v any)
		walk = func(where string, v any) {
			switch x := v.(type) {
			case map[string]any:
				if isType(x["type"], "array") && x["maxItems"] == nil {
					missing = append(missing, where)
				}
				if ap, ok := x["additionalProperties"].(map[string]any); ok && ap != nil && x["maxProperties"] == nil {
					missing = append(missing, where+" (a map)")
				}
				for k, e := range x {
					if k != "$ref" {
						walk(where+"."+k, e)
					}
				}
			case []any:
				for i, e := range x {
					walk(where+"["+strconv.Itoa(i)+"]", e)
				}
			}
		}
		for schema, s := range at(t, doc, "components", "schemas").(map[string]any) {
			if strings.HasSuffix(schema, "Input") {
				walk(schema, s)
			}
		}
		for path, item := range at(t, doc, "paths").(map[string]any) {
			for verb, op := range item.(map[string]any) {
				if strings.HasPrefix(verb, "x-") {
					continue
				}
				o := op.(map[string]any)
				walk(name+" "+verb+" "+path+" parameters", o["parameters"])
				walk(name+" "+verb+" "+path+" requestBody", o["requestBody"])
			}
		}
		sort.Strings(missing)
		require.Empty(t, missing, "%s: request lists without maxItems", name)
	}
	doc := load(t, openapi.Public())
	body := func(path, verb string) map[string]any {
		return at(t, doc, "paths", path, verb, "requestBody", "content", "application/json", "schema", "properties").(map[string]any)
	}
	require.EqualValues(t, 100, at(t, body("/v2/companies/{company_id}/contacts", "post"), "notes", "maxItems"))
	require.EqualValues(t, 20, at(t, body("/v2/companies/{company_id}/contacts/{contact_id}", "patch"), "phones", "maxItems"),
		"a ListValue's CEL limit is shown too")
}

func isType(t any, want string) bool {
	switch x := t.(type) {
	case string:
		return x == want
	case []any:
		for _, e := range x {
			if e == want {
				return true
			}
		}
	}
	return false
}
