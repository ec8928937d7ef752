package httpapi

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "switchboard.dev/proto/switchboard/gatewaytest/v1"
	_ "switchboard.dev/proto/switchboard/identity/v1"
	_ "switchboard.dev/proto/switchboard/partners/v1"
)

func TestPlainDecimal(t *testing.T) {
	for in, want := range map[string]string{
		"90": "90", "90.5": "90.5", "90.50": "90.5", "0.0001": "0.0001", "-1.25": "-1.25",
		"1.5e2": "150", "25e-3": "0.025", "1E0": "1", "0": "0", "-0": "0", "0.000": "0",
		"123.456e-1": "12.3456", "7e3": "7000",
	} {
		got, ok := plainDecimal(in)
		if !ok || got != want {
			t.Errorf("plainDecimal(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if !decimalLiteral(got) {
			t.Errorf("plainDecimal(%q) = %q, which decimalLiteral refuses", in, got)
		}
	}
	if _, ok := plainDecimal("1e1001"); ok {
		t.Error("an exponent past 1000 is taken")
	}
	for _, bad := range []string{"", "-", "1.", ".5", "01", "1e2", "1,5", "+1", "NaN"} {
		if decimalLiteral(bad) {
			t.Errorf("decimalLiteral(%q) = true", bad)
		}
	}
}

func TestNullableValue(t *testing.T) {
	// gatewaytest's `extra` is an optional google.protobuf.Value; identity's
	// member role a required one.
	for name, want := range map[protoreflect.FullName]bool{
		"switchboard.gatewaytest.v1.Thing.extra":                       true,
		"switchboard.identity.v1.CreateMemberRequest.role":             false,
		"switchboard.partners.v1.UpdatePartnerRequest.clients_per_day": true,
	} {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := nullableValue(d.(protoreflect.FieldDescriptor)); got != want {
			t.Errorf("nullableValue(%s) = %v, want %v", name, got, want)
		}
	}
}
