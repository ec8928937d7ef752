package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
)

// The seeds run as ordinary tests in `make test`; `go test -fuzz
// FuzzUnmarshal ./internal/httpapi/` explores from them.

// FuzzUnmarshal: whatever the body, Unmarshal answers a *DecodeError located
// in the body or decodes a value; what it decodes is UTF-8 JSON within the
// depth bound, without NUL, and survives Marshal and Unmarshal unchanged.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `""`, `1`, `{`, `{}x`, `{"name":"a"}{}`,
		`{"name":"a\u0000b"}`, "{\"name\":\"a\xffb\"}", `{"name":"\ud800"}`, `{"name":"\ud83d\ude00"}`, `{"name":"\\ud800"}`, `{"n\udc00":1}`,
		`{"count":2147483648}`, `{"count":1.5}`, `{"count":1e2}`, `{"big":-1}`, `{"big":18446744073709551616}`,
		`{"score":1e400}`, `{"ratio":3.5e38}`, `{"delta":-2147483649}`, `{"small":4294967296}`,
		`{"active":"true"}`, `{"blob":"!!"}`, `{"kind":"nope"}`, `{"kind":3}`, `{"scopes":"chats.read"}`,
		`{"owner":[]}`, `{"co_owners":[null]}`, `{"counters":{"a":"1"}}`, `{"labels":{"x":"y"}}`,
		`{"text":"a","media":{}}`, `{"created_at":"2024-13-01T00:00:00Z"}`, `{"ttl":315576000001}`,
		`{"meta":{"a":[[[[{"b":null}]]]]}}`, `{"meta":{"k\u0000":1}}`, `{"extra":[1,"2",{"3":null}]}`,
		`{"limit_override":"1"}`, `{"nickname":null}`, `{"verified":1}`, `{"tag_ids":[1,null]}`,
		`{"title":"t","display_name":"d"}`, `{"previous_kind":"whatsapp"}`,
		fullThingJSON,
		strings.Repeat("[", 40) + strings.Repeat("]", 40),
		`{"name":"` + strings.Repeat(`\"[{`, 20) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var thing gatewaytestv1.Thing
		err := (&Marshaler{}).Unmarshal(data, &thing)
		if err != nil {
			requireBodyError(t, data, err)
			return
		}
		if !utf8.Valid(data) || !json.Valid(data) {
			t.Fatalf("accepted invalid input %q", data)
		}
		if deep, lone := scanJSON(data, MaxJSONDepth); deep || lone {
			t.Fatalf("accepted a body deeper than %d or with a lone surrogate: %q", MaxJSONDepth, data)
		}
		first, err := (&Marshaler{}).Marshal(&thing)
		if err != nil {
			t.Fatalf("Marshal after decoding %q: %v", data, err)
		}
		if bytes.Contains(first, []byte(`\u0000`)) {
			t.Fatalf("a NUL got through: %q -> %s", data, first)
		}
		var again gatewaytestv1.Thing
		if err := (&Marshaler{}).Unmarshal(first, &again); err != nil {
			t.Fatalf("own output %s does not decode: %v", first, err)
		}
		second, err := (&Marshaler{}).Marshal(&again)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the value:\n%s\n%s (%v)", first, second, err)
		}
	})
}

// FuzzUnmarshalFieldBody does the same for a body that is one field of the
// request (body: "tag_ids"): the value is required.
func FuzzUnmarshalFieldBody(f *testing.F) {
	for _, seed := range []string{`[]`, `[1,2]`, `null`, ` `, `{}`, `[1,null]`, `[9223372036854775808]`, `[1.0,2e2]`, `[[1]]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ids []int64
		err := (&Marshaler{}).Unmarshal(data, &ids)
		if err != nil {
			requireBodyError(t, data, err)
			return
		}
		if ids == nil {
			t.Fatalf("%q decoded to no list", data)
		}
	})
}

func requireBodyError(t *testing.T, data []byte, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Unmarshal(%q) = %v, want a *DecodeError", data, err)
	}
	if len(de.Location) == 0 || de.Location[0] != "body" || de.Type == "" || de.Message == "" {
		t.Fatalf("Unmarshal(%q): malformed error %+v", data, de)
	}
	if back, ok := ParseDecodeError(de.Error()); !ok || back.Type != de.Type || back.Message != de.Message {
		t.Fatalf("error text does not parse back: %s", de.Error())
	}
}

// FuzzQueryParser: whatever the query string, Parse answers a *DecodeError
// located in the query or fills the request, never with a NUL or invalid
// UTF-8 in a string.
func FuzzQueryParser(f *testing.F) {
	for _, seed := range []string{
		"", "kinds=whatsapp&kinds=telegram", "kinds=legacy", "kinds[]=telegram", "only_active=TRUE", "only_active=yes",
		"archived=0", "limit=2147483648", "limit=-2147483649", "limit=1.5", "after_id=0x10", "after_id=9223372036854775808",
		"filter.query=a%00b", "filter.query=%ff", "filter.min_count=abc", "filter.window.since=2024-01-01T00:00:00Z",
		"filter.window.since=yesterday", "until=9999-12-31T23:59:59Z", "names=a&names=%00", "ids=1&ids=x",
		"scope=chats.read", "scope=", "min_score=NaN", "min_score=1e400", "max_id=", "max_id=7", "page=4294967296",
		"company_id=7", "unknown=1", "filter=1", "filter.query.x=1", "%zz=1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return // a malformed query string is refused before the parser (see gatewayRequestError)
		}
		var req gatewaytestv1.ListThingsRequest
		if err := (&QueryParser{}).Parse(&req, values, nil); err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || len(de.Location) < 2 || de.Location[0] != "query" || de.Type == "" {
				t.Fatalf("Parse(%q) = %v, want a *DecodeError in the query", raw, err)
			}
			return
		}
		for _, s := range append(req.GetNames(), req.GetFilter().GetQuery()) {
			if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
				t.Fatalf("Parse(%q) let through %q", raw, s)
			}
		}
		if _, err := (&Marshaler{}).Marshal(&req); err != nil {
			t.Fatalf("Marshal after Parse(%q): %v", raw, err)
		}
	})
}

const fullThingJSON = `{"company_id":999,"id":9007199254740993,"name":"Tom <&> \"quoted\"","note":"","count":-2147483648,
"big":18446744073709551615,"score":0.1,"ratio":1.5,"active":true,"blob":"aGVsbG8=","kind":"telegram",
"scopes":["messages.create","chats.read"],"owner":{"user_id":1,"name":"Ann","age":30,"email":null},
"co_owners":[{"user_id":2},{"user_id":3,"email":"c@x.test"}],"counters":{"b":2,"a":-1},
"media":{"url":"https://x.test/a.png","size":10},"created_at":"2024-03-05T10:08:09.123456789+03:00",
"meta":{"z":1,"a":[true,null,"s",{"n":1.25}]},"extra":"text","limit_override":0,"nickname":"tommy",
"verified":false,"ttl":1.5,"tag_ids":[3,1,2],"parent_id":0,"title":"Tommy","labels":{"10":"ten","-1":"minus one"},
"previous_kind":"whatsapp","delta":-7,"small":4294967295}`
