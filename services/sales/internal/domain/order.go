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

// Content is the service_order message's content: {order_id, shop_id,
// catalog_id, currency, amount, items, comment}, money as JSON numbers.
func (o Order) Content() map[string]any {
	items := make([]any, len(o.Items))
	for i, it := range o.Items {
		items[i] = map[string]any{"product_id": it.ProductID, "name": it.Name, "price": it.Price.InexactFloat64(), "quantity": it.Quantity}
	}
	return map[string]any{
		"order_id": o.ID, "shop_id": o.ShopID, "catalog_id": o.CatalogID, "currency": o.Currency,
		"amount": o.Amount.InexactFloat64(), "items": items, "comment": o.Comment,
	}
}
