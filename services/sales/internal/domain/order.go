package domain

import (
	"github.com/shopspring/decimal"
)

// Order is an order placed from a storefront.
type Order struct {
	ID        string
	ShopID    int64
	CompanyID int64
	CatalogID int64
	// LaunchKey is the launch's query_id (or "hash:" + its hash): one
	// order per launch.
	LaunchKey string
	BodyHash  string
	Currency  string
	Amount    decimal.Decimal
	Items     []OrderLine
	Comment   string
}

// OrderLine is one product of an order at the catalog's price.
type OrderLine struct {
	ProductID int64           `json:"product_id"`
	Name      string          `json:"name"`
	Price     decimal.Decimal `json:"price"`
	Quantity  int32           `json:"quantity"`
}

// MaxOrderAmount is the largest amount an order may have. A message's
// content is a protobuf Struct, whose numbers are doubles: a decimal of
// at most 15 significant digits survives the trip to a double and back
// exactly (the shortest representation of the double is the decimal), so
// 13 integer digits and 2 decimals is the most the content can carry
// without changing a cent. Prices are at most 999999999.99, so only a
// very large order meets it.
var MaxOrderAmount = decimal.RequireFromString("9999999999999.99")

// Content is the service_order message's content: {order_id, shop_id,
// catalog_id, currency, amount, items, comment}, money as JSON numbers
// (exact: every amount is at most MaxOrderAmount, see there).
func (o Order) Content() map[string]any {
	items := make([]any, len(o.Items))
	for i, it := range o.Items {
		items[i] = map[string]any{"product_id": it.ProductID, "name": it.Name, "price": exactNumber(it.Price), "quantity": it.Quantity}
	}
	return map[string]any{
		"order_id": o.ID, "shop_id": o.ShopID, "catalog_id": o.CatalogID, "currency": o.Currency,
		"amount": exactNumber(o.Amount), "items": items, "comment": o.Comment,
	}
}

// exactNumber is d as the double whose shortest form is d: exact for the
// amounts MaxOrderAmount allows, which PlaceOrder checks first.
func exactNumber(d decimal.Decimal) float64 {
	f, _ := d.Float64()
	return f
}
