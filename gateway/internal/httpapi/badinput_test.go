package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"switchboard.dev/gateway/internal/httpapi"
)

const nulMsg = "Input should be a valid string without the NUL character (U+0000)"

// A NUL cannot be stored by PostgreSQL (text or jsonb): it is refused at the
// field that holds it, wherever that is.
func TestNULIsRefusedWhereverItIs(t *testing.T) {
	env := newEnv(t)
	for body, loc := range map[string]string{
		`{"name":"a\u0000b"}`:                       `["body","name"]`,
		`{"owner":{"name":"\u0000"}}`:               `["body","owner","name"]`,
		`{"co_owners":[{"email":"x\u0000"}]}`:       `["body","co_owners",0,"email"]`,
		`{"meta":{"k":"v\u0000"}}`:                  `["body","meta","k"]`,
		`{"meta":{"k\u0000":1}}`:                    `["body","meta","k\u0000"]`,
		`{"meta":{"list":[1,["\u0000"]]}}`:          `["body","meta","list",1,0]`,
		`{"extra":"\u0000"}`:                        `["body","extra"]`,
		`{"counters":{"a\u0000":1}}`:                `["body","counters","a\u0000"]`,
		`{"labels":{"1":"\u0000"}}`:                 `["body","labels","1"]`,
		`{"nickname":"nick\u0000"}`:                 `["body","nickname"]`,
		`{"text":"\u0000"}`:                         `["body","text"]`,
		`{"media":{"url":"https://x.test/\u0000"}}`: `["body","media","url"]`,
	} {
		env.do(t, "POST", "/test/v1/companies/1/things", body).expect(t, 422, validation(loc, nulMsg, "string_nul"))
	}
	// Other control characters are text like any other.
	if res := env.do(t, "POST", "/test/v1/companies/1/things", `{"name":"a\u0001\u001f\u007fb"}`); res.status != 200 {
		t.Errorf("control characters: %d %s", res.status, res.body)
	}
	// Query values.
	env.do(t, "GET", "/test/v1/companies/1/things?names=a&names=b%00", "").
		expect(t, 422, validation(`["query","names",1]`, nulMsg, "string_nul"))
	env.do(t, "GET", "/test/v1/companies/1/things?filter.query=%00", "").
		expect(t, 422, validation(`["query","filter.query"]`, nulMsg, "string_nul"))
	// A path never holds a control character.
	for _, path := range []string{"/test/v1/companies/1/things/1%00", "/test/v1/companies/1/things/%01", "/test/v1/companies/1%7F/things"} {
		env.do(t, "GET", path, "").expect(t, 404, notFoundBody)
	}
}

func TestBodyMustBeUTF8(t *testing.T) {
	env := newEnv(t)
	env.do(t, "POST", "/test/v1/companies/1/things", "{\"name\":\"a\xffb\"}").
		expect(t, 422, validation(`["body"]`, "Invalid JSON: the body is not valid UTF-8", "json_invalid"))
	// A \u escape of half a UTF-16 pair is no character either (encoding/json
	// would store U+FFFD in its place).
	lone := validation(`["body"]`, "Invalid JSON: an escaped lone UTF-16 surrogate is not a character", "json_invalid")
	for _, body := range []string{`{"name":"\ud800"}`, `{"name":"a\udc00"}`, `{"name":"\ud83dx"}`, `{"name":"\ud83d\u0041"}`,
		`{"meta":{"\uDBFF":1}}`, `{"name":"\ud83d\ude00\ude00"}`, `{"name":"\ud83d"`} {
		env.do(t, "POST", "/test/v1/companies/1/things", body).expect(t, 422, lone)
	}
	for body, name := range map[string]string{
		`{"name":"\ud83d\ude00"}`:   "\U0001F600",
		`{"name":"\\ud800"}`:        `\\ud800`,
		`{"name":"\u00e9\\\u0041"}`: `é\\A`,
	} {
		res := env.do(t, "POST", "/test/v1/companies/1/things", body)
		if res.status != 200 || !strings.Contains(res.body, `"name":"`+name+`"`) {
			t.Errorf("%s: %d %.120s", body, res.status, res.body)
		}
	}
}

// nested is a value nested depth levels deep (counting the top-level
// object of the body as one).
func nested(depth int) string {
	return `{"meta":{"a":` + strings.Repeat("[", depth-2) + strings.Repeat("]", depth-2) + `}}`
}

func TestBodyDepthIsBounded(t *testing.T) {
	env := newEnv(t)
	if res := env.do(t, "POST", "/test/v1/companies/1/things", nested(httpapi.MaxJSONDepth)); res.status != 200 {
		t.Errorf("depth %d: %d %s", httpapi.MaxJSONDepth, res.status, res.body)
	}
	msg := fmt.Sprintf("Value error, JSON nested deeper than %d levels", httpapi.MaxJSONDepth)
	env.do(t, "POST", "/test/v1/companies/1/things", nested(httpapi.MaxJSONDepth+1)).
		expect(t, 422, validation(`["body"]`, msg, "value_error"))
	env.do(t, "POST", "/test/v1/companies/1/things", nested(3000)).
		expect(t, 422, validation(`["body"]`, msg, "value_error"))
	// Brackets inside strings are text, escaped quotes do not end a string.
	if res := env.do(t, "POST", "/test/v1/companies/1/things", `{"name":"\"[[[`+strings.Repeat("{", 100)+`"}`); res.status != 200 {
		t.Errorf("brackets in a string: %d %s", res.status, res.body)
	}
}

