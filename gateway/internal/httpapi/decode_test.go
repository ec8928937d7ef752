package httpapi

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

func unmarshal(t *testing.T, data string, v any) {
	t.Helper()
	if err := (&Marshaler{}).Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("Unmarshal(%s, %T): %v", data, v, err)
	}
}

func decodeErr(t *testing.T, data string, v any) *DecodeError {
	t.Helper()
	err := (&Marshaler{}).Unmarshal([]byte(data), v)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Unmarshal(%s, %T) = %v, want a *DecodeError", data, v, err)
	}
	return de
}

func TestUnmarshalIdentityRequest(t *testing.T) {
	var req identityv1.UpdateIntegrationRequest
	unmarshal(t, `{"name":"renamed","params":{"reset_api_key":true},"company_id":5,"ignored":[1,2]}`, &req)
	want := &identityv1.UpdateIntegrationRequest{CompanyId: 5, Name: proto.String("renamed"), Params: &identityv1.UpdateIntegrationParams{ResetApiKey: true}}
	if !proto.Equal(&req, want) {
		t.Errorf("got %v, want %v", &req, want)
	}
	// Round trip through the marshaler.
	b, err := (&Marshaler{}).Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var back identityv1.UpdateIntegrationRequest
	unmarshal(t, string(b), &back)
	if !proto.Equal(&back, want) {
		t.Errorf("round trip: got %v from %s", &back, b)
	}
}

func TestUnmarshalWellKnownTypes(t *testing.T) {
	var th gatewaytestv1.Thing
	unmarshal(t, `{
		"created_at": "2024-01-02T03:04:05.123456789+03:00",
		"ttl": -0.25,
		"meta": {"a": [1, "x", null, {"b": false}]},
		"extra": 2.5,
		"limit_override": 0,
		"nickname": "",
		"verified": true,
		"blob": "aGk"
	}`, &th)
	meta, _ := structpb.NewStruct(map[string]any{"a": []any{1.0, "x", nil, map[string]any{"b": false}}})
	want := &gatewaytestv1.Thing{
		CreatedAt:     timestamppb.New(time.Date(2024, 1, 2, 0, 4, 5, 123456789, time.UTC)),
		Ttl:           durationpb.New(-250 * time.Millisecond),
		Meta:          meta,
		Extra:         structpb.NewNumberValue(2.5),
		LimitOverride: wrapperspb.Int64(0),
		Nickname:      wrapperspb.String(""),
		Verified:      wrapperspb.Bool(true),
		Blob:          []byte("hi"),
	}
	if !proto.Equal(&th, want) {
		t.Errorf("got %v\nwant %v", &th, want)
	}

	for in, want := range map[string]*durationpb.Duration{
		`1.5`:          {Seconds: 1, Nanos: 500000000},
		`1e3`:          {Seconds: 1000},
		`0.0000000019`: {Nanos: 1},
		`-2`:           {Seconds: -2},
	} {
		var d durationpb.Duration
		unmarshal(t, in, &d)
		if !proto.Equal(&d, want) {
			t.Errorf("duration %s: got %v, want %v", in, &d, want)
		}
	}
	if de := decodeErr(t, `315576000001`, &durationpb.Duration{}); de.Type != "less_than_equal" {
		t.Errorf("duration range: %+v", de)
	}

	var v structpb.Value
	unmarshal(t, `null`, &v) // null leaves the message alone
	if v.GetKind() != nil {
		t.Errorf("null value: %v", &v)
	}
	if de := decodeErr(t, `{"since":"0000-12-31T23:00:00Z"}`, &gatewaytestv1.ListWindow{}); de.Type != "datetime_parsing" || !reflect.DeepEqual(de.Location, []any{"body", "since"}) {
		t.Errorf("year 0: %+v", de)
	}
}

