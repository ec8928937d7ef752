// Package grpc is the sales transport: decode the request, check the field
// rules the protos cannot say, call one use case, encode the answer.
// Access rules are declared in the protos and enforced by pkg/auth before
// a handler runs; validation by pkg/validate.
package grpc

import (
	"context"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/protoapi"
	"switchboard.dev/pkg/validate"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
)

// Server implements the sales services.
type Server struct {
	salesv1.UnimplementedSalesServiceServer
	app *app.Service
}

// New wraps the use cases.
func New(a *app.Service) *Server { return &Server{app: a} }

var _ salesv1.SalesServiceServer = (*Server)(nil)

// page reads limit (default 100) and offset.
func page(limit *int32, offset *int32) (int, int) {
	l := 100
	if limit != nil {
		l = int(*limit)
	}
	o := 0
	if offset != nil {
		o = int(*offset)
	}
	return l, o
}

// nullableString reads a field that is a string or null (category, sku):
// set is false when it was left out, s is nil for null.
func nullableString(v *structpb.Value, maxLen int, at []any) (s *string, set bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return nil, true, nil
	case *structpb.Value_StringValue:
		if err := domain.CheckLen(k.StringValue, 1, maxLen, at); err != nil {
			return nil, false, err
		}
		return &k.StringValue, true, nil
	}
	return nil, false, apierr.Field(at, "string_type", "Input should be a valid string")
}

// prices checks typed prices (create).
func (s *Server) prices(in []*salesv1.PriceInput) ([]domain.Price, error) {
	out := make([]domain.Price, 0, len(in))
	for i, p := range in {
		if err := domain.CheckCurrency(p.GetCurrency(), s.app.Currencies(), apierr.Body("prices", i, "currency")); err != nil {
			return nil, err
		}
		d, err := domain.ParsePrice(p.GetPrice().GetValue(), apierr.Body("prices", i, "price"))
		if err != nil {
			return nil, err
		}
		out = append(out, domain.Price{Currency: p.GetCurrency(), Price: d})
	}
	return out, domain.CheckPrices(out, func(i int) []any { return apierr.Body("prices", i) })
}

// sentEmpty is the set of request fields the gateway says the client sent
// empty (validate.SentEmptyHeader): for a PATCH, [] rather than a list
// left out.
func sentEmpty(ctx context.Context) map[string]bool {
	out := map[string]bool{}
	for _, f := range metadata.ValueFromIncomingContext(ctx, validate.SentEmptyHeader) {
		out[f] = true
	}
	return out
}

func (s *Server) CreateProduct(ctx context.Context, req *salesv1.CreateProductRequest) (*salesv1.Product, error) {
	if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
		return nil, err
	}
	category, _, err := nullableString(req.GetCategory(), domain.MaxCategoryLen, apierr.Body("category"))
	if err != nil {
		return nil, err
	}
	sku, _, err := nullableString(req.GetSku(), domain.MaxSKULen, apierr.Body("sku"))
	if err != nil {
		return nil, err
	}
	prices, err := s.prices(req.GetPrices())
	if err != nil {
		return nil, err
	}
	p := domain.Product{
		CompanyID: req.GetCompanyId(), Name: req.GetName(), Description: req.GetDescription(),
		PaymentObjectType: domain.DefaultPaymentObjectType, VAT: domain.DefaultVAT,
		Category: category, SKU: sku, Images: append([]string{}, req.GetImages()...), Prices: prices,
	}
	if req.PaymentObjectType != nil {
		p.PaymentObjectType = req.GetPaymentObjectType()
	}
	if req.Vat != nil {
		p.VAT = req.GetVat()
	}
	out, err := s.app.CreateProduct(ctx, p)
	if err != nil {
		return nil, err
	}
	return productPB(out), nil
}

func (s *Server) ListProducts(ctx context.Context, req *salesv1.ListProductsRequest) (*salesv1.ListProductsResponse, error) {
	limit, offset := page(req.Limit, req.Offset)
	count, list, err := s.app.Products(ctx, req.GetCompanyId(), req.CatalogId, limit, offset)
	if err != nil {
		return nil, err
	}
	out := &salesv1.ListProductsResponse{Count: count, Products: make([]*salesv1.Product, 0, len(list))}
	for _, p := range list {
		out.Products = append(out.Products, productPB(p))
	}
	return out, nil
}

