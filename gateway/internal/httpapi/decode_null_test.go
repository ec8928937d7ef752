package httpapi

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
)

// TestNullRefused: in a request with the null_refused option a JSON null
// is the field's type error, except in an optional google.protobuf.Value,
// which keeps the null (told apart from a key left out); elsewhere null is
// still a key left out.
func TestNullRefused(t *testing.T) {
	cases := []struct {
		body string
		loc  []any
		typ  string
	}{
		{`{"name": null}`, []any{"body", "name"}, "string_type"},
		{`{"description": null}`, []any{"body", "description"}, "string_type"},
		{`{"payment_object_type": null}`, []any{"body", "payment_object_type"}, "string_type"},
		{`{"images": null}`, []any{"body", "images"}, "list_type"},
		{`{"prices": null}`, []any{"body", "prices"}, "list_type"},
		{`{"prices": [{"currency": "RUB", "price": null}]}`, []any{"body", "prices", 0, "price"}, "float_type"},
		{`{"prices": [{"currency": null, "price": 1}]}`, []any{"body", "prices", 0, "currency"}, "string_type"},
	}
	for _, c := range cases {
		de := decodeErr(t, c.body, new(salesv1.CreateProductRequest))
		if de.Type != c.typ || !reflect.DeepEqual(de.Location, c.loc) {
			t.Errorf("%s: %s at %v, want %s at %v", c.body, de.Type, de.Location, c.typ, c.loc)
		}
	}
	if de := decodeErr(t, `{"images": null}`, new(salesv1.UpdateProductRequest)); de.Type != "list_type" || !reflect.DeepEqual(de.Location, []any{"body", "images"}) {
		t.Errorf("PATCH images null: %+v", de)
	}
	if de := decodeErr(t, `{"use_device_color_scheme": null}`, new(salesv1.UpdateShopRequest)); de.Type != "bool_type" {
		t.Errorf("PATCH use_device_color_scheme null: %+v", de)
	}

	var req salesv1.UpdateProductRequest
	unmarshal(t, `{"category": null, "name": "x"}`, &req)
	if _, isNull := req.GetCategory().GetKind().(*structpb.Value_NullValue); !isNull || req.Sku != nil || req.GetName() != "x" {
		t.Errorf("category null kept, sku left out: %v", &req)
	}
	var shop salesv1.UpdateShopRequest
	if de := decodeErr(t, `{"connection_id": null}`, &shop); de.Type != "int_type" {
		t.Errorf("connection_id null: %+v", de)
	}
}