func TestUnmarshalGoTargets(t *testing.T) {
	// What grpc-gateway passes for body: "<field>".
	var ids []int64
	unmarshal(t, `[1, 2, 9223372036854775807]`, &ids)
	if !reflect.DeepEqual(ids, []int64{1, 2, 9223372036854775807}) {
		t.Errorf("ids: %v", ids)
	}

	var thing *gatewaytestv1.Thing
	unmarshal(t, `{"name":"x","kind":"whatsapp"}`, &thing)
	if thing.GetName() != "x" || thing.GetKind() != gatewaytestv1.ThingKind_THING_KIND_WHATSAPP {
		t.Errorf("thing: %v", thing)
	}
	// A body that is one field of the request is that field's value: null
	// is a missing value, not "no change".
	var nilThing *gatewaytestv1.Thing
	if de := decodeErr(t, `null`, &nilThing); de.Type != "missing" || !reflect.DeepEqual(de.Location, []any{"body"}) || nilThing != nil {
		t.Errorf("null field body: %+v, %v", de, nilThing)
	}
	var nullIDs []int64
	if de := decodeErr(t, ` null `, &nullIDs); de.Type != "missing" || nullIDs != nil {
		t.Errorf("null list body: %+v, %v", de, nullIDs)
	}

	var scopes []gatewaytestv1.Scope
	unmarshal(t, `["chats.read","messages.create"]`, &scopes)
	if !reflect.DeepEqual(scopes, []gatewaytestv1.Scope{gatewaytestv1.Scope_SCOPE_CHATS_READ, gatewaytestv1.Scope_SCOPE_MESSAGES_CREATE}) {
		t.Errorf("scopes: %v", scopes)
	}

	var owners []*gatewaytestv1.Owner
	unmarshal(t, `[{"user_id":1},{"name":"b"}]`, &owners)
	if len(owners) != 2 || owners[0].GetUserId() != 1 || owners[1].GetName() != "b" {
		t.Errorf("owners: %v", owners)
	}

	var counters map[string]int64
	unmarshal(t, `{"a":1,"b":-2}`, &counters)
	if !reflect.DeepEqual(counters, map[string]int64{"a": 1, "b": -2}) {
		t.Errorf("counters: %v", counters)
	}
	var labels map[int64]string
	unmarshal(t, `{"-1":"x"}`, &labels)
	if !reflect.DeepEqual(labels, map[int64]string{-1: "x"}) {
		t.Errorf("labels: %v", labels)
	}

	var s string
	unmarshal(t, `"text"`, &s)
	var opt *string
	unmarshal(t, `"opt"`, &opt)
	var kind gatewaytestv1.ThingKind
	unmarshal(t, `"telegram"`, &kind)
	var blob []byte
	unmarshal(t, `"aGk="`, &blob)
	var small uint32
	unmarshal(t, `4294967295`, &small)
	var f float32
	unmarshal(t, `0.5`, &f)
	if s != "text" || opt == nil || *opt != "opt" || kind != gatewaytestv1.ThingKind_THING_KIND_TELEGRAM || string(blob) != "hi" || small != 4294967295 || f != 0.5 {
		t.Errorf("scalars: %q %v %v %q %d %v", s, opt, kind, blob, small, f)
	}

	for _, c := range []struct {
		data string
		v    any
		loc  []any
		typ  string
	}{
		{`[1, "2"]`, new([]int64), []any{"body", 1}, "int_type"},
		{`{"a":[1]}`, new([]int64), []any{"body"}, "list_type"},
		{`["chats.write"]`, new([]gatewaytestv1.Scope), []any{"body", 0}, "enum"},
		{`[{"user_id":"1"}]`, new([]*gatewaytestv1.Owner), []any{"body", 0, "user_id"}, "int_type"},
		{`[null]`, new([]*gatewaytestv1.Owner), []any{"body", 0}, "dict_type"},
		{`{"x":"y"}`, new(map[int64]string), []any{"body", "x"}, "int_parsing"},
		{`{"x":1.5}`, new(map[string]int64), []any{"body", "x"}, "int_from_float"},
		{`-1`, new(uint32), []any{"body"}, "greater_than_equal"},
		{`4294967296`, new(uint32), []any{"body"}, "less_than_equal"},
		{`1`, new(string), []any{"body"}, "string_type"},
		{`"x"`, new(*gatewaytestv1.Thing), []any{"body"}, "dict_type"},
	} {
		de := decodeErr(t, c.data, c.v)
		if !reflect.DeepEqual(de.Location, c.loc) || de.Type != c.typ {
			t.Errorf("%s into %T: got %v %s (%s), want %v %s", c.data, c.v, de.Location, de.Type, de.Message, c.loc, c.typ)
		}
	}

	// Programming errors, not client errors.
	for _, v := range []any{nil, ids, new(chan int), new(struct{}), (*gatewaytestv1.Thing)(nil)} {
		err := (&Marshaler{}).Unmarshal([]byte(`{}`), v)
		var de *DecodeError
		if err == nil || errors.As(err, &de) {
			t.Errorf("Unmarshal into %T: %v, want a non-DecodeError", v, err)
		}
	}
}

