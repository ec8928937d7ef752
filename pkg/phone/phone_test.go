package phone_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/phone"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		raw, region, want string
	}{
		{"+79991234567", "RU", "+79991234567"},
		{"+7 (999) 123-45-67", "RU", "+79991234567"},
		{"89991234567", "RU", "+79991234567"},         // national trunk prefix
		{"9991234567", "RU", "+79991234567"},          // no prefix at all
		{"  +7 999 123 45 67 ", "ru", "+79991234567"}, // region in any case
		{"0079991234567", "DE", "+79991234567"},       // 00 international prefix
		{"+4915123456789", "RU", "+4915123456789"},    // a foreign number keeps its country
		{"015123456789", "DE", "+4915123456789"},
		{"+1 415 555 2671", "RU", "+14155552671"},
	} {
		got, err := phone.Normalize(tc.raw, tc.region)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, got, tc.raw)
	}
}

func TestNormalizeRefusesNonNumbers(t *testing.T) {
	for _, raw := range []string{"", "   ", "abc", "+7", "12", "+7999123456789012", "+70000000000", "not a phone 123"} {
		_, err := phone.Normalize(raw, "RU")
		require.ErrorIs(t, err, phone.ErrInvalid, raw)
	}
}

func TestDigits(t *testing.T) {
	require.Equal(t, "79991234567", phone.Digits("+79991234567"))
	require.Equal(t, "79991234567", phone.Digits("+7 (999) 123-45-67"))
	require.Equal(t, "", phone.Digits(""))
}
