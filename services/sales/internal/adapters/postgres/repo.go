// Package postgres stores products, catalogs and shops. Every query takes
// the company id, so one company never sees another's rows.
//
// Locks: a change of a catalog's members holds the catalog's row (FOR
// UPDATE) and then its products' rows (FOR SHARE), so its count and limit
// are exact under parallel calls, and a product's prices cannot drop the
// catalog's currency meanwhile; a product's PATCH or DELETE holds the
// product's row (FOR UPDATE) and takes no catalog lock, so the two orders
// never cross. A catalog's currency change holds the catalog, then its
// members (FOR SHARE).
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
)

// Repo implements app.Repository.
type Repo struct {
	db *pgxpool.Pool
}

var _ app.Repository = (*Repo)(nil)

// New uses the pool of the sales database.
func New(db *pgxpool.Pool) *Repo { return &Repo{db: db} }

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// productColumns reads a product with its prices and catalogs, in order.
const productColumns = `p.id, p.company_id, p.name, p.description, p.payment_object_type, p.category, p.vat, p.sku,
	p.images, p.created_at, p.updated_at,
	coalesce((SELECT array_agg(pp.currency ORDER BY pp.position) FROM product_prices pp WHERE pp.product_id = p.id), '{}'),
	coalesce((SELECT array_agg(pp.price::text ORDER BY pp.position) FROM product_prices pp WHERE pp.product_id = p.id), '{}'),
	coalesce((SELECT array_agg(cp.catalog_id ORDER BY cp.catalog_id) FROM catalog_products cp WHERE cp.product_id = p.id), '{}')`

func scanProduct(row pgx.Row) (domain.Product, error) {
	var p domain.Product
	var currencies, prices []string
	err := row.Scan(&p.ID, &p.CompanyID, &p.Name, &p.Description, &p.PaymentObjectType, &p.Category, &p.VAT, &p.SKU,
		&p.Images, &p.CreatedAt, &p.UpdatedAt, &currencies, &prices, &p.CatalogIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, apierr.SalesProductNotFound.E()
	}
	if err != nil {
		return p, fmt.Errorf("read product: %w", err)
	}
	for i, c := range currencies {
		d, err := decimal.NewFromString(prices[i])
		if err != nil {
			return p, fmt.Errorf("read price: %w", err)
		}
		p.Prices = append(p.Prices, domain.Price{Currency: c, Price: d})
	}
	return p, nil
}

func product(ctx context.Context, q querier, company, id int64) (domain.Product, error) {
	return scanProduct(q.QueryRow(ctx, `SELECT `+productColumns+` FROM products p WHERE p.company_id = $1 AND p.id = $2`, company, id))
}

// skuTaken maps the unique index of skus to 409 34003.
func skuTaken(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "products_company_sku" {
		return apierr.SalesProductSKUConflict.E()
	}
	return err
}

func setPrices(ctx context.Context, tx pgx.Tx, id int64, prices []domain.Price) error {
	if _, err := tx.Exec(ctx, `DELETE FROM product_prices WHERE product_id = $1`, id); err != nil {
		return fmt.Errorf("clear prices: %w", err)
	}
	currencies := make([]string, len(prices))
	amounts := make([]string, len(prices))
	for i, p := range prices {
		currencies[i], amounts[i] = p.Currency, p.Price.String()
	}
	_, err := tx.Exec(ctx, `INSERT INTO product_prices (product_id, position, currency, price)
		SELECT $1, t.ord, t.currency, t.price::numeric
		FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(currency, price, ord)`, id, currencies, amounts)
	if err != nil {
		return fmt.Errorf("store prices: %w", err)
	}
	return nil
}

// CreateProduct implements app.Repository.
func (r *Repo) CreateProduct(ctx context.Context, p domain.Product) (domain.Product, error) {
	if p.Images == nil {
		p.Images = []string{} // the column holds a list, never NULL
	}
	var out domain.Product
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO products (company_id, name, description, payment_object_type, category, vat, sku, images)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			p.CompanyID, p.Name, p.Description, p.PaymentObjectType, p.Category, p.VAT, p.SKU, p.Images).Scan(&id)
		if err != nil {
			return skuTaken(err)
		}
		if err := setPrices(ctx, tx, id, p.Prices); err != nil {
			return err
		}
		out, err = product(ctx, tx, p.CompanyID, id)
		return err
	})
	return out, err
}

