package payments

import "github.com/shopspring/decimal"

func decimalOf(n int64) decimal.Decimal { return decimal.NewFromInt(n) }
