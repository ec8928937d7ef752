package app

import "github.com/shopspring/decimal"

// Percent is a commission as the operator sends it.
type Percent struct{ decimal.Decimal }

var hundred = decimal.NewFromInt(100)

// Valid: 0..100 with at most two decimals.
func (p Percent) Valid() bool {
	return !p.IsNegative() && p.LessThanOrEqual(hundred) && p.Equal(p.Round(2))
}