// Products implements app.Repository.
func (r *Repo) Products(ctx context.Context, company int64, catalogID *int64, limit, offset int) (int64, []domain.Product, error) {
	if catalogID != nil {
		if _, err := catalog(ctx, r.db, company, *catalogID); err != nil {
			return 0, nil, err
		}
	}
	const filter = ` FROM products p WHERE p.company_id = $1
		AND ($2::bigint IS NULL OR EXISTS (SELECT 1 FROM catalog_products cp WHERE cp.catalog_id = $2 AND cp.product_id = p.id))`
	var count int64
	if err := r.db.QueryRow(ctx, `SELECT count(*)`+filter, company, catalogID).Scan(&count); err != nil {
		return 0, nil, fmt.Errorf("count products: %w", err)
	}
	rows, err := r.db.Query(ctx, `SELECT `+productColumns+filter+` ORDER BY p.id LIMIT $3 OFFSET $4`, company, catalogID, limit, offset)
	if err != nil {
		return 0, nil, fmt.Errorf("list products: %w", err)
	}
	defer rows.Close()
	out := []domain.Product{}
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, p)
	}
	return count, out, rows.Err()
}

// Product implements app.Repository.
func (r *Repo) Product(ctx context.Context, company, id int64) (domain.Product, error) {
	return product(ctx, r.db, company, id)
}

// UpdateProduct implements app.Repository. New prices must keep the
// currency of every catalog holding the product (409 34005).
func (r *Repo) UpdateProduct(ctx context.Context, company, id int64, patch app.ProductPatch) (domain.Product, error) {
	var out domain.Product
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var locked int64
		err := tx.QueryRow(ctx, `SELECT id FROM products WHERE company_id = $1 AND id = $2 FOR UPDATE`, company, id).Scan(&locked)
		if errors.Is(err, pgx.ErrNoRows) {
			return apierr.SalesProductNotFound.E()
		}
		if err != nil {
			return fmt.Errorf("lock product: %w", err)
		}
		images := []string{}
		if patch.SetImages && patch.Images != nil {
			images = patch.Images
		}
		_, err = tx.Exec(ctx, `UPDATE products SET
				name = coalesce($3, name), description = coalesce($4, description),
				payment_object_type = coalesce($5, payment_object_type), vat = coalesce($6, vat),
				category = CASE WHEN $7 THEN $8 ELSE category END,
				sku = CASE WHEN $9 THEN $10 ELSE sku END,
				images = CASE WHEN $11 THEN $12::text[] ELSE images END,
				updated_at = now()
			WHERE company_id = $1 AND id = $2`,
			company, id, patch.Name, patch.Description, patch.PaymentObjectType, patch.VAT,
			patch.SetCategory, patch.Category, patch.SetSKU, patch.SKU, patch.SetImages, images)
		if err != nil {
			return skuTaken(err)
		}
		if patch.Prices != nil {
			if err := setPrices(ctx, tx, id, patch.Prices); err != nil {
				return err
			}
			var missing bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM catalog_products cp JOIN catalogs c ON c.id = cp.catalog_id
				WHERE cp.product_id = $1 AND NOT EXISTS (
					SELECT 1 FROM product_prices pp WHERE pp.product_id = $1 AND pp.currency = c.currency))`, id).Scan(&missing)
			if err != nil {
				return fmt.Errorf("check catalog currencies: %w", err)
			}
			if missing {
				return apierr.SalesCatalogCurrencyMismatch.E()
			}
		}
		out, err = product(ctx, tx, company, id)
		return err
	})
	return out, err
}

// DeleteProduct implements app.Repository: its memberships and prices go
// with it.
func (r *Repo) DeleteProduct(ctx context.Context, company, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM products WHERE company_id = $1 AND id = $2`, company, id)
	if err != nil {
		return fmt.Errorf("delete product: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return apierr.SalesProductNotFound.E()
	}
	return nil
}