func TestUnmarshalNumbers(t *testing.T) {
	for _, c := range []struct {
		data string
		want int64
		typ  string
	}{
		{`0`, 0, ""}, {`-0`, 0, ""}, {`1.0`, 1, ""}, {`1e2`, 100, ""}, {`1E+2`, 100, ""}, {`12.5e1`, 125, ""},
		{`1000e-3`, 1, ""}, {`-9223372036854775808`, -9223372036854775808, ""}, {`0.0`, 0, ""},
		{`1.5`, 0, "int_from_float"}, {`1e-1`, 0, "int_from_float"}, {`1e-99999999999`, 0, "int_from_float"},
		{`9223372036854775808`, 0, "less_than_equal"}, {`-9223372036854775809`, 0, "greater_than_equal"},
		{`1e19`, 0, "less_than_equal"}, {`-1e400`, 0, "greater_than_equal"}, {`"1"`, 0, "int_type"}, {`true`, 0, "int_type"},
	} {
		var n int64
		err := (&Marshaler{}).Unmarshal([]byte(c.data), &n)
		if c.typ == "" {
			if err != nil || n != c.want {
				t.Errorf("%s: got %d, %v; want %d", c.data, n, err, c.want)
			}
			continue
		}
		var de *DecodeError
		if !errors.As(err, &de) || de.Type != c.typ {
			t.Errorf("%s: got %v, want %s", c.data, err, c.typ)
		}
	}
	var u uint64
	unmarshal(t, `18446744073709551615`, &u)
	if u != 18446744073709551615 {
		t.Errorf("uint64 max: %d", u)
	}
	unmarshal(t, `-0`, &u)
}

func TestDecoder(t *testing.T) {
	m := &Marshaler{}
	var th gatewaytestv1.Thing
	dec := m.NewDecoder(strings.NewReader(" \n\t"))
	if err := dec.Decode(&th); !errors.Is(err, io.EOF) {
		t.Errorf("blank body: %v, want io.EOF", err)
	}
	dec = m.NewDecoder(strings.NewReader(`{"name":"a"}`))
	if err := dec.Decode(&th); err != nil || th.GetName() != "a" {
		t.Errorf("first Decode: %v %v", err, &th)
	}
	if err := dec.Decode(&th); !errors.Is(err, io.EOF) {
		t.Errorf("second Decode: %v, want io.EOF", err)
	}
	de := decodeErr(t, ``, &th)
	if de.Type != "json_invalid" {
		t.Errorf("empty Unmarshal: %+v", de)
	}
}

func TestDecodeErrorText(t *testing.T) {
	de := &DecodeError{Location: []any{"body", "co_owners", 1, "name"}, Message: `Input "x" <y>`, Type: "string_type"}
	text := de.Error()
	if !strings.HasPrefix(text, decodeErrorPrefix) {
		t.Fatalf("text: %s", text)
	}
	// What the error handler sees: the text inside an InvalidArgument status.
	st := status.Convert(status.Errorf(codes.InvalidArgument, "%v", de))
	back, ok := ParseDecodeError(st.Message())
	if !ok {
		t.Fatalf("ParseDecodeError(%q) failed", st.Message())
	}
	b1, _ := appendStdJSON(nil, de.FieldError())
	b2, _ := appendStdJSON(nil, back.FieldError())
	if string(b1) != string(b2) {
		t.Errorf("round trip: %s != %s", b1, b2)
	}
	for _, bad := range []string{"", "type mismatch", decodeErrorPrefix + "{", decodeErrorPrefix + `{"location":["body"]}`} {
		if _, ok := ParseDecodeError(bad); ok {
			t.Errorf("ParseDecodeError(%q) succeeded", bad)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x\u0026y\u003cz\u003e"}`: `{"a":"x&y<z>"}`,
		`{"a":"\\u0026"}`:               `{"a":"\\u0026"}`,
		`{"a":"\u2028\n\"q\""}`:         `{"a":"\u2028\n\"q\""}`,
		`{"a":1}`:                       `{"a":1}`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
