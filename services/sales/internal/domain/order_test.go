package domain

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// TestOrderContentNumbersAreExact: every amount an order may have (at
// most MaxOrderAmount, two decimals) comes out of the message content's
// double as the very same decimal; one digit more and it would not always.
func TestOrderContentNumbersAreExact(t *testing.T) {
	cases := []string{"0.01", "0.07", "0.1", "1990.5", "999999999.99", "1234567890123.45",
		"9999999999999.99", "9999999999999.9", "8888888888888.88", "4503599627370.49"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		cents := rng.Int64N(999999999999999) + 1 // up to MaxOrderAmount in cents
		cases = append(cases, decimal.New(cents, -2).String())
	}
	for _, c := range cases {
		d := decimal.RequireFromString(c)
		require.False(t, d.GreaterThan(MaxOrderAmount))
		got := strconv.FormatFloat(exactNumber(d), 'f', -1, 64)
		require.Equal(t, d.String(), got, "amount %s", c)
	}
	// Past 15 significant digits a double no longer keeps every cent:
	// why MaxOrderAmount is where it is.
	past := decimal.RequireFromString("99999999999999999.99")
	require.NotEqual(t, past.String(), strconv.FormatFloat(exactNumber(past), 'f', -1, 64))
}