func (s *Server) GetProduct(ctx context.Context, req *salesv1.GetProductRequest) (*salesv1.Product, error) {
	p, err := s.app.Product(ctx, req.GetCompanyId(), req.GetProductId())
	if err != nil {
		return nil, err
	}
	return productPB(p), nil
}

func (s *Server) UpdateProduct(ctx context.Context, req *salesv1.UpdateProductRequest) (*salesv1.Product, error) {
	var patch app.ProductPatch
	if req.Name != nil {
		if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
			return nil, err
		}
	}
	patch.Name, patch.Description, patch.PaymentObjectType, patch.VAT = req.Name, req.Description, req.PaymentObjectType, req.Vat
	var err error
	if patch.Category, patch.SetCategory, err = nullableString(req.GetCategory(), domain.MaxCategoryLen, apierr.Body("category")); err != nil {
		return nil, err
	}
	if patch.SKU, patch.SetSKU, err = nullableString(req.GetSku(), domain.MaxSKULen, apierr.Body("sku")); err != nil {
		return nil, err
	}
	sent := sentEmpty(ctx)
	if len(req.GetImages()) > 0 || sent["images"] {
		patch.Images, patch.SetImages = append([]string{}, req.GetImages()...), true
	}
	switch {
	case len(req.GetPrices()) > 0:
		if patch.Prices, err = s.prices(req.GetPrices()); err != nil {
			return nil, err
		}
	case sent["prices"]:
		return nil, apierr.Field(apierr.Body("prices"), "too_short", "List should have at least 1 item after validation, not 0")
	}
	p, err := s.app.UpdateProduct(ctx, req.GetCompanyId(), req.GetProductId(), patch)
	if err != nil {
		return nil, err
	}
	return productPB(p), nil
}

func (s *Server) DeleteProduct(ctx context.Context, req *salesv1.DeleteProductRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteProduct(ctx, req.GetCompanyId(), req.GetProductId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (s *Server) CreateCatalog(ctx context.Context, req *salesv1.CreateCatalogRequest) (*salesv1.Catalog, error) {
	if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
		return nil, err
	}
	if err := domain.CheckCurrency(req.GetCurrency(), s.app.Currencies(), apierr.Body("currency")); err != nil {
		return nil, err
	}
	c, err := s.app.CreateCatalog(ctx, domain.Catalog{CompanyID: req.GetCompanyId(), Name: req.GetName(), Currency: req.GetCurrency()})
	if err != nil {
		return nil, err
	}
	return catalogPB(c), nil
}

func (s *Server) ListCatalogs(ctx context.Context, req *salesv1.ListCatalogsRequest) (*salesv1.ListCatalogsResponse, error) {
	limit, offset := page(req.Limit, req.Offset)
	count, list, err := s.app.Catalogs(ctx, req.GetCompanyId(), limit, offset)
	if err != nil {
		return nil, err
	}
	out := &salesv1.ListCatalogsResponse{Count: count, Catalogs: make([]*salesv1.Catalog, 0, len(list))}
	for _, c := range list {
		out.Catalogs = append(out.Catalogs, catalogPB(c))
	}
	return out, nil
}

func (s *Server) GetCatalog(ctx context.Context, req *salesv1.GetCatalogRequest) (*salesv1.Catalog, error) {
	return catalogOrError(s.app.Catalog(ctx, req.GetCompanyId(), req.GetCatalogId()))
}

func (s *Server) UpdateCatalog(ctx context.Context, req *salesv1.UpdateCatalogRequest) (*salesv1.Catalog, error) {
	if req.Name != nil {
		if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
			return nil, err
		}
	}
	if req.Currency != nil {
		if err := domain.CheckCurrency(req.GetCurrency(), s.app.Currencies(), apierr.Body("currency")); err != nil {
			return nil, err
		}
	}
	return catalogOrError(s.app.UpdateCatalog(ctx, req.GetCompanyId(), req.GetCatalogId(), req.Name, req.Currency))
}

