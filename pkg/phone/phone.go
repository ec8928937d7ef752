// Package phone normalises phone numbers the one way the platform stores
// them: E.164 with the leading + (contacts, telegram params), or its
// digits alone where the spec wants them (whatsapp params, chat phones).
package phone

import (
	"errors"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// ErrInvalid is a phone that is not a valid number of any region.
var ErrInvalid = errors.New("not a valid phone number")

// Normalize parses raw as a phone number and answers it in E.164
// (+79991234567). A number written without a country code (8 999 123-45-67)
// is read as a number of defaultRegion (an ISO 3166 code such as RU).
// Numbers that cannot be dialled anywhere, by their length or their ranges,
// are ErrInvalid: a messenger would refuse them anyway, and storing them
// would make two spellings of garbage look like different people.
func Normalize(raw, defaultRegion string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", ErrInvalid
	}
	// The library reads "00" international prefixes only for regions that
	// use them; accept the common spelling everywhere.
	if strings.HasPrefix(raw, "00") {
		raw = "+" + raw[2:]
	}
	num, err := phonenumbers.Parse(raw, strings.ToUpper(defaultRegion))
	if err != nil {
		return "", ErrInvalid
	}
	if !phonenumbers.IsValidNumber(num) {
		return "", ErrInvalid
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}

// Digits answers the digits of a phone alone (79991234567 for
// +79991234567): the spelling of whatsapp params and chat phones.
func Digits(e164 string) string {
	var b strings.Builder
	b.Grow(len(e164))
	for _, r := range e164 {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
