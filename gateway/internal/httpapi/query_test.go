package httpapi

import (
	"errors"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
)

func parseQuery(t *testing.T, msg proto.Message, query string, filter *utilities.DoubleArray) error {
	t.Helper()
	values, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	return (&QueryParser{}).Parse(msg, values, filter)
}

func TestQueryParserFills(t *testing.T) {
	var req gatewaytestv1.ListThingsRequest
	filter := utilities.NewDoubleArray([][]string{{"company_id"}})
	q := "company_id=9&kinds=telegram&kinds[]=whatsapp&only_active=TRUE&archived=false&limit=-5&after_id=1" +
		"&filter.query=q&filter.min_count=0&filter.window.since=2024-01-02T03:04:05Z&until=2024-01-02T03:04:05.000001%2B01:00" +
		"&names=x&names=&ids=1&ids=2&scope=chats.read&min_score=2.5&max_id=-1&page=4294967295" +
		"&unknown=1&filter.unknown=2&filter=3&filter.window=4&names.x=5"
	if err := parseQuery(t, &req, q, filter); err != nil {
		t.Fatal(err)
	}
	want := &gatewaytestv1.ListThingsRequest{
		Kinds:      []gatewaytestv1.ThingKind{gatewaytestv1.ThingKind_THING_KIND_TELEGRAM, gatewaytestv1.ThingKind_THING_KIND_WHATSAPP},
		OnlyActive: true,
		Archived:   proto.Bool(false),
		Limit:      proto.Int32(-5),
		AfterId:    1,
		Filter: &gatewaytestv1.ListFilter{
			Query:    "q",
			MinCount: proto.Int32(0),
			Window:   &gatewaytestv1.ListWindow{Since: timestamppb.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))},
		},
		Until:    timestamppb.New(time.Date(2024, 1, 2, 2, 4, 5, 1000, time.UTC)),
		Names:    []string{"x", ""},
		Ids:      []int64{1, 2},
		Scope:    gatewaytestv1.Scope_SCOPE_CHATS_READ,
		MinScore: 2.5,
		MaxId:    wrapperspb.Int64(-1),
		Page:     4294967295,
	}
	if !proto.Equal(&req, want) {
		t.Errorf("got  %v\nwant %v", &req, want)
	}
}

func TestQueryParserLastValueWinsAndJSONName(t *testing.T) {
	var th gatewaytestv1.Thing
	if err := parseQuery(t, &th, "name=a&name=b&title=T&owner.age=3&counters=1&co_owners.user_id=1&text=x", nil); err != nil {
		t.Fatal(err)
	}
	want := &gatewaytestv1.Thing{Name: "b", DisplayName: "T", Owner: &gatewaytestv1.Owner{Age: 3}, Content: &gatewaytestv1.Thing_Text{Text: "x"}}
	if !proto.Equal(&th, want) {
		t.Errorf("got %v, want %v", &th, want)
	}
}

func TestQueryParserErrors(t *testing.T) {
	for _, c := range []struct {
		query string
		loc   []any
		typ   string
		msg   string
	}{
		{"limit=1&only_active=2", []any{"query", "only_active"}, "bool_parsing", "Input should be a valid boolean, unable to interpret input"},
		{"kinds[]=x", []any{"query", "kinds", 0}, "enum", "Input should be 'whatsapp' or 'telegram'"},
		{"page=4294967296", []any{"query", "page"}, "less_than_equal", "Input should be less than or equal to 4294967295"},
		{"limit=-2147483649", []any{"query", "limit"}, "greater_than_equal", "Input should be greater than or equal to -2147483648"},
		{"limit=%2B", []any{"query", "limit"}, "int_parsing", "Input should be a valid integer, unable to parse string as an integer"},
		{"after_id=1_000", []any{"query", "after_id"}, "int_parsing", "Input should be a valid integer, unable to parse string as an integer"},
		{"min_score=0x10", []any{"query", "min_score"}, "float_parsing", "Input should be a valid number, unable to parse string as a number"},
		{"min_score=Inf", []any{"query", "min_score"}, "float_parsing", "Input should be a valid number, unable to parse string as a number"},
		{"min_score=1e999", []any{"query", "min_score"}, "less_than_equal", "Input should be less than or equal to 1.7976931348623157e+308"},
		{"filter.window.since=2024-01-02", []any{"query", "filter.window.since"}, "datetime_parsing", "Input should be a valid datetime in RFC 3339 format, like 2006-01-02T15:04:05Z"},
		{"max_id=x", []any{"query", "max_id"}, "int_parsing", "Input should be a valid integer, unable to parse string as an integer"},
		{"names=%FF", []any{"query", "names", 0}, "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string"},
	} {
		var req gatewaytestv1.ListThingsRequest
		err := parseQuery(t, &req, c.query, nil)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: %v, want a DecodeError", c.query, err)
			continue
		}
		if !reflect.DeepEqual(de.Location, c.loc) || de.Type != c.typ || de.Message != c.msg {
			t.Errorf("%s: got %v %s %q, want %v %s %q", c.query, de.Location, de.Type, de.Message, c.loc, c.typ, c.msg)
		}
	}

	var th gatewaytestv1.Thing
	err := parseQuery(t, &th, "text=a&media.url=b", nil)
	var de *DecodeError
	if !errors.As(err, &de) || de.Type != "value_error" {
		t.Errorf("oneof twice: %v", err)
	}
}

func TestQueryParserSkipsPathBoundFields(t *testing.T) {
	var req gatewaytestv1.UpdateThingRequest
	req.CompanyId, req.ThingId = 1, 2
	filter := utilities.NewDoubleArray([][]string{{"thing"}, {"company_id"}, {"thing_id"}})
	if err := parseQuery(t, &req, "company_id=x&thing_id=7&thing.name=n&dry_run=1", filter); err != nil {
		t.Fatal(err)
	}
	want := &gatewaytestv1.UpdateThingRequest{CompanyId: 1, ThingId: 2, DryRun: true}
	if !proto.Equal(&req, want) {
		t.Errorf("got %v, want %v", &req, want)
	}
}
