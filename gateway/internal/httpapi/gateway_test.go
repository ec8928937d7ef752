package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
)

const fullThing = `{
  "company_id": 999,
  "id": 9007199254740993,
  "name": "Tom <&> \"quoted\"",
  "note": "",
  "count": -2147483648,
  "big": 18446744073709551615,
  "score": 0.1,
  "ratio": 1.5,
  "active": true,
  "blob": "aGVsbG8=",
  "kind": "telegram",
  "scopes": ["messages.create", "chats.read"],
  "owner": {"user_id": 1, "name": "Ann", "age": 30, "email": null},
  "co_owners": [{"user_id": 2}, {"user_id": 3, "email": "c@x.test"}],
  "counters": {"b": 2, "a": -1},
  "media": {"url": "https://x.test/a.png", "size": 10},
  "created_at": "2024-03-05T10:08:09.123456789+03:00",
  "updated_at": null,
  "meta": {"z": 1, "a": [true, null, "s", {"n": 1.25}]},
  "extra": "text",
  "limit_override": 0,
  "nickname": "tommy",
  "verified": false,
  "ttl": 1.5,
  "tag_ids": [3, 1, 2],
  "parent_id": 0,
  "title": "Tommy",
  "labels": {"10": "ten", "-1": "minus one", "2": "two"},
  "previous_kind": "whatsapp",
  "delta": -7,
  "small": 4294967295,
  "unknown_field": {"ignored": true}
}`

func TestCreateThingEchoesEveryKind(t *testing.T) {
	env := newEnv(t)
	env.do(t, "POST", "/test/v1/companies/999/things", fullThing).expectGolden(t, 200, "thing_full")
}

func TestCreateThingEmptyBodyWritesEveryField(t *testing.T) {
	env := newEnv(t)
	// Unset fields: null for presence, [] and {} for repeated and maps,
	// zero values otherwise; the path parameter is bound.
	env.do(t, "POST", "/test/v1/companies/5/things", `{}`).expectGolden(t, 200, "thing_empty")
	// A body of nulls is the same as an empty one.
	env.do(t, "POST", "/test/v1/companies/5/things", `{"name":null,"note":null,"owner":null,"scopes":null,"counters":null,"kind":null,"created_at":null,"extra":null,"text":null}`).
		expectGolden(t, 200, "thing_empty")
	// No body at all.
	env.do(t, "POST", "/test/v1/companies/5/things", "").expectGolden(t, 200, "thing_empty")
}

func TestJSONNameAndProtoNameAreBothAccepted(t *testing.T) {
	env := newEnv(t)
	a := env.do(t, "POST", "/test/v1/companies/1/things", `{"title":"A"}`)
	b := env.do(t, "POST", "/test/v1/companies/1/things", `{"display_name":"A"}`)
	if a.body != b.body || !strings.Contains(a.body, `"title":"A"`) || strings.Contains(a.body, `"display_name"`) {
		t.Errorf("json_name handling:\n%s\n%s", a.body, b.body)
	}
}

func TestGetThing(t *testing.T) {
	env := newEnv(t)
	res := env.do(t, "GET", "/test/v1/companies/1/things/9223372036854775807", "")
	if res.status != 200 ||
		!strings.HasPrefix(res.body, `{"company_id":1,"id":9223372036854775807,"name":"thing","note":null,"count":0,`) ||
		!strings.Contains(res.body, `"kind":"whatsapp"`) ||
		!strings.Contains(res.body, `"created_at":"2024-03-05T07:08:09.123456Z","updated_at":null`) {
		t.Errorf("got %d %s", res.status, res.body)
	}
}

