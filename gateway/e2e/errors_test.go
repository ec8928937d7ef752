package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unprocessable is the whole 422 body of the given errors, each
// {location, message, type}; the first error's message is the body's.
func unprocessable(errs ...map[string]any) map[string]any {
	list := make([]any, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return map[string]any{
		"error_code": 1, "error_name": "REQUEST_VALIDATION_ERROR", "message": errs[0]["message"],
		"detail": map[string]any{"errors": list},
	}
}

func fieldErr(typ, message string, loc ...any) map[string]any {
	return map[string]any{"location": loc, "message": message, "type": typ}
}

// TestValidationWords (issue 26): the rules the protos declare answer in
// the API's words, like the rest of its 422s, saying what is wrong and
// what is allowed; a field the client left out is "Field required"
// (missing), one it sent empty breaks the rule the empty value breaks.
func TestValidationWords(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	k := key(c.Key)
	contacts := cpath(c, "/contacts/")

	// A contact without a name, then with an empty one.
	requireJSON(t, api(t, "POST", contacts, map[string]any{}, k...), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "name")))
	requireJSON(t, api(t, "POST", contacts, map[string]any{"name": ""}, k...), 422,
		unprocessable(fieldErr("string_too_short", "String should have at least 1 character", "body", "name")))
	requireJSON(t, api(t, "POST", contacts, map[string]any{"name": nil}, k...), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "name"))) // null is no value
	// The same in a list item: left out, sent empty, too long.
	requireJSON(t, api(t, "POST", contacts, map[string]any{"name": "Ann", "phones": []any{
		map[string]any{"type": "work"}, map[string]any{"phone": ""}, map[string]any{"phone": strings.Repeat("1", 65)},
	}}, k...), 422, unprocessable(
		fieldErr("missing", "Field required", "body", "phones", 0, "phone"),
		fieldErr("string_too_short", "String should have at least 1 character", "body", "phones", 1, "phone"),
		fieldErr("string_too_long", "String should have at most 64 characters", "body", "phones", 2, "phone"),
	))

	// An empty message: what is missing; an unknown type: the allowed ones,
	// the same words whether the gateway or the service refuses the value.
	messages := cpath(c, "/messaging/messages/")
	requireJSON(t, api(t, "POST", messages, map[string]any{}, k...), 422, unprocessable(
		fieldErr("missing", "Field required", "body", "chat_id"),
		fieldErr("missing", "Field required", "body", "message_type"),
	))
	types := "Input should be 'text', 'file', 'image', 'audio', 'video', 'voice', 'waba_template', 'waba_interactive', 'service_order' or 'waba_order'"
	requireJSON(t, api(t, "POST", messages, map[string]any{"chat_id": 1, "message_type": "sms"}, k...), 422,
		unprocessable(fieldErr("enum", types, "body", "message_type")))
	requireJSON(t, api(t, "POST", messages, map[string]any{"chat_id": 0, "message_type": "text", "text": map[string]any{"text": "hi"}}, k...), 422,
		unprocessable(fieldErr("value_error", "Value error, the value should not be 0", "body", "chat_id"))) // 0 was sent

	// The query: left out, sent 0, out of range on either side.
	requireJSON(t, api(t, "GET", messages, nil, k...), 422,
		unprocessable(fieldErr("missing", "Field required", "query", "chat_id")))
	requireJSON(t, api(t, "GET", messages+"?chat_id=0", nil, k...), 422,
		unprocessable(fieldErr("value_error", "Value error, the value should not be 0", "query", "chat_id")))
	requireJSON(t, api(t, "GET", messages+"?chat_id=1&limit=0", nil, k...), 422,
		unprocessable(fieldErr("greater_than_equal", "Input should be greater than or equal to 1", "query", "limit")))
	requireJSON(t, api(t, "GET", messages+"?chat_id=1&limit=101", nil, k...), 422,
		unprocessable(fieldErr("less_than_equal", "Input should be less than or equal to 100", "query", "limit")))

	// Lists: left out, sent empty, an item twice, an item refused.
	webhooks := cpath(c, "/webhooks/")
	hook := func(events any) map[string]any {
		b := map[string]any{"url": "https://example.com/hook", "connection_id": 1}
		if events != nil {
			b["events"] = events
		}
		return b
	}
	requireJSON(t, api(t, "POST", webhooks, hook(nil), k...), 422,
		unprocessable(fieldErr("missing", "Field required", "body", "events")))
	requireJSON(t, api(t, "POST", webhooks, hook([]any{}), k...), 422,
		unprocessable(fieldErr("too_short", "List should have at least 1 item after validation, not 0", "body", "events")))
	requireJSON(t, api(t, "POST", webhooks, hook([]any{"messages.create", "messages.delivery.read", "messages.create"}), k...), 422,
		unprocessable(fieldErr("value_error", "Value error, list items should be unique: 'messages.create' is repeated", "body", "events")))
	requireJSON(t, api(t, "POST", webhooks, map[string]any{"url": "", "events": []any{"messages.create"}}, k...), 422, unprocessable(
		fieldErr("string_too_short", "String should have at least 1 character", "body", "url"),
		fieldErr("missing", "Field required", "body", "connection_id"),
	))

	// A pattern and a closed list of strings.
	wabaTemplates := cpath(c, "/messaging/templates/waba_templates/")
	requireJSON(t, api(t, "POST", wabaTemplates, map[string]any{
		"connection_id": 1, "custom_name": "Big Sale", "category": "SPAM", "template_locale": "en",
		"components": []any{map[string]any{"type": "BODY", "text": "Hi"}},
	}, k...), 422, unprocessable(
		fieldErr("string_pattern_mismatch", "String should match pattern '^[a-z0-9_]+$'", "body", "custom_name"),
		fieldErr("enum", "Input should be 'AUTHENTICATION', 'MARKETING' or 'UTILITY'", "body", "category"),
	))

	// An email address, on the operator API.
	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/members", c.ID), map[string]any{"email": "ann.example.com", "display_name": "Ann", "role": "MANAGER"}, operator()...), 422,
		unprocessable(fieldErr("value_error", "value is not a valid email address: An email address must have an @-sign.", "body", "email")))
}

