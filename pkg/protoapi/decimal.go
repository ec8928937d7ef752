package protoapi

import (
	"github.com/shopspring/decimal"

	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// Decimal is d as the API's exact decimal (a JSON number with its digits).
func Decimal(d decimal.Decimal) *apiv1.Decimal { return &apiv1.Decimal{Value: d.String()} }
