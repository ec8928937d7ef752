// Package domain is the sales model: products with their prices, catalogs
// of them and shops, and the rules on their fields that need no database.
package domain

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
)

// ErrNotFound is a product, catalog or shop that is not the company's.
var ErrNotFound = errors.New("not found")

// Product is a company's product.
type Product struct {
	ID                int64
	CompanyID         int64
	Name              string
	Description       string
	PaymentObjectType string
	Category          *string
	VAT               string
	SKU               *string
	Images            []string
	Prices            []Price
	CatalogIDs        []int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// PriceIn is the product's price in currency, if it has one.
func (p Product) PriceIn(currency string) (decimal.Decimal, bool) {
	for _, pr := range p.Prices {
		if pr.Currency == currency {
			return pr.Price, true
		}
	}
	return decimal.Decimal{}, false
}

// Price is a product's price in one currency.
type Price struct {
	Currency string
	Price    decimal.Decimal
}

// Catalog is a company's catalog.
type Catalog struct {
	ID            int64
	CompanyID     int64
	Name          string
	Currency      string
	ProductsCount int64
}

// Shop joins a bot connection with a catalog.
type Shop struct {
	ID                   int64
	CompanyID            int64
	Name                 string
	CatalogID            int64
	ConnectionID         int64
	ConnectionType       string
	BotUsername          string
	UseDeviceColorScheme bool
}

// Connection types a shop takes.
const (
	TelegramBot = "telegram_bot"
	MaxBot      = "max_bot"
)

// Link opens the bot's main mini app on the shop.
func (s Shop) Link() string {
	host := "https://t.me/"
	if s.ConnectionType == MaxBot {
		host = "https://max.ru/"
	}
	return fmt.Sprintf("%s%s?startapp=shop_%d", host, s.BotUsername, s.ID)
}

// WebAppURL is the storefront page under the platform's public base URL.
func (s Shop) WebAppURL(publicURL string) string {
	return fmt.Sprintf("%s/storefront/v1/shops/%d", strings.TrimRight(publicURL, "/"), s.ID)
}

// Defaults of a new product.
const (
	DefaultPaymentObjectType = "commodity"
	DefaultVAT               = "none"
)

// Price bounds: more than 0, at most two decimals, at most MaxPrice.
var MaxPrice = decimal.RequireFromString("999999999.99")

// Field bounds.
const (
	MaxCategoryLen = 128
	MaxSKULen      = 64
)

// CheckName is the rule on names the protos cannot say: not only
// whitespace (their length is the protos').
func CheckName(name string, at []any) error {
	if strings.TrimFunc(name, unicode.IsSpace) == "" {
		return apierr.Field(at, "value_error", "Value error, the name must not be only whitespace")
	}
	return nil
}

// CheckLen is a string's length rule in the API's words.
func CheckLen(s string, minLen, maxLen int, at []any) error {
	n := utf8.RuneCountInString(s)
	switch {
	case n < minLen:
		return apierr.Field(at, "string_too_short", "String should have at least %d character%s", minLen, plural(minLen))
	case n > maxLen:
		return apierr.Field(at, "string_too_long", "String should have at most %d character%s", maxLen, plural(maxLen))
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ParsePrice checks a price literal: a number above 0 with at most two
// decimals, at most MaxPrice.
func ParsePrice(lit string, at []any) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(lit)
	if err != nil {
		return d, apierr.Field(at, "float_parsing", "Input should be a valid number")
	}
	switch {
	case !d.IsPositive():
		return d, apierr.Field(at, "greater_than", "Input should be greater than 0")
	case !d.Equal(d.Round(2)):
		return d, apierr.Field(at, "decimal_max_places", "Decimal input should have no more than 2 decimal places")
	case d.GreaterThan(MaxPrice):
		return d, apierr.Field(at, "less_than_equal", "Input should be less than or equal to 999999999.99")
	}
	return d, nil
}

// CheckCurrency is a currency of the configured list, exact case.
func CheckCurrency(currency string, allowed []string, at []any) error {
	for _, c := range allowed {
		if c == currency {
			return nil
		}
	}
	return apierr.Field(at, "enum", "Input should be %s", quoteList(allowed))
}

// quoteList writes 'a', 'b' or 'c', as the API's enum errors do.
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// CheckPrices is the list rule beyond each price: one per currency.
func CheckPrices(prices []Price, at func(i int) []any) error {
	seen := map[string]bool{}
	for i, p := range prices {
		if seen[p.Currency] {
			return apierr.Field(append(at(i), "currency"), "value_error", "Value error, %s is given twice: one price per currency", p.Currency)
		}
		seen[p.Currency] = true
	}
	return nil
}

// Members is a product_ids list without repeats, in the order first given.
func Members(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
