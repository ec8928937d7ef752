package httpapi

import (
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := (&Marshaler{}).Marshal(v)
	if err != nil {
		t.Fatalf("Marshal(%T): %v", v, err)
	}
	return string(b)
}

func TestMarshalIdentityMessages(t *testing.T) {
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		v    any
		want string
	}{
		{
			"company with unset optional",
			&identityv1.Company{Id: 1, Name: "Acme", OwnerId: 9007199254740993, Timezone: "Europe/Moscow", PaymentCurrency: "RUB"},
			`{"id":1,"name":"Acme","owner_id":9007199254740993,"timezone":"Europe/Moscow","payment_currency":"RUB","payments_locked":false,"waba_provider_partner_id":null,"had_connections":false,"is_partner":false}`,
		},
		{
			"company with optional set to its zero value",
			&identityv1.Company{Id: 1, WabaProviderPartnerId: proto.String("")},
			`{"id":1,"name":"","owner_id":0,"timezone":"","payment_currency":"","payments_locked":false,"waba_provider_partner_id":"","had_connections":false,"is_partner":false}`,
		},
		{
			"system role",
			&identityv1.Role{Id: 3, Name: "Admin", SystemType: identityv1.SystemRoleType_SYSTEM_ROLE_TYPE_ADMINISTRATOR, Permissions: []string{"members_view"}},
			`{"id":3,"name":"Admin","system_type":"ADMINISTRATOR","permissions":["members_view"]}`,
		},
		{
			"custom role",
			&identityv1.Role{Id: 4, Name: "Custom"},
			`{"id":4,"name":"Custom","system_type":null,"permissions":[]}`,
		},
		{
			"integration",
			&identityv1.Integration{
				Id: 7, Type: identityv1.IntegrationType_INTEGRATION_TYPE_API, Name: "key", Status: identityv1.IntegrationStatus_INTEGRATION_STATUS_ENABLED,
				Params:    &identityv1.IntegrationParams{Scopes: []string{"connections", "messaging:read"}},
				CreatedAt: timestamppb.New(created),
			},
			`{"id":7,"type":"api","name":"key","status":"enabled","params":{"scopes":["connections","messaging:read"],"api_key":null},"created_at":"2025-01-02T03:04:05.000000Z","updated_at":null}`,
		},
		{
			"integration with the new key",
			&identityv1.IntegrationParams{ApiKey: proto.String("sk_live_1")},
			`{"scopes":[],"api_key":"sk_live_1"}`,
		},
		{
			"members list",
			&identityv1.ListMembersResponse{Count: 1, CompanyId: 2, Members: []*identityv1.Member{{MemberId: 1, UserId: 2, RoleId: 3, DisplayName: "Ann", Login: "ann", Email: "ann@x.test"}}},
			`{"count":1,"company_id":2,"members":[{"member_id":1,"user_id":2,"role_id":3,"display_name":"Ann","login":"ann","email":"ann@x.test"}]}`,
		},
		{
			"empty list",
			&identityv1.ListMembersResponse{},
			`{"count":0,"company_id":0,"members":[]}`,
		},
		{
			"profile",
			&identityv1.UserProfile{UserId: 1, Phone: proto.String("+79991234567")},
			`{"user_id":1,"display_name":"","email":"","phone":"+79991234567","timezone":"","locale":""}`,
		},
		{
			"response_body roles: a bare array",
			[]*identityv1.Role{{Id: 1, SystemType: identityv1.SystemRoleType_SYSTEM_ROLE_TYPE_MANAGER}, {Id: 2}},
			`[{"id":1,"name":"","system_type":"MANAGER","permissions":[]},{"id":2,"name":"","system_type":null,"permissions":[]}]`,
		},
		{"response_body roles: unset", []*identityv1.Role(nil), `[]`},
		{"nil message", (*identityv1.Role)(nil), `null`},
		{
			"response_body types",
			[]*identityv1.IntegrationTypeInfo{{Type: identityv1.IntegrationType_INTEGRATION_TYPE_BITRIX24, Name: "Bitrix24"}},
			`[{"type":"bitrix24","name":"Bitrix24","description":""}]`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := marshal(t, c.v); got != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

func TestMarshalValues(t *testing.T) {
	ts := func(sec int64, nanos int32) *timestamppb.Timestamp {
		return &timestamppb.Timestamp{Seconds: sec, Nanos: nanos}
	}
	st, _ := structpb.NewStruct(map[string]any{"b": []any{1.0, "x", nil, true}, "a": map[string]any{"n": 2.5}})
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"empty is no body", &emptypb.Empty{}, ``},
		{"timestamp micro", ts(1700000000, 123456789), `"2023-11-14T22:13:20.123456Z"`},
		{"timestamp zero fraction", ts(0, 0), `"1970-01-01T00:00:00.000000Z"`},
		{"timestamp before epoch", ts(-1, 500000000), `"1969-12-31T23:59:59.500000Z"`},
		{"duration whole", durationpb.New(90 * time.Second), `90`},
		{"duration fraction", durationpb.New(1500 * time.Millisecond), `1.5`},
		{"duration negative", durationpb.New(-250 * time.Millisecond), `-0.25`},
		{"duration nanos", durationpb.New(time.Nanosecond), `0.000000001`},
		{"int64 wrapper", wrapperspb.Int64(math.MaxInt64), `9223372036854775807`},
		{"uint64 wrapper", wrapperspb.UInt64(math.MaxUint64), `18446744073709551615`},
		{"string wrapper", wrapperspb.String("x"), `"x"`},
		{"bool wrapper", wrapperspb.Bool(false), `false`},
		{"bytes wrapper", wrapperspb.Bytes([]byte{0xff, 0x00}), `"/wA="`},
		{"double wrapper", wrapperspb.Double(1e21), `1e+21`},
		{"small double", wrapperspb.Double(1e-7), `1e-7`},
		{"float wrapper", wrapperspb.Float(0.1), `0.1`},
		{"NaN is null", wrapperspb.Double(math.NaN()), `null`},
		{"infinity is null", wrapperspb.Double(math.Inf(-1)), `null`},
		{"struct", st, `{"a":{"n":2.5},"b":[1,"x",null,true]}`},
		{"value null", structpb.NewNullValue(), `null`},
		{"value unset", &structpb.Value{}, `null`},
		{"list value", &structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("a")}}, `["a"]`},
		{"field mask", &fieldmaskpb.FieldMask{Paths: []string{"name", "params.scopes"}}, `"name,params.scopes"`},
		{"enum value", gatewaytestv1.Scope_SCOPE_MESSAGES_CREATE, `"messages.create"`},
		{"enum without json", gatewaytestv1.ThingKind_THING_KIND_LEGACY, `null`},
		{"unknown enum number", gatewaytestv1.ThingKind(42), `null`},
		{"enum slice", []gatewaytestv1.Scope{gatewaytestv1.Scope_SCOPE_CHATS_READ, 0}, `["chats.read",null]`},
		{"int64 slice", []int64{-1, math.MaxInt64}, `[-1,9223372036854775807]`},
		{"string slice", []string{"a<b", "c"}, `["a<b","c"]`},
		{"nil", nil, `null`},
		{"plain map", map[string]any{"z": 1, "a": []int{1}, "m": &identityv1.Role{Id: 1}}, `{"a":[1],"m":{"id":1,"name":"","system_type":null,"permissions":[]},"z":1}`},
		{"plain struct", struct {
			A int    `json:"a"`
			B string `json:"b"`
		}{1, "<&>"}, `{"a":1,"b":"<&>"}`},
		{"bytes", []byte("hi"), `"aGk="`},
		{"nested empty", &gatewaytestv1.ListThingsResponse{}, `{"request":null,"things":[]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := marshal(t, c.v); got != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

func TestMarshalStrings(t *testing.T) {
	cases := map[string]string{
		"plain":            `"plain"`,
		`quote " back \ `:  `"quote \" back \\ "`,
		"<html> & co":      `"<html> & co"`,
		"line\nfeed\ttab":  `"line\nfeed\ttab"`,
		"\x00\x1f\r":       `"\u0000\u001f\r"`,
		"bad \xff utf8":    `"bad \ufffd utf8"`,
		"sep \u2028\u2029": `"sep \u2028\u2029"`,
		"юникод ✓":         `"юникод ✓"`,
	}
	for in, want := range cases {
		if got := marshal(t, &gatewaytestv1.Owner{Name: in}); !strings.Contains(got, `"name":`+want+`,`) {
			t.Errorf("%q: got %s, want name %s", in, got, want)
		}
	}
}

func TestMarshalAnyIsAnError(t *testing.T) {
	// Any has no JSON form in this API: marshalling it fails (a 500) rather
	// than inventing one.
	a, err := anypb.New(&identityv1.Role{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Marshaler{}).Marshal(a); err == nil {
		t.Error("Marshal(Any) succeeded")
	}
}

func TestMarshalerContentTypeAndEncoder(t *testing.T) {
	m := &Marshaler{}
	if ct := m.ContentType(&identityv1.Role{}); ct != "application/json" {
		t.Errorf("ContentType = %q", ct)
	}
	var sb strings.Builder
	if err := m.NewEncoder(&sb).Encode(&identityv1.Role{Id: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := sb.String(), `{"id":1,"name":"","system_type":null,"permissions":[]}`; got != want {
		t.Errorf("Encode: %s, want %s", got, want)
	}
}

func TestDefaultJSONName(t *testing.T) {
	for in, want := range map[string]string{"display_name": "displayName", "id": "id", "a_b_c": "aBC", "x2_y": "x2Y", "already": "already"} {
		if got := defaultJSONName(in); got != want {
			t.Errorf("defaultJSONName(%q) = %q, want %q", in, got, want)
		}
	}
	fields := (&gatewaytestv1.Thing{}).ProtoReflect().Descriptor().Fields()
	if got := fieldName(fields.ByName("display_name")); got != "title" {
		t.Errorf("explicit json_name: %q", got)
	}
	if got := fieldName(fields.ByName("company_id")); got != "company_id" {
		t.Errorf("default json_name: %q", got)
	}
}
