package grpc

import (
	"context"

	"google.golang.org/grpc/metadata"

	"switchboard.dev/pkg/protoapi"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
)

// Storefront implements StorefrontService.
type Storefront struct {
	salesv1.UnimplementedStorefrontServiceServer
	app *app.Storefront
}

// NewStorefront wraps the storefront's use cases.
func NewStorefront(a *app.Storefront) *Storefront { return &Storefront{app: a} }

var _ salesv1.StorefrontServiceServer = (*Storefront)(nil)

// authorization is the request's Authorization header (the gateway
// forwards it as metadata), "" when none.
func authorization(ctx context.Context) string {
	if v := metadata.ValueFromIncomingContext(ctx, "authorization"); len(v) == 1 {
		return v[0]
	}
	return ""
}

func (s *Storefront) GetStorefrontCatalog(ctx context.Context, req *salesv1.GetStorefrontCatalogRequest) (*salesv1.StorefrontCatalog, error) {
	v, err := s.app.Catalog(ctx, req.GetShopId(), authorization(ctx))
	if err != nil {
		return nil, err
	}
	out := &salesv1.StorefrontCatalog{
		Shop:     &salesv1.StorefrontShop{Id: v.Shop.ID, Name: v.Shop.Name, UseDeviceColorScheme: v.Shop.UseDeviceColorScheme},
		Catalog:  &salesv1.StorefrontCatalogInfo{Id: v.Catalog.ID, Name: v.Catalog.Name, Currency: v.Catalog.Currency},
		Products: make([]*salesv1.StorefrontProduct, 0, len(v.Products)),
	}
	for _, p := range v.Products {
		price, _ := p.PriceIn(v.Catalog.Currency)
		out.Products = append(out.Products, &salesv1.StorefrontProduct{
			Id: p.ID, Name: p.Name, Description: p.Description, Category: p.Category, Sku: p.SKU,
			Images: p.Images, Price: protoapi.Decimal(price),
		})
	}
	return out, nil
}

func (s *Storefront) CreateStorefrontOrder(ctx context.Context, req *salesv1.CreateStorefrontOrderRequest) (*salesv1.StorefrontOrder, error) {
	items := make([]app.OrderItem, len(req.GetItems()))
	for i, it := range req.GetItems() {
		items[i] = app.OrderItem{ProductID: it.GetProductId(), Quantity: it.GetQuantity()}
	}
	o, err := s.app.PlaceOrder(ctx, req.GetShopId(), authorization(ctx), items, req.GetComment())
	if err != nil {
		return nil, err
	}
	return orderPB(o), nil
}

func orderPB(o domain.Order) *salesv1.StorefrontOrder {
	out := &salesv1.StorefrontOrder{OrderId: o.ID, Amount: protoapi.Decimal(o.Amount), Currency: o.Currency}
	for _, it := range o.Items {
		out.Items = append(out.Items, &salesv1.StorefrontOrderItem{ProductId: it.ProductID, Name: it.Name, Price: protoapi.Decimal(it.Price), Quantity: it.Quantity})
	}
	return out
}
