package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/sales/internal/domain"
)

// StorefrontRepository is what the storefront reads and writes. A shop is
// found by its id alone (the caller is a buyer, not a company).
type StorefrontRepository interface {
	ShopByID(ctx context.Context, id int64) (domain.Shop, error)
	// CatalogProducts are the catalog's members, id ascending.
	CatalogProducts(ctx context.Context, company, catalogID int64) (domain.Catalog, []domain.Product, error)
	// PlaceOrder runs place under a lock of (shop, launch key): an order
	// already stored for the key is answered (stored true) without running
	// place; else place's order is stored when it returns no error.
	PlaceOrder(ctx context.Context, o domain.Order, place func(ctx context.Context) error) (stored domain.Order, replay bool, err error)
}

// Inbound is messaging's intake of inbound messages.
type Inbound interface {
	// IngestOrder records content as the buyer's inbound service_order
	// message in the bot's chat, once per sourceID; dropped when the
	// buyer is blacklisted.
	IngestOrder(ctx context.Context, connectionID int64, buyer domain.LaunchUser, sourceID string, content map[string]any) (dropped bool, err error)
}

// StorefrontConfig of the storefront.
type StorefrontConfig struct {
	// InitDataMaxAge is how old launch data may be.
	InitDataMaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Storefront is the mini app's use cases.
type Storefront struct {
	repo        StorefrontRepository
	connections Connections
	inbound     Inbound
	cfg         StorefrontConfig
}

// NewStorefront wires the storefront.
func NewStorefront(repo StorefrontRepository, connections Connections, inbound Inbound, cfg StorefrontConfig) *Storefront {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Storefront{repo: repo, connections: connections, inbound: inbound, cfg: cfg}
}

// unauthorized is 401 34011.
func unauthorized() error { return apierr.SalesStorefrontUnauthorized.E() }

// open finds the shop (404 34002) and checks the Authorization header
// against its bot's token (401 34011).
func (s *Storefront) open(ctx context.Context, shopID int64, authorization string) (domain.Shop, domain.LaunchData, error) {
	shop, err := s.repo.ShopByID(ctx, shopID)
	if err != nil {
		return domain.Shop{}, domain.LaunchData{}, err
	}
	scheme, raw, ok := strings.Cut(authorization, " ")
	if !ok || scheme != "tma" {
		return domain.Shop{}, domain.LaunchData{}, unauthorized()
	}
	token, err := s.connections.BotToken(ctx, shop.ConnectionID)
	if errors.Is(err, domain.ErrNotFound) {
		// The connection is gone: nothing can sign for the shop.
		return domain.Shop{}, domain.LaunchData{}, unauthorized()
	}
	if err != nil {
		return domain.Shop{}, domain.LaunchData{}, err
	}
	ld, err := domain.CheckLaunchData(raw, token, s.cfg.Now(), s.cfg.InitDataMaxAge)
	if err != nil {
		return domain.Shop{}, domain.LaunchData{}, unauthorized()
	}
	return shop, ld, nil
}

// StorefrontView is the shop, its catalog and products.
type StorefrontView struct {
	Shop     domain.Shop
	Catalog  domain.Catalog
	Products []domain.Product
}

// Catalog answers the storefront's read.
func (s *Storefront) Catalog(ctx context.Context, shopID int64, authorization string) (StorefrontView, error) {
	shop, _, err := s.open(ctx, shopID, authorization)
	if err != nil {
		return StorefrontView{}, err
	}
	cat, products, err := s.repo.CatalogProducts(ctx, shop.CompanyID, shop.CatalogID)
	if err != nil {
		return StorefrontView{}, err
	}
	return StorefrontView{Shop: shop, Catalog: cat, Products: products}, nil
}

// OrderItem is one line of an order as asked.
type OrderItem struct {
	ProductID int64
	Quantity  int32
}

// PlaceOrder prices the items at the catalog's current prices and hands
// the order to messaging as the buyer's service_order message, once per
// launch.
func (s *Storefront) PlaceOrder(ctx context.Context, shopID int64, authorization string, items []OrderItem, comment string) (domain.Order, error) {
	shop, ld, err := s.open(ctx, shopID, authorization)
	if err != nil {
		return domain.Order{}, err
	}
	if ld.User == nil {
		// The order's chat is the user's: launch data without one cannot
		// place an order.
		return domain.Order{}, unauthorized()
	}
	cat, products, err := s.repo.CatalogProducts(ctx, shop.CompanyID, shop.CatalogID)
	if err != nil {
		return domain.Order{}, err
	}
	byID := make(map[int64]domain.Product, len(products))
	for _, p := range products {
		byID[p.ID] = p
	}
	seen := map[int64]bool{}
	order := domain.Order{ShopID: shop.ID, CompanyID: shop.CompanyID, CatalogID: cat.ID, Currency: cat.Currency, Comment: comment}
	for i, it := range items {
		at := apierr.Body("items", i, "product_id")
		if seen[it.ProductID] {
			return domain.Order{}, apierr.Field(at, "value_error", "Value error, product %d is given twice", it.ProductID)
		}
		seen[it.ProductID] = true
		p, ok := byID[it.ProductID]
		if !ok {
			return domain.Order{}, apierr.Field(at, "value_error", "Value error, product %d is not in the shop's catalog", it.ProductID)
		}
		price, _ := p.PriceIn(cat.Currency)
		order.Items = append(order.Items, domain.OrderLine{ProductID: p.ID, Name: p.Name, Price: price, Quantity: it.Quantity})
		order.Amount = order.Amount.Add(price.Mul(decimal.NewFromInt32(it.Quantity)))
	}
	if order.Amount.GreaterThan(domain.MaxOrderAmount) {
		return domain.Order{}, apierr.Field(apierr.Body("items"), "value_error",
			"Value error, the order's amount is above %s", domain.MaxOrderAmount.StringFixed(2))
	}
	order.LaunchKey = ld.QueryID
	if order.LaunchKey == "" {
		order.LaunchKey = "hash:" + ld.Hash
	}
	order.BodyHash = bodyHash(items, comment)
	// The same launch always names the same order, so that a message
	// handed over before a crash is found again by its source id.
	order.ID = uuid.NewSHA1(orderNamespace, []byte(strconv.FormatInt(shop.ID, 10)+"\n"+order.LaunchKey)).String()
	stored, replay, err := s.repo.PlaceOrder(ctx, order, func(ctx context.Context) error {
		dropped, err := s.inbound.IngestOrder(ctx, shop.ConnectionID, *ld.User, "storefront_order_"+order.ID, order.Content())
		if err != nil {
			return err
		}
		if dropped {
			return apierr.ForbiddenError()
		}
		return nil
	})
	if err != nil {
		return domain.Order{}, err
	}
	if replay && stored.BodyHash != order.BodyHash {
		return domain.Order{}, apierr.SalesOrderReplayed.E()
	}
	return stored, nil
}

// orderNamespace makes order ids from (shop, launch key).
var orderNamespace = uuid.MustParse("7d1f3b6e-2a4c-4f0e-9b8d-5c6a1e2f3d40")

// bodyHash identifies an order's body (items in the order given, comment).
func bodyHash(items []OrderItem, comment string) string {
	b, _ := json.Marshal(struct {
		Items   []OrderItem
		Comment string
	}{items, comment})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