const catalogColumns = `c.id, c.company_id, c.name, c.currency,
	(SELECT count(*) FROM catalog_products cp WHERE cp.catalog_id = c.id)`

func scanCatalog(row pgx.Row) (domain.Catalog, error) {
	var c domain.Catalog
	err := row.Scan(&c.ID, &c.CompanyID, &c.Name, &c.Currency, &c.ProductsCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apierr.SalesCatalogNotFound.E()
	}
	if err != nil {
		return c, fmt.Errorf("read catalog: %w", err)
	}
	return c, nil
}

func catalog(ctx context.Context, q querier, company, id int64) (domain.Catalog, error) {
	return scanCatalog(q.QueryRow(ctx, `SELECT `+catalogColumns+` FROM catalogs c WHERE c.company_id = $1 AND c.id = $2`, company, id))
}

// lockCatalog holds the company's catalog row for the transaction.
func lockCatalog(ctx context.Context, tx pgx.Tx, company, id int64, mode string) (domain.Catalog, error) {
	var c domain.Catalog
	err := tx.QueryRow(ctx, `SELECT id, currency FROM catalogs WHERE company_id = $1 AND id = $2 FOR `+mode, company, id).Scan(&c.ID, &c.Currency)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apierr.SalesCatalogNotFound.E()
	}
	if err != nil {
		return c, fmt.Errorf("lock catalog: %w", err)
	}
	return c, nil
}

// CreateCatalog implements app.Repository. The company's catalogs are
// counted under a transaction lock of the company, so parallel creates
// never pass the limit.
func (r *Repo) CreateCatalog(ctx context.Context, c domain.Catalog, maxCatalogs int) (domain.Catalog, error) {
	var out domain.Catalog
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('sales.catalogs', $1))`, c.CompanyID); err != nil {
			return fmt.Errorf("lock company catalogs: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM catalogs WHERE company_id = $1`, c.CompanyID).Scan(&n); err != nil {
			return fmt.Errorf("count catalogs: %w", err)
		}
		if n >= maxCatalogs {
			return apierr.SalesCatalogsLimitExceeded.E()
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO catalogs (company_id, name, currency) VALUES ($1, $2, $3) RETURNING id`,
			c.CompanyID, c.Name, c.Currency).Scan(&id); err != nil {
			return fmt.Errorf("store catalog: %w", err)
		}
		var err error
		out, err = catalog(ctx, tx, c.CompanyID, id)
		return err
	})
	return out, err
}

// Catalogs implements app.Repository.
func (r *Repo) Catalogs(ctx context.Context, company int64, limit, offset int) (int64, []domain.Catalog, error) {
	var count int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM catalogs WHERE company_id = $1`, company).Scan(&count); err != nil {
		return 0, nil, fmt.Errorf("count catalogs: %w", err)
	}
	rows, err := r.db.Query(ctx, `SELECT `+catalogColumns+` FROM catalogs c WHERE c.company_id = $1 ORDER BY c.id LIMIT $2 OFFSET $3`,
		company, limit, offset)
	if err != nil {
		return 0, nil, fmt.Errorf("list catalogs: %w", err)
	}
	defer rows.Close()
	out := []domain.Catalog{}
	for rows.Next() {
		c, err := scanCatalog(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, c)
	}
	return count, out, rows.Err()
}

// Catalog implements app.Repository.
func (r *Repo) Catalog(ctx context.Context, company, id int64) (domain.Catalog, error) {
	return catalog(ctx, r.db, company, id)
}

