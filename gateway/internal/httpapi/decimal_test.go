package httpapi

import "testing"

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