func TestTrailingSlash(t *testing.T) {
	env := newEnv(t)
	with := env.do(t, "POST", "/test/v1/companies/1/things/", `{"name":"x"}`)
	without := env.do(t, "POST", "/test/v1/companies/1/things", `{"name":"x"}`)
	if with.status != 200 || with.body != without.body {
		t.Errorf("POST with slash: %d %s\nwithout: %d %s", with.status, with.body, without.status, without.body)
	}

	// A collection with its trailing slash is the list, never the item
	// route with an empty id.
	list := env.do(t, "GET", "/test/v1/companies/1/things/?limit=2", "")
	if list.status != 200 || !strings.HasPrefix(list.body, `{"request":{"company_id":1,`) || !strings.Contains(list.body, `"limit":2`) {
		t.Errorf("GET collection with slash: %d %s", list.status, list.body)
	}
	if again := env.do(t, "GET", "/test/v1/companies/1/things?limit=2", ""); again.body != list.body {
		t.Errorf("GET collection without slash differs: %s", again.body)
	}

	item := env.do(t, "GET", "/test/v1/companies/1/things/7/", "")
	if item.status != 200 || !strings.HasPrefix(item.body, `{"company_id":1,"id":7,`) {
		t.Errorf("GET item with slash: %d %s", item.status, item.body)
	}

	// Exactly one slash is stripped.
	env.do(t, "GET", "/test/v1/companies/1/things//", "").expect(t, 404, notFoundBody)
	env.do(t, "GET", "/", "").expect(t, 404, notFoundBody)
}

func TestLiteralRouteBeatsVariableDeclaredBefore(t *testing.T) {
	env := newEnv(t)
	// ListThingKinds (declared after GetThing) serves the literal path, and
	// its response_body is a bare array of messages; an enum value without a
	// JSON string is null.
	want := `[{"kind":"whatsapp","name":"WhatsApp"},{"kind":"telegram","name":"Telegram"},{"kind":null,"name":"Legacy"}]`
	env.do(t, "GET", "/test/v1/companies/1/things/kinds", "").expect(t, 200, want)
	env.do(t, "GET", "/test/v1/companies/1/things/kinds/", "").expect(t, 200, want)
	// Any other segment is the variable route.
	if res := env.do(t, "GET", "/test/v1/companies/1/things/12", ""); !strings.HasPrefix(res.body, `{"company_id":1,"id":12,`) {
		t.Errorf("GetThing: %s", res.body)
	}
}

func TestBareArrayBodyAndResponse(t *testing.T) {
	env := newEnv(t)
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags/", `[3, 1, 9007199254740993]`).
		expect(t, 200, `[3,1,9007199254740993]`)
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[]`).expect(t, 200, `[]`)
	// The body is the list: no body, a blank one or null is missing, never
	// an empty list (only [] clears).
	for _, body := range []string{``, " \n\t", `null`} {
		env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", body).
			expect(t, 422, validation(`["body"]`, "Field required", "missing"))
	}
	// Integral numbers in other notations are integers.
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[1.0, 2e2, -0]`).expect(t, 200, `[1,200,0]`)

	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `{"tag_ids":[1]}`).
		expect(t, 422, validation(`["body"]`, "Input should be a valid list", "list_type"))
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[1, "2"]`).
		expect(t, 422, validation(`["body",1]`, "Input should be a valid integer", "int_type"))
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[1, null]`).
		expect(t, 422, validation(`["body",1]`, "Input should be a valid integer", "int_type"))
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[1, 2.5]`).
		expect(t, 422, validation(`["body",1]`, "Input should be a valid integer, got a number with a fractional part", "int_from_float"))
	env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[9223372036854775808]`).
		expect(t, 422, validation(`["body",0]`, "Input should be less than or equal to 9223372036854775807", "less_than_equal"))
}

func TestBareArrayOfEnums(t *testing.T) {
	env := newEnv(t)
	env.do(t, "GET", "/test/v1/companies/1/things/2/scopes", "").expect(t, 200, `["messages.create","chats.read",null]`)
}

func TestDeleteWithBodyIs204(t *testing.T) {
	env := newEnv(t)
	res := env.do(t, "DELETE", "/test/v1/companies/3/things/4", `{"reason":"spam","hard":true}`)
	res.expect(t, http.StatusNoContent, "")
	env.server.mu.Lock()
	got := env.server.lastDelete
	env.server.mu.Unlock()
	mustProtoEqual(t, got, &gatewaytestv1.DeleteThingRequest{CompanyId: 3, ThingId: 4, Reason: "spam", Hard: true})

	// Without a body, and with the trailing slash.
	env.do(t, "DELETE", "/test/v1/companies/3/things/5/", "").expect(t, http.StatusNoContent, "")
}

