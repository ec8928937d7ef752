// Package app holds the sales use cases: each checks what needs a peer
// (connections, messaging) and leaves the rules that need the database,
// and their transactions, to the repository.
package app

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/sales/internal/domain"
)

// Repository stores products, catalogs and shops. Every method is scoped
// by company, and answers the catalogue's errors for its rules (404s of
// ids that are not the company's, sku, currency, limits, in use).
type Repository interface {
	CreateProduct(ctx context.Context, p domain.Product) (domain.Product, error)
	Products(ctx context.Context, company int64, catalogID *int64, limit, offset int) (int64, []domain.Product, error)
	Product(ctx context.Context, company, id int64) (domain.Product, error)
	UpdateProduct(ctx context.Context, company, id int64, patch ProductPatch) (domain.Product, error)
	DeleteProduct(ctx context.Context, company, id int64) error

	CreateCatalog(ctx context.Context, c domain.Catalog, maxCatalogs int) (domain.Catalog, error)
	Catalogs(ctx context.Context, company int64, limit, offset int) (int64, []domain.Catalog, error)
	Catalog(ctx context.Context, company, id int64) (domain.Catalog, error)
	UpdateCatalog(ctx context.Context, company, id int64, name, currency *string) (domain.Catalog, error)
	DeleteCatalog(ctx context.Context, company, id int64) error
	AddCatalogProducts(ctx context.Context, company, id int64, productIDs []int64, maxProducts int) (domain.Catalog, error)
	DeleteCatalogProducts(ctx context.Context, company, id int64, productIDs []int64) (domain.Catalog, error)

	CreateShop(ctx context.Context, s domain.Shop) (domain.Shop, error)
	Shops(ctx context.Context, company int64, limit, offset int) (int64, []domain.Shop, error)
	Shop(ctx context.Context, company, id int64) (domain.Shop, error)
	UpdateShop(ctx context.Context, company, id int64, patch ShopPatch) (domain.Shop, error)
	DeleteShop(ctx context.Context, company, id int64) error
}

// ProductPatch is a PATCH of a product: nil is untouched. Category and SKU
// are set when SetCategory/SetSKU, to nil for none.
type ProductPatch struct {
	Name, Description, PaymentObjectType, VAT *string
	SetCategory, SetSKU                       bool
	Category, SKU                             *string
	Images                                    []string
	SetImages                                 bool
	Prices                                    []domain.Price
}

// ShopPatch is a PATCH of a shop: nil is untouched.
type ShopPatch struct {
	Name                 *string
	CatalogID            *int64
	UseDeviceColorScheme *bool
}

// Connection is what sales needs of a connection.
type Connection struct {
	ID          int64
	CompanyID   int64
	Type        string
	BotUsername string
}

// Connections is the connections service; domain.ErrNotFound for an
// unknown connection.
type Connections interface {
	Connection(ctx context.Context, id int64) (Connection, error)
	// BotToken is a bot connection's token (its storefront's key).
	BotToken(ctx context.Context, id int64) (string, error)
}

// File is what sales needs of an uploaded file.
type File struct {
	CompanyID int64
	MimeType  string
}

// Files is messaging's uploaded files; domain.ErrNotFound for an unknown
// token.
type Files interface {
	File(ctx context.Context, token string) (File, error)
}

// Config of the use cases.
type Config struct {
	// Currencies a price or catalog may be in.
	Currencies []string
	// MaxCatalogs a company; MaxCatalogProducts a catalog.
	MaxCatalogs        int
	MaxCatalogProducts int
	// PublicURL is the gateway's external address: uploaded files' links
	// are PublicURL/files/<token>, shops' pages PublicURL/storefront/...
	PublicURL string
}

// Service is the sales use cases.
type Service struct {
	repo        Repository
	connections Connections
	files       Files
	cfg         Config
}

// New wires the use cases.
func New(repo Repository, connections Connections, files Files, cfg Config) *Service {
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	return &Service{repo: repo, connections: connections, files: files, cfg: cfg}
}

// Currencies is the configured list.
func (s *Service) Currencies() []string { return s.cfg.Currencies }

// PublicURL is the platform's external address.
func (s *Service) PublicURL() string { return s.cfg.PublicURL }

// CreateProduct stores a product whose fields the transport checked; its
// images are checked here.
func (s *Service) CreateProduct(ctx context.Context, p domain.Product) (domain.Product, error) {
	if err := s.checkImages(ctx, p.CompanyID, p.Images); err != nil {
		return domain.Product{}, err
	}
	return s.repo.CreateProduct(ctx, p)
}

// Products lists the company's products (of one of its catalogs).
func (s *Service) Products(ctx context.Context, company int64, catalogID *int64, limit, offset int) (int64, []domain.Product, error) {
	return s.repo.Products(ctx, company, catalogID, limit, offset)
}

// Product is one product.
func (s *Service) Product(ctx context.Context, company, id int64) (domain.Product, error) {
	return s.repo.Product(ctx, company, id)
}

// UpdateProduct applies a PATCH: the product must be the company's (404
// first), then its images are checked.
func (s *Service) UpdateProduct(ctx context.Context, company, id int64, patch ProductPatch) (domain.Product, error) {
	if _, err := s.repo.Product(ctx, company, id); err != nil {
		return domain.Product{}, err
	}
	if patch.SetImages {
		if err := s.checkImages(ctx, company, patch.Images); err != nil {
			return domain.Product{}, err
		}
	}
	return s.repo.UpdateProduct(ctx, company, id, patch)
}