func (s *Server) DeleteCatalog(ctx context.Context, req *salesv1.DeleteCatalogRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteCatalog(ctx, req.GetCompanyId(), req.GetCatalogId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (s *Server) AddCatalogProducts(ctx context.Context, req *salesv1.CatalogProductsRequest) (*salesv1.Catalog, error) {
	return catalogOrError(s.app.AddCatalogProducts(ctx, req.GetCompanyId(), req.GetCatalogId(), req.GetProductIds()))
}

func (s *Server) DeleteCatalogProducts(ctx context.Context, req *salesv1.CatalogProductsRequest) (*salesv1.Catalog, error) {
	return catalogOrError(s.app.DeleteCatalogProducts(ctx, req.GetCompanyId(), req.GetCatalogId(), req.GetProductIds()))
}

func (s *Server) CreateShop(ctx context.Context, req *salesv1.CreateShopRequest) (*salesv1.Shop, error) {
	if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
		return nil, err
	}
	return s.shopOrError(s.app.CreateShop(ctx, domain.Shop{
		CompanyID: req.GetCompanyId(), Name: req.GetName(), CatalogID: req.GetCatalogId(),
		ConnectionID: req.GetConnectionId(), UseDeviceColorScheme: req.GetUseDeviceColorScheme(),
	}))
}

func (s *Server) ListShops(ctx context.Context, req *salesv1.ListShopsRequest) (*salesv1.ListShopsResponse, error) {
	limit, offset := page(req.Limit, req.Offset)
	count, list, err := s.app.Shops(ctx, req.GetCompanyId(), limit, offset)
	if err != nil {
		return nil, err
	}
	out := &salesv1.ListShopsResponse{Count: count, Shops: make([]*salesv1.Shop, 0, len(list))}
	for _, sh := range list {
		out.Shops = append(out.Shops, s.shopPB(sh))
	}
	return out, nil
}

func (s *Server) GetShop(ctx context.Context, req *salesv1.GetShopRequest) (*salesv1.Shop, error) {
	return s.shopOrError(s.app.Shop(ctx, req.GetCompanyId(), req.GetShopId()))
}

func (s *Server) UpdateShop(ctx context.Context, req *salesv1.UpdateShopRequest) (*salesv1.Shop, error) {
	if req.ConnectionId != nil {
		return nil, apierr.Field(apierr.Body("connection_id"), "value_error", "Value error, a shop's connection cannot be changed: its link is given out")
	}
	if req.Name != nil {
		if err := domain.CheckName(req.GetName(), apierr.Body("name")); err != nil {
			return nil, err
		}
	}
	return s.shopOrError(s.app.UpdateShop(ctx, req.GetCompanyId(), req.GetShopId(), app.ShopPatch{
		Name: req.Name, CatalogID: req.CatalogId, UseDeviceColorScheme: req.UseDeviceColorScheme,
	}))
}

func (s *Server) DeleteShop(ctx context.Context, req *salesv1.DeleteShopRequest) (*emptypb.Empty, error) {
	if err := s.app.DeleteShop(ctx, req.GetCompanyId(), req.GetShopId()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func productPB(p domain.Product) *salesv1.Product {
	prices := make([]*salesv1.Price, 0, len(p.Prices))
	for _, pr := range p.Prices {
		prices = append(prices, &salesv1.Price{Currency: pr.Currency, Price: protoapi.Decimal(pr.Price)})
	}
	return &salesv1.Product{
		Id: p.ID, Name: p.Name, Description: p.Description, PaymentObjectType: p.PaymentObjectType,
		Category: p.Category, Vat: p.VAT, Sku: p.SKU, Images: p.Images, Prices: prices, CatalogIds: p.CatalogIDs,
		CreatedAt: timestamppb.New(p.CreatedAt), UpdatedAt: timestamppb.New(p.UpdatedAt),
	}
}

func catalogPB(c domain.Catalog) *salesv1.Catalog {
	return &salesv1.Catalog{Id: c.ID, Name: c.Name, Currency: c.Currency, ProductsCount: c.ProductsCount}
}

func catalogOrError(c domain.Catalog, err error) (*salesv1.Catalog, error) {
	if err != nil {
		return nil, err
	}
	return catalogPB(c), nil
}

func (s *Server) shopPB(sh domain.Shop) *salesv1.Shop {
	return &salesv1.Shop{
		Id: sh.ID, Name: sh.Name, Link: sh.Link(), WebAppUrl: sh.WebAppURL(s.app.PublicURL()),
		UseDeviceColorScheme: sh.UseDeviceColorScheme, CompanyId: sh.CompanyID, CatalogId: sh.CatalogID, ConnectionId: sh.ConnectionID,
	}
}

func (s *Server) shopOrError(sh domain.Shop, err error) (*salesv1.Shop, error) {
	if err != nil {
		return nil, err
	}
	return s.shopPB(sh), nil
}