func TestBodyFieldRoute(t *testing.T) {
	env := newEnv(t)
	// body: "thing" — the JSON body is the Thing itself; dry_run comes
	// from the query.
	res := env.do(t, "PATCH", "/test/v1/companies/1/things/2?dry_run=true", `{"name":"n","count":3}`)
	if res.status != 200 || !strings.HasPrefix(res.body, `{"company_id":1,"id":2,"name":"n (dry run)","note":null,"count":3,`) {
		t.Errorf("got %d %s", res.status, res.body)
	}
	env.do(t, "PATCH", "/test/v1/companies/1/things/2", `{"count":"3"}`).
		expect(t, 422, validation(`["body","count"]`, "Input should be a valid integer", "int_type"))
	env.do(t, "PATCH", "/test/v1/companies/1/things/2?dry_run=maybe", `{}`).
		expect(t, 422, validation(`["query","dry_run"]`, "Input should be a valid boolean, unable to interpret input", "bool_parsing"))
}

func TestQueryParameters(t *testing.T) {
	env := newEnv(t)
	q := "kinds=whatsapp&kinds=telegram&only_active=TRUE&archived=0&limit=10&after_id=9007199254740993" +
		"&filter.query=a%20b&filter.min_count=3&filter.window.since=2024-01-02T03:04:05.5%2B03:00" +
		"&until=2024-01-02T00:00:00Z&names=a,b&names=c&ids[]=1&ids[]=2&scope=messages.create&min_score=-1.5e2" +
		"&max_id=7&page=2&unknown=x&company_id=555"
	env.do(t, "GET", "/test/v1/companies/1/things?"+q, "").expectGolden(t, 200, "list_query")
	// Nothing set: every field still written.
	env.do(t, "GET", "/test/v1/companies/1/things", "").expectGolden(t, 200, "list_empty")
	// Bools: 1/0 and any case.
	res := env.do(t, "GET", "/test/v1/companies/1/things?only_active=1&archived=False", "")
	if !strings.Contains(res.body, `"only_active":true,"archived":false,`) {
		t.Errorf("bools: %s", res.body)
	}
}