// TestKeyMistakes (issue 26): a key sent the wrong way is 401 saying where
// and how it goes; an unknown key says only that it is unknown. The
// operator API keeps its rule.
func TestKeyMistakes(t *testing.T) {
	t.Parallel()
	c := newCompany(t, nil)
	path := p("/v2/companies/%d/members/", c.ID)
	unauthorized := func(message string) string {
		return p(`{"error_code":401,"error_name":"UNAUTHORIZED","message":%q,"detail":{}}`, message)
	}
	for _, tc := range []struct {
		name    string
		headers []string
		message string
	}{
		{"no key", nil, "missing API key: send it in the X-Api-Key header"},
		{"a bearer key", []string{"Authorization", "Bearer " + c.Key}, "the API key goes in the X-Api-Key header, not Authorization"},
		{"a bare key in Authorization", []string{"Authorization", c.Key}, "the API key goes in the X-Api-Key header, not Authorization"},
		{"an empty X-Api-Key", []string{"X-Api-Key", ""}, "the X-Api-Key header is empty: send the API key in it"},
		{"a quoted key", []string{"X-Api-Key", `"` + c.Key + `"`}, "the API key in X-Api-Key is in quotes: send the key without them"},
		{"a Bearer prefix in X-Api-Key", []string{"X-Api-Key", "Bearer " + c.Key}, "X-Api-Key takes the API key alone, without 'Bearer '"},
		{"the operator token as a key", []string{"X-Api-Key", adminToken}, "the operator token is not an API key: send a company's API key in X-Api-Key (the operator token is for the operator API, as Authorization: Bearer)"},
		{"the operator token as a bearer", operator(), "the operator token opens the operator API only: this route takes a company's API key, in the X-Api-Key header"},
		{"an unknown key", []string{"X-Api-Key", "sb_" + strings.Repeat("A", 52)}, "unknown api key"},
	} {
		r := call(t, "GET", path, nil, tc.headers...)
		require.Equal(t, 401, r.Status, tc.name)
		requireBody(t, unauthorized(tc.message), r)
	}

	// Spaces around a header value are not part of it in HTTP: the key works.
	r := call(t, "GET", path, nil, "X-Api-Key", "  "+c.Key+"\t")
	require.Equal(t, 200, r.Status, "%s", r.Body)

	// The operator API: its bearer token, and nothing else.
	r = call(t, "POST", "/admin/v1/companies/", map[string]any{"name": "X"}, key(c.Key)...)
	require.Equal(t, 401, r.Status)
	requireBody(t, unauthorized("missing or wrong operator token"), r)
}
