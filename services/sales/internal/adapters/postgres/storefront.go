package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
)

var _ app.StorefrontRepository = (*Repo)(nil)

// ShopByID implements app.StorefrontRepository.
func (r *Repo) ShopByID(ctx context.Context, id int64) (domain.Shop, error) {
	return scanShop(r.db.QueryRow(ctx, `SELECT `+shopColumns+` FROM shops WHERE id = $1`, id))
}

// CatalogProducts implements app.StorefrontRepository: one snapshot of
// the catalog and its members.
func (r *Repo) CatalogProducts(ctx context.Context, company, catalogID int64) (domain.Catalog, []domain.Product, error) {
	var cat domain.Catalog
	var out []domain.Product
	err := pgx.BeginTxFunc(ctx, r.db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if cat, err = catalog(ctx, tx, company, catalogID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+productColumns+` FROM products p
			JOIN catalog_products cp ON cp.product_id = p.id AND cp.catalog_id = $2
			WHERE p.company_id = $1 ORDER BY p.id`, company, catalogID)
		if err != nil {
			return fmt.Errorf("catalog products: %w", err)
		}
		defer rows.Close()
		out = []domain.Product{}
		for rows.Next() {
			p, err := scanProduct(rows)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	return cat, out, err
}

type orderAnswer struct {
	Amount   string             `json:"amount"`
	Currency string             `json:"currency"`
	Items    []domain.OrderLine `json:"items"`
}

// PlaceOrder implements app.StorefrontRepository. The transaction holds a
// lock of (shop, launch key) while place hands the order to messaging, so
// parallel replays of one launch place it once.
func (r *Repo) PlaceOrder(ctx context.Context, o domain.Order, place func(ctx context.Context) error) (domain.Order, bool, error) {
	var out domain.Order
	var replay bool
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, $2))`, o.LaunchKey, o.ShopID); err != nil {
			return fmt.Errorf("lock launch: %w", err)
		}
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT id, body_hash, answer FROM storefront_orders WHERE shop_id = $1 AND launch_key = $2`,
			o.ShopID, o.LaunchKey).Scan(&out.ID, &out.BodyHash, &raw)
		if err == nil {
			replay = true
			var a orderAnswer
			if err := json.Unmarshal(raw, &a); err != nil {
				return fmt.Errorf("read order: %w", err)
			}
			out.Currency, out.Items = a.Currency, a.Items
			if out.Amount, err = decimalOf(a.Amount); err != nil {
				return err
			}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("find order: %w", err)
		}
		if err := place(ctx); err != nil {
			return err
		}
		answer, err := json.Marshal(orderAnswer{Amount: o.Amount.String(), Currency: o.Currency, Items: o.Items})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO storefront_orders (id, shop_id, company_id, launch_key, body_hash, answer)
			VALUES ($1, $2, $3, $4, $5, $6)`, o.ID, o.ShopID, o.CompanyID, o.LaunchKey, o.BodyHash, answer); err != nil {
			return fmt.Errorf("store order: %w", err)
		}
		out = o
		return nil
	})
	if err != nil {
		return domain.Order{}, false, err
	}
	return out, replay, nil
}

func decimalOf(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return d, fmt.Errorf("stored order amount %q: %w", s, err)
	}
	return d, nil
}