// DeleteProduct removes a product from everything.
func (s *Service) DeleteProduct(ctx context.Context, company, id int64) error {
	return s.repo.DeleteProduct(ctx, company, id)
}

// imageTypes are the uploaded files a product image may be.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/webp": true, "image/gif": true}

// checkImages: each image is the link of an image file the company
// uploaded (under the public URL's /files/, http or https), or another
// absolute https URL, which is not fetched.
func (s *Service) checkImages(ctx context.Context, company int64, images []string) error {
	base, err := url.Parse(s.cfg.PublicURL)
	if err != nil {
		return err
	}
	for _, img := range images {
		u, err := url.Parse(img)
		if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil {
			return notAllowed(img)
		}
		scheme := strings.ToLower(u.Scheme)
		if (scheme == "http" || scheme == "https") && strings.EqualFold(u.Host, base.Host) {
			token, own := strings.CutPrefix(u.EscapedPath(), strings.TrimRight(base.Path, "/")+"/files/")
			if !own {
				if scheme == "https" {
					continue
				}
				return notAllowed(img)
			}
			f, err := s.files.File(ctx, token)
			if errors.Is(err, domain.ErrNotFound) || err == nil && (f.CompanyID != company || !imageTypes[f.MimeType]) {
				return notAllowed(img)
			}
			if err != nil {
				return err
			}
			continue
		}
		if scheme != "https" {
			return notAllowed(img)
		}
	}
	return nil
}

func notAllowed(img string) error {
	return apierr.SalesProductImageURLNotAllowed.Msg("%s is neither an image file the company uploaded nor an https link", img)
}

// CreateCatalog stores a catalog within the company's limit.
func (s *Service) CreateCatalog(ctx context.Context, c domain.Catalog) (domain.Catalog, error) {
	return s.repo.CreateCatalog(ctx, c, s.cfg.MaxCatalogs)
}

// Catalogs lists the company's catalogs.
func (s *Service) Catalogs(ctx context.Context, company int64, limit, offset int) (int64, []domain.Catalog, error) {
	return s.repo.Catalogs(ctx, company, limit, offset)
}

// Catalog is one catalog.
func (s *Service) Catalog(ctx context.Context, company, id int64) (domain.Catalog, error) {
	return s.repo.Catalog(ctx, company, id)
}

// UpdateCatalog renames a catalog or changes its currency.
func (s *Service) UpdateCatalog(ctx context.Context, company, id int64, name, currency *string) (domain.Catalog, error) {
	return s.repo.UpdateCatalog(ctx, company, id, name, currency)
}

// DeleteCatalog removes a catalog no shop uses.
func (s *Service) DeleteCatalog(ctx context.Context, company, id int64) error {
	return s.repo.DeleteCatalog(ctx, company, id)
}

// AddCatalogProducts adds members, all or none.
func (s *Service) AddCatalogProducts(ctx context.Context, company, id int64, productIDs []int64) (domain.Catalog, error) {
	return s.repo.AddCatalogProducts(ctx, company, id, domain.Members(productIDs), s.cfg.MaxCatalogProducts)
}

// DeleteCatalogProducts removes members, all or none.
func (s *Service) DeleteCatalogProducts(ctx context.Context, company, id int64, productIDs []int64) (domain.Catalog, error) {
	return s.repo.DeleteCatalogProducts(ctx, company, id, domain.Members(productIDs))
}

// CreateShop joins a bot connection of the company with one of its
// catalogs. The catalog is checked first (a body id of the company's
// routes), then the connection: the company's (404 10000), a bot (400
// 34009), without a shop (409 34010, by the repository).
func (s *Service) CreateShop(ctx context.Context, shop domain.Shop) (domain.Shop, error) {
	if _, err := s.repo.Catalog(ctx, shop.CompanyID, shop.CatalogID); err != nil {
		return domain.Shop{}, err
	}
	conn, err := s.connections.Connection(ctx, shop.ConnectionID)
	if errors.Is(err, domain.ErrNotFound) || err == nil && conn.CompanyID != shop.CompanyID {
		return domain.Shop{}, apierr.ConnectionNotFound.E()
	}
	if err != nil {
		return domain.Shop{}, err
	}
	if conn.Type != domain.TelegramBot && conn.Type != domain.MaxBot {
		return domain.Shop{}, apierr.SalesShopConnectionTypeUnsupported.E()
	}
	if conn.BotUsername == "" {
		// A bot connection always has one (connections derives it when
		// the connection is made); without it there is no link to give.
		return domain.Shop{}, apierr.ServiceUnavailable.Msg("the connection's bot username is not known yet, try again later")
	}
	shop.ConnectionType, shop.BotUsername = conn.Type, conn.BotUsername
	return s.repo.CreateShop(ctx, shop)
}

// Shops lists the company's shops.
func (s *Service) Shops(ctx context.Context, company int64, limit, offset int) (int64, []domain.Shop, error) {
	return s.repo.Shops(ctx, company, limit, offset)
}

// Shop is one shop.
func (s *Service) Shop(ctx context.Context, company, id int64) (domain.Shop, error) {
	return s.repo.Shop(ctx, company, id)
}

// UpdateShop changes a shop's name, catalog or colour scheme.
func (s *Service) UpdateShop(ctx context.Context, company, id int64, patch ShopPatch) (domain.Shop, error) {
	return s.repo.UpdateShop(ctx, company, id, patch)
}

// DeleteShop removes a shop.
func (s *Service) DeleteShop(ctx context.Context, company, id int64) error {
	return s.repo.DeleteShop(ctx, company, id)
}