// UpdateCatalog implements app.Repository: a new currency needs a price
// in it of every member (held FOR SHARE until the change commits).
func (r *Repo) UpdateCatalog(ctx context.Context, company, id int64, name, currency *string) (domain.Catalog, error) {
	var out domain.Catalog
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockCatalog(ctx, tx, company, id, "UPDATE"); err != nil {
			return err
		}
		if currency != nil {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM products p JOIN catalog_products cp ON cp.product_id = p.id
				WHERE cp.catalog_id = $1 ORDER BY p.id FOR SHARE OF p`, id); err != nil {
				return fmt.Errorf("lock members: %w", err)
			}
			var missing bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM catalog_products cp WHERE cp.catalog_id = $1
				AND NOT EXISTS (SELECT 1 FROM product_prices pp WHERE pp.product_id = cp.product_id AND pp.currency = $2))`,
				id, *currency).Scan(&missing); err != nil {
				return fmt.Errorf("check member prices: %w", err)
			}
			if missing {
				return apierr.SalesCatalogCurrencyMismatch.E()
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE catalogs SET name = coalesce($3, name), currency = coalesce($4, currency)
			WHERE company_id = $1 AND id = $2`, company, id, name, currency); err != nil {
			return fmt.Errorf("update catalog: %w", err)
		}
		var err error
		out, err = catalog(ctx, tx, company, id)
		return err
	})
	return out, err
}

// DeleteCatalog implements app.Repository: 409 34008 while a shop uses
// it (a shop's create or PATCH holds the catalog FOR SHARE).
func (r *Repo) DeleteCatalog(ctx context.Context, company, id int64) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockCatalog(ctx, tx, company, id, "UPDATE"); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM shops WHERE catalog_id = $1)`, id).Scan(&used); err != nil {
			return fmt.Errorf("check shops: %w", err)
		}
		if used {
			return apierr.SalesCatalogInUse.E()
		}
		if _, err := tx.Exec(ctx, `DELETE FROM catalogs WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete catalog: %w", err)
		}
		return nil
	})
}

// members locks the given products of the company FOR SHARE and answers
// 404 34000 when one is not the company's.
func members(ctx context.Context, tx pgx.Tx, company int64, ids []int64) error {
	var found int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT id FROM products WHERE company_id = $1 AND id = ANY($2)
		ORDER BY id FOR SHARE) p`, company, ids).Scan(&found)
	if err != nil {
		return fmt.Errorf("lock products: %w", err)
	}
	if found != len(ids) {
		return apierr.SalesProductNotFound.E()
	}
	return nil
}

// AddCatalogProducts implements app.Repository. ids are distinct. Order:
// catalog 404, product 404, currency 409, limit 409.
func (r *Repo) AddCatalogProducts(ctx context.Context, company, id int64, ids []int64, maxProducts int) (domain.Catalog, error) {
	var out domain.Catalog
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		c, err := lockCatalog(ctx, tx, company, id, "UPDATE")
		if err != nil {
			return err
		}
		if err := members(ctx, tx, company, ids); err != nil {
			return err
		}
		var lacking bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM unnest($1::bigint[]) AS t(id)
			WHERE NOT EXISTS (SELECT 1 FROM product_prices pp WHERE pp.product_id = t.id AND pp.currency = $2))`,
			ids, c.Currency).Scan(&lacking); err != nil {
			return fmt.Errorf("check prices: %w", err)
		}
		if lacking {
			return apierr.SalesCatalogCurrencyMismatch.E()
		}
		var total int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT product_id FROM catalog_products WHERE catalog_id = $1
			UNION SELECT unnest($2::bigint[])) m`, id, ids).Scan(&total); err != nil {
			return fmt.Errorf("count members: %w", err)
		}
		if total > maxProducts {
			return apierr.SalesCatalogProductsLimitExceeded.E()
		}
		if _, err := tx.Exec(ctx, `INSERT INTO catalog_products (catalog_id, product_id)
			SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, id, ids); err != nil {
			return fmt.Errorf("add members: %w", err)
		}
		out, err = catalog(ctx, tx, company, id)
		return err
	})
	return out, err
}

// DeleteCatalogProducts implements app.Repository.
func (r *Repo) DeleteCatalogProducts(ctx context.Context, company, id int64, ids []int64) (domain.Catalog, error) {
	var out domain.Catalog
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockCatalog(ctx, tx, company, id, "UPDATE"); err != nil {
			return err
		}
		if err := members(ctx, tx, company, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM catalog_products WHERE catalog_id = $1 AND product_id = ANY($2)`, id, ids); err != nil {
			return fmt.Errorf("remove members: %w", err)
		}
		var err error
		out, err = catalog(ctx, tx, company, id)
		return err
	})
	return out, err
}