func TestValidationErrors(t *testing.T) {
	env := newEnv(t)
	const things = "/test/v1/companies/1/things"
	cases := []struct {
		name, method, path, body string
		loc, msg, typ            string
	}{
		// Path parameters.
		{"path int", "GET", "/test/v1/companies/abc/things", "", `["path","company_id"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"path int fraction", "GET", "/test/v1/companies/1.5/things/2", "", `["path","company_id"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"path int64 too big", "GET", "/test/v1/companies/99999999999999999999/things", "", `["path","company_id"]`, "Input should be less than or equal to 9223372036854775807", "less_than_equal"},
		{"path int64 too small", "GET", "/test/v1/companies/-99999999999999999999/things", "", `["path","company_id"]`, "Input should be greater than or equal to -9223372036854775808", "greater_than_equal"},
		{"path int32 too big", "GET", "/test/v1/companies/1/things/3000000000/scopes", "", `["path","thing_id"]`, "Input should be less than or equal to 2147483647", "less_than_equal"},
		{"path second param", "GET", "/test/v1/companies/1/things/x1", "", `["path","thing_id"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		// Query parameters.
		{"query int", "GET", things + "?limit=abc", "", `["query","limit"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query int fraction", "GET", things + "?limit=1.5", "", `["query","limit"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query empty int", "GET", things + "?limit=", "", `["query","limit"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query int32 range", "GET", things + "?limit=2147483648", "", `["query","limit"]`, "Input should be less than or equal to 2147483647", "less_than_equal"},
		{"query uint negative", "GET", things + "?page=-1", "", `["query","page"]`, "Input should be greater than or equal to 0", "greater_than_equal"},
		{"query int64 repeated", "GET", things + "?ids=1&ids=x", "", `["query","ids",1]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query bool", "GET", things + "?only_active=yes", "", `["query","only_active"]`, "Input should be a valid boolean, unable to interpret input", "bool_parsing"},
		{"query enum", "GET", things + "?kinds=whatsapp&kinds=sms", "", `["query","kinds",1]`, "Input should be 'whatsapp' or 'telegram'", "enum"},
		{"query enum comma", "GET", things + "?kinds=whatsapp,telegram", "", `["query","kinds",0]`, "Input should be 'whatsapp' or 'telegram'", "enum"},
		{"query enum proto name", "GET", things + "?scope=SCOPE_CHATS_READ", "", `["query","scope"]`, "Input should be 'messages.create' or 'chats.read'", "enum"},
		{"query nested", "GET", things + "?filter.min_count=x", "", `["query","filter.min_count"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query timestamp", "GET", things + "?until=yesterday", "", `["query","until"]`, "Input should be a valid datetime in RFC 3339 format, like 2006-01-02T15:04:05Z", "datetime_parsing"},
		{"query float", "GET", things + "?min_score=NaN", "", `["query","min_score"]`, "Input should be a valid number, unable to parse string as a number", "float_parsing"},
		{"query wrapper", "GET", things + "?max_id=0x10", "", `["query","max_id"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"query malformed", "GET", things + "?limit=%zz", "", `["query"]`, `Value error, malformed query string: invalid URL escape "%zz"`, "value_error"},
		// Bodies.
		{"malformed JSON", "POST", things, `{"name": `, `["body"]`, "Invalid JSON: unexpected end of input", "json_invalid"},
		{"bad JSON token", "POST", things, `{"name": x}`, `["body"]`, "Invalid JSON: invalid character 'x' looking for beginning of value", "json_invalid"},
		{"trailing data", "POST", things, `{} {}`, `["body"]`, "Invalid JSON: unexpected data after the top-level value", "json_invalid"},
		{"body not an object", "POST", things, `[1]`, `["body"]`, "Input should be a valid dictionary or object", "dict_type"},
		{"string for int", "POST", things, `{"count": "5"}`, `["body","count"]`, "Input should be a valid integer", "int_type"},
		{"bool for int", "POST", things, `{"id": true}`, `["body","id"]`, "Input should be a valid integer", "int_type"},
		{"int fraction", "POST", things, `{"id": 1.5}`, `["body","id"]`, "Input should be a valid integer, got a number with a fractional part", "int_from_float"},
		{"int32 too big", "POST", things, `{"count": 2147483648}`, `["body","count"]`, "Input should be less than or equal to 2147483647", "less_than_equal"},
		{"int32 too small", "POST", things, `{"count": -2147483649}`, `["body","count"]`, "Input should be greater than or equal to -2147483648", "greater_than_equal"},
		{"uint64 negative", "POST", things, `{"big": -1}`, `["body","big"]`, "Input should be greater than or equal to 0", "greater_than_equal"},
		{"huge exponent", "POST", things, `{"id": 1e999999999999}`, `["body","id"]`, "Input should be less than or equal to 9223372036854775807", "less_than_equal"},
		{"nested field", "POST", things, `{"owner": {"age": "x"}}`, `["body","owner","age"]`, "Input should be a valid integer", "int_type"},
		{"list element field", "POST", things, `{"co_owners": [{}, {"user_id": 1, "name": 5}]}`, `["body","co_owners",1,"name"]`, "Input should be a valid string", "string_type"},
		{"null list element", "POST", things, `{"co_owners": [null]}`, `["body","co_owners",0]`, "Input should be a valid dictionary or object", "dict_type"},
		{"map value", "POST", things, `{"counters": {"a": 1, "b": "x"}}`, `["body","counters","b"]`, "Input should be a valid integer", "int_type"},
		{"map int key", "POST", things, `{"labels": {"x": "y"}}`, `["body","labels","x"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"},
		{"enum", "POST", things, `{"kind": "sms"}`, `["body","kind"]`, "Input should be 'whatsapp' or 'telegram'", "enum"},
		{"enum without json", "POST", things, `{"kind": "THING_KIND_LEGACY"}`, `["body","kind"]`, "Input should be 'whatsapp' or 'telegram'", "enum"},
		{"enum number", "POST", things, `{"kind": 1}`, `["body","kind"]`, "Input should be 'whatsapp' or 'telegram'", "enum"},
		{"repeated enum", "POST", things, `{"scopes": ["chats.read", "chats.write"]}`, `["body","scopes",1]`, "Input should be 'messages.create' or 'chats.read'", "enum"},
		{"bool", "POST", things, `{"active": "true"}`, `["body","active"]`, "Input should be a valid boolean", "bool_type"},
		{"bool number", "POST", things, `{"active": 1}`, `["body","active"]`, "Input should be a valid boolean", "bool_type"},
		{"string", "POST", things, `{"name": 5}`, `["body","name"]`, "Input should be a valid string", "string_type"},
		{"json_name location", "POST", things, `{"title": false}`, `["body","title"]`, "Input should be a valid string", "string_type"},
		{"float", "POST", things, `{"score": "1"}`, `["body","score"]`, "Input should be a valid number", "float_type"},
		{"float32 range", "POST", things, `{"ratio": 1e39}`, `["body","ratio"]`, "Input should be less than or equal to 3.4028235e+38", "less_than_equal"},
		{"list", "POST", things, `{"scopes": "messages.create"}`, `["body","scopes"]`, "Input should be a valid list", "list_type"},
		{"dict", "POST", things, `{"owner": []}`, `["body","owner"]`, "Input should be a valid dictionary or object", "dict_type"},
		{"timestamp", "POST", things, `{"created_at": "2024-13-01T00:00:00Z"}`, `["body","created_at"]`, "Input should be a valid datetime in RFC 3339 format, like 2006-01-02T15:04:05Z", "datetime_parsing"},
		{"timestamp type", "POST", things, `{"created_at": 1700000000}`, `["body","created_at"]`, "Input should be a valid datetime", "datetime_type"},
		{"wrapper", "POST", things, `{"limit_override": "5"}`, `["body","limit_override"]`, "Input should be a valid integer", "int_type"},
		{"duration", "POST", things, `{"ttl": "1s"}`, `["body","ttl"]`, "Input should be a valid number", "float_type"},
		{"bytes", "POST", things, `{"blob": "***"}`, `["body","blob"]`, "Input should be valid base64", "base64_decode"},
		{"struct", "POST", things, `{"meta": [1]}`, `["body","meta"]`, "Input should be a valid dictionary or object", "dict_type"},
		{"oneof twice", "POST", things, `{"text": "a", "media": {}}`, `["body","media"]`, "Value error, text and media cannot both be set", "value_error"},
		{"delete body", "DELETE", things + "/1", `{"hard": "yes"}`, `["body","hard"]`, "Input should be a valid boolean", "bool_type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.do(t, c.method, c.path, c.body).expect(t, 422, validation(c.loc, c.msg, c.typ))
		})
	}
}

func TestServiceErrors(t *testing.T) {
	env := newEnv(t)
	cases := []struct {
		kind   string
		status int
		body   string
		retry  string
	}{
		{"unauthorized", 401, `{"error_code":401,"error_name":"UNAUTHORIZED","message":"missing or unknown api key","detail":{}}`, ""},
		{"forbidden", 403, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, ""},
		{"not_found", 404, `{"error_code":10000,"error_name":"CONNECTION_NOT_FOUND","message":"connection not found","detail":{}}`, ""},
		{"company_not_found", 404, `{"error_code":8000,"error_name":"COMPANY_NOT_FOUND","message":"company not found","detail":{}}`, ""},
		{"conflict", 409, `{"error_code":1001,"error_name":"CONTACT_PHONE_EMAIL_CONFLICT","message":"phone or email already used by another contact","detail":{}}`, ""},
		{"rate_limited", 429, `{"error_code":429,"error_name":"TOO_MANY_REQUESTS","message":"too many requests","detail":{}}`, "30"},
		{"catalogue_500", 500, `{"error_code":10020,"error_name":"CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED","message":"whatsapp provider is not supported; contact support","detail":{}}`, ""},
		{"validation", 422, validation(`["body","name"]`, "String should have at least 1 character", "string_too_short"), ""},
		{"html", 400, `{"error_code":400,"error_name":"BAD_REQUEST","message":"a <b> & \"c\"","detail":{"url":"https://x.test/?a=1&b=2"}}`, ""},
		// Statuses without the catalogue detail: by code, never the text.
		{"plain", 500, `{"error_code":500,"error_name":"INTERNAL_SERVER_ERROR","message":"internal server error","detail":{}}`, ""},
		{"raw_invalid_argument", 500, `{"error_code":500,"error_name":"INTERNAL_SERVER_ERROR","message":"internal server error","detail":{}}`, ""},
		{"raw_internal", 500, `{"error_code":500,"error_name":"INTERNAL_SERVER_ERROR","message":"internal server error","detail":{}}`, ""},
		{"raw_unauthenticated", 401, `{"error_code":401,"error_name":"UNAUTHORIZED","message":"missing or unknown api key","detail":{}}`, ""},
		{"raw_permission_denied", 403, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, ""},
		{"raw_not_found", 404, notFoundBody, ""},
		{"raw_unimplemented", 404, notFoundBody, ""},
		{"raw_already_exists", 409, `{"error_code":409,"error_name":"CONFLICT","message":"conflict","detail":{}}`, ""},
		// Our rate limits always carry the catalogue detail: a bare
		// ResourceExhausted is gRPC's own (a message past its size limit),
		// which waiting does not cure.
		{"raw_resource_exhausted", 500, `{"error_code":500,"error_name":"INTERNAL_SERVER_ERROR","message":"internal server error","detail":{}}`, ""},
		{"raw_unavailable", 503, `{"error_code":503,"error_name":"SERVICE_UNAVAILABLE","message":"service unavailable","detail":{}}`, ""},
		{"raw_deadline", 503, `{"error_code":503,"error_name":"SERVICE_UNAVAILABLE","message":"service unavailable","detail":{}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			res := env.do(t, "GET", "/test/v1/fail/"+c.kind, "")
			res.expect(t, c.status, c.body)
			if got := res.header.Get("Retry-After"); got != c.retry {
				t.Errorf("Retry-After = %q, want %q", got, c.retry)
			}
		})
	}
	// The same RPC succeeding, for contrast.
	if res := env.do(t, "GET", "/test/v1/fail/none", ""); res.status != 200 {
		t.Errorf("fail/none: %d %s", res.status, res.body)
	}
}

func TestUnknownAddressOrMethodIs404(t *testing.T) {
	env := newEnv(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/nope", ""},
		{"GET", "/test/v1/companies/1", ""},
		{"GET", "/test/v1/companies/1/things/2/tags", ""}, // PUT only: 405 in grpc-gateway
		{"DELETE", "/test/v1/whoami", ""},                 // GET only: 405
		{"PUT", "/test/v1/companies/1/things", "{}"},      // POST and GET only
		{"POST", "/test/v1/companies/1/things/kinds", "{}"},
		{"GET", "/test/v1/companies/1/things/2/tags/extra", ""},
		{"GET", "/test/v1/companies/1/things/%FF", ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			env.do(t, c.method, c.path, c.body).expect(t, 404, notFoundBody)
		})
	}
	// A form POST to a GET-only route is not served as the GET
	// (grpc-gateway's path-length fallback is off).
	env.do(t, "POST", "/test/v1/whoami", "a=b", "Content-Type", "application/x-www-form-urlencoded").expect(t, 404, notFoundBody)
}

func TestHeaders(t *testing.T) {
	env := newEnv(t)
	res := env.do(t, "GET", "/test/v1/whoami", "",
		"X-Api-Key", "key-1",
		"Authorization", "Bearer tok",
		"Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"Tracestate", "a=b",
		"Grpc-Metadata-X-Internal-Token", "forged",
		"X-Other", "dropped",
	)
	if res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	for _, want := range []string{
		`"x-api-key":"key-1"`,
		`"authorization":"Bearer tok"`,
		`"grpcgateway-user-agent":"Go-http-client/1.1"`,
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("forwarded metadata lacks %s: %s", want, res.body)
		}
	}
	// The trace context is the tracing handler's to continue (the
	// gateway's span goes with every call, see TestTracePropagation in
	// gateway/e2e), never copied as sent.
	for _, unwanted := range []string{"x-internal-token", "x-other", "grpcgateway-authorization", "grpcgateway-x-api-key", "traceparent", "tracestate"} {
		if strings.Contains(res.body, `"`+unwanted+`"`) {
			t.Errorf("metadata has %s: %s", unwanted, res.body)
		}
	}
	// expect() also checks that no Grpc-Metadata-* header leaks out.
	res.expect(t, 200, res.body)
	for k := range res.header {
		if strings.Contains(strings.ToLower(k), "internal") {
			t.Errorf("response header %s leaked", k)
		}
	}
}

// TestPathIntegerQuirks documents grpc-gateway's own parsing of path
// integers (strconv base 0), which the gateway leaves alone.
func TestPathIntegerQuirks(t *testing.T) {
	env := newEnv(t)
	for path, id := range map[string]string{"010": "8", "0x10": "16", "1_000": "1000", "+5": "5"} {
		res := env.do(t, "GET", "/test/v1/companies/1/things/"+path, "")
		if res.status != 200 || !strings.HasPrefix(res.body, `{"company_id":1,"id":`+id+`,`) {
			t.Errorf("%s: %d %s", path, res.status, res.body)
		}
	}
}