const tooLargeBody = `{"error_code":413,"error_name":"PAYLOAD_TOO_LARGE","message":"request body is too large","detail":{"max_bytes":1048576}}`

func TestBodySizeIsBounded(t *testing.T) {
	env := newEnv(t)
	big := func(n int) string { return `{"name":"` + strings.Repeat("x", n-len(`{"name":""}`)) + `"}` }
	if res := env.do(t, "POST", "/test/v1/companies/1/things", big(httpapi.MaxBodyBytes)); res.status != 200 {
		t.Errorf("a body of exactly the limit: %d %.200s", res.status, res.body)
	}
	// Content-Length over the limit: refused before reading.
	env.do(t, "POST", "/test/v1/companies/1/things", big(httpapi.MaxBodyBytes+1)).expect(t, 413, tooLargeBody)
	// Chunked, no Content-Length: refused when the decoder reads past it.
	for _, route := range []struct{ method, path string }{
		{"POST", "/test/v1/companies/1/things"},        // body: "*"
		{"PUT", "/test/v1/companies/1/things/2/tags"},  // body: "tag_ids"
		{"PATCH", "/test/v1/companies/1/things/2?x=1"}, // body: "thing", with a query
	} {
		body := io.MultiReader(strings.NewReader(`{"name":"`), strings.NewReader(strings.Repeat("x", 2<<20)), strings.NewReader(`"}`))
		req, err := http.NewRequest(route.method, env.url+route.path, io.NopCloser(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 413 || string(b) != tooLargeBody || req.ContentLength != 0 {
			t.Errorf("%s %s chunked: %d %s (sent Content-Length %d)", route.method, route.path, res.StatusCode, b, req.ContentLength)
		}
	}
}

// An unclean path is not found: never a redirect, never another resource.
func TestUncleanPathsAreNotFound(t *testing.T) {
	env := newEnv(t)
	for _, path := range []string{
		"/test/v1/companies/1/things/..",
		"/test/v1/companies/1/things/../things",
		"/test/v1/companies/../companies/1/things",
		"/test/v1/companies/1/./things",
		"/test/v1/companies/1/things/.",
		"/test/v1/companies/1/things/%2e%2e",
		"/test/v1/companies/1/things/%2E",
		"/test/v1/companies/1/things/./",
		"/..",
		"/.",
	} {
		res := env.do(t, "GET", path, "")
		res.expect(t, 404, notFoundBody)
		if loc := res.header.Get("Location"); loc != "" {
			t.Errorf("%s: Location %s", path, loc)
		}
	}
	// Dots inside a segment are ordinary characters.
	env.do(t, "GET", "/test/v1/companies/1/things/...", "").
		expect(t, 422, validation(`["path","thing_id"]`, "Input should be a valid integer, unable to parse string as an integer", "int_parsing"))
}

// The API reads JSON bodies whatever Content-Type says; the header is never
// parsed as a form (which failed on a malformed value, and consumed a form
// body before the JSON decoder saw it).
func TestContentTypeIsNotParsedAsForm(t *testing.T) {
	env := newEnv(t)
	for _, ct := range []string{"a/b; c", "application/x-www-form-urlencoded", "multipart/form-data", "text/plain; charset=", ";;;"} {
		env.do(t, "PUT", "/test/v1/companies/1/things/2/tags", `[1,2]`, "Content-Type", ct).expect(t, 200, `[1,2]`)
		res := env.do(t, "PATCH", "/test/v1/companies/1/things/2?dry_run=true", `{"name":"x"}`, "Content-Type", ct)
		if res.status != 200 || !strings.Contains(res.body, `"name":"x (dry run)"`) {
			t.Errorf("Content-Type %q: %d %s", ct, res.status, res.body)
		}
	}
}

// Headers grpc-gateway turns into gRPC metadata or a deadline: never a 5xx.
func TestHeadersGRPCCannotCarry(t *testing.T) {
	env := newEnv(t)
	// An Authorization that is not printable ASCII cannot be a credential:
	// dropped (grpc-go refuses to send it, which was a 500).
	res := env.do(t, "GET", "/test/v1/whoami", "", "Authorization", "Bearer ключ")
	if res.status != 200 || strings.Contains(res.body, "authorization") {
		t.Errorf("non-ASCII Authorization: %d %s", res.status, res.body)
	}
	res = env.do(t, "GET", "/test/v1/whoami", "", "Authorization", "Bearer tok")
	if res.status != 200 || !strings.Contains(res.body, `"authorization":"Bearer tok"`) {
		t.Errorf("ASCII Authorization: %d %s", res.status, res.body)
	}
	timeoutErr := validation(`["header","grpc-timeout"]`, "Value error, invalid grpc-timeout", "value_error")
	for _, v := range []string{"-1S", "-5S", "abc", "1", "123456789S", "1s", "+1S", "1.5S"} {
		env.do(t, "GET", "/test/v1/whoami", "", "Grpc-Timeout", v).expect(t, 422, timeoutErr)
	}
	// The longest valid values overflow time.Duration: no deadline, not an
	// expired one.
	for _, v := range []string{"5S", "2562047H", "2562048H", "99999999H", "99999999M", "99999999n"} {
		if res := env.do(t, "GET", "/test/v1/whoami", "", "Grpc-Timeout", v); res.status != 200 {
			t.Errorf("Grpc-Timeout %s: %d %s", v, res.status, res.body)
		}
	}
}