const shopColumns = `id, company_id, name, catalog_id, connection_id, connection_type, bot_username, use_device_color_scheme`

func scanShop(row pgx.Row) (domain.Shop, error) {
	var s domain.Shop
	err := row.Scan(&s.ID, &s.CompanyID, &s.Name, &s.CatalogID, &s.ConnectionID, &s.ConnectionType, &s.BotUsername, &s.UseDeviceColorScheme)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, apierr.SalesShopNotFound.E()
	}
	if err != nil {
		return s, fmt.Errorf("read shop: %w", err)
	}
	return s, nil
}

// CreateShop implements app.Repository: the catalog is held FOR SHARE so
// that it is not deleted under the new shop; a connection with a shop is
// 409 34010.
func (r *Repo) CreateShop(ctx context.Context, s domain.Shop) (domain.Shop, error) {
	var out domain.Shop
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := lockCatalog(ctx, tx, s.CompanyID, s.CatalogID, "SHARE"); err != nil {
			return err
		}
		var err error
		out, err = scanShop(tx.QueryRow(ctx, `INSERT INTO shops (company_id, name, catalog_id, connection_id, connection_type, bot_username, use_device_color_scheme)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+shopColumns,
			s.CompanyID, s.Name, s.CatalogID, s.ConnectionID, s.ConnectionType, s.BotUsername, s.UseDeviceColorScheme))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return apierr.SalesShopConnectionTaken.E()
		}
		return err
	})
	return out, err
}

// Shops implements app.Repository.
func (r *Repo) Shops(ctx context.Context, company int64, limit, offset int) (int64, []domain.Shop, error) {
	var count int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM shops WHERE company_id = $1`, company).Scan(&count); err != nil {
		return 0, nil, fmt.Errorf("count shops: %w", err)
	}
	rows, err := r.db.Query(ctx, `SELECT `+shopColumns+` FROM shops WHERE company_id = $1 ORDER BY id LIMIT $2 OFFSET $3`,
		company, limit, offset)
	if err != nil {
		return 0, nil, fmt.Errorf("list shops: %w", err)
	}
	defer rows.Close()
	out := []domain.Shop{}
	for rows.Next() {
		s, err := scanShop(rows)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, s)
	}
	return count, out, rows.Err()
}

// Shop implements app.Repository.
func (r *Repo) Shop(ctx context.Context, company, id int64) (domain.Shop, error) {
	return scanShop(r.db.QueryRow(ctx, `SELECT `+shopColumns+` FROM shops WHERE company_id = $1 AND id = $2`, company, id))
}

// UpdateShop implements app.Repository: the shop 404 first, then a new
// catalog's.
func (r *Repo) UpdateShop(ctx context.Context, company, id int64, patch app.ShopPatch) (domain.Shop, error) {
	var out domain.Shop
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := scanShop(tx.QueryRow(ctx, `SELECT `+shopColumns+` FROM shops WHERE company_id = $1 AND id = $2 FOR UPDATE`, company, id)); err != nil {
			return err
		}
		if patch.CatalogID != nil {
			if _, err := lockCatalog(ctx, tx, company, *patch.CatalogID, "SHARE"); err != nil {
				return err
			}
		}
		var err error
		out, err = scanShop(tx.QueryRow(ctx, `UPDATE shops SET name = coalesce($3, name), catalog_id = coalesce($4, catalog_id),
				use_device_color_scheme = coalesce($5, use_device_color_scheme)
			WHERE company_id = $1 AND id = $2 RETURNING `+shopColumns,
			company, id, patch.Name, patch.CatalogID, patch.UseDeviceColorScheme))
		return err
	})
	return out, err
}

// DeleteShop implements app.Repository.
func (r *Repo) DeleteShop(ctx context.Context, company, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM shops WHERE company_id = $1 AND id = $2`, company, id)
	if err != nil {
		return fmt.Errorf("delete shop: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return apierr.SalesShopNotFound.E()
	}
	return nil
}
