package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/sales/internal/app"
	"switchboard.dev/services/sales/internal/domain"
	"switchboard.dev/services/sales/migrations"
)

func rub(v string) []domain.Price {
	return []domain.Price{{Currency: "RUB", Price: decimal.RequireFromString(v)}}
}

func code(err error) int32 {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestMembershipUnderParallelChanges: parallel adds, removes, product
// PATCHes that drop or restore the catalog's currency, product deletes
// and catalog currency changes never leave a member without a price in
// its catalog's currency, never pass the product limit, never deadlock
// (every call ends in a catalogue answer), and products_count is always
// the members' number.
func TestMembershipUnderParallelChanges(t *testing.T) {
	ctx := context.Background()
	repo := New(pgtest.New(t, migrations.FS))
	const company = 7
	var products []int64
	for i := 0; i < 30; i++ {
		p, err := repo.CreateProduct(ctx, domain.Product{CompanyID: company, Name: fmt.Sprintf("P%d", i),
			PaymentObjectType: "commodity", VAT: "none", Prices: append(rub("10"), domain.Price{Currency: "USD", Price: decimal.RequireFromString("1")})})
		require.NoError(t, err)
		products = append(products, p.ID)
	}
	var catalogs []int64
	for i := 0; i < 3; i++ {
		c, err := repo.CreateCatalog(ctx, domain.Catalog{CompanyID: company, Name: fmt.Sprintf("C%d", i), Currency: "RUB"}, 100)
		require.NoError(t, err)
		catalogs = append(catalogs, c.ID)
	}
	const maxProducts = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	unexpected := []error{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < 60; i++ {
				cat := catalogs[rnd.IntN(len(catalogs))]
				ids := []int64{products[rnd.IntN(len(products))], products[rnd.IntN(len(products))]}
				var err error
				switch rnd.IntN(6) {
				case 0, 1:
					_, err = repo.AddCatalogProducts(ctx, company, cat, domain.Members(ids), maxProducts)
				case 2:
					_, err = repo.DeleteCatalogProducts(ctx, company, cat, domain.Members(ids))
				case 3:
					prices := rub("10")
					if rnd.IntN(2) == 0 {
						prices = []domain.Price{{Currency: "USD", Price: decimal.RequireFromString("2")}}
					}
					_, err = repo.UpdateProduct(ctx, company, ids[0], app.ProductPatch{Prices: prices})
				case 4:
					cur := []string{"RUB", "USD"}[rnd.IntN(2)]
					_, err = repo.UpdateCatalog(ctx, company, cat, nil, &cur)
				case 5:
					if rnd.IntN(10) == 0 {
						err = repo.DeleteProduct(ctx, company, ids[0])
					}
				}
				switch code(err) {
				case 0, apierr.SalesCatalogCurrencyMismatch.Code, apierr.SalesCatalogProductsLimitExceeded.Code, apierr.SalesProductNotFound.Code:
					if err != nil && code(err) == 0 {
						mu.Lock()
						unexpected = append(unexpected, err)
						mu.Unlock()
					}
				default:
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	require.Empty(t, unexpected)

	for _, id := range catalogs {
		c, err := repo.Catalog(ctx, company, id)
		require.NoError(t, err)
		n, members, err := repo.Products(ctx, company, &id, 100, 0)
		require.NoError(t, err)
		require.Equal(t, n, c.ProductsCount)
		require.LessOrEqual(t, c.ProductsCount, int64(maxProducts))
		for _, p := range members {
			_, ok := p.PriceIn(c.Currency)
			require.True(t, ok, "product %d in catalog %d (%s) has prices %v", p.ID, id, c.Currency, p.Prices)
			require.Contains(t, p.CatalogIDs, id)
		}
	}
}

// TestScopedToCompany: another company's ids are the resources' 404s.
func TestScopedToCompany(t *testing.T) {
	ctx := context.Background()
	repo := New(pgtest.New(t, migrations.FS))
	p, err := repo.CreateProduct(ctx, domain.Product{CompanyID: 1, Name: "A", PaymentObjectType: "commodity", VAT: "none", Prices: rub("1")})
	require.NoError(t, err)
	c, err := repo.CreateCatalog(ctx, domain.Catalog{CompanyID: 1, Name: "C", Currency: "RUB"}, 10)
	require.NoError(t, err)
	_, err = repo.Product(ctx, 2, p.ID)
	require.Equal(t, apierr.SalesProductNotFound.Code, code(err))
	_, err = repo.Catalog(ctx, 2, c.ID)
	require.Equal(t, apierr.SalesCatalogNotFound.Code, code(err))
	other, err := repo.CreateCatalog(ctx, domain.Catalog{CompanyID: 2, Name: "C", Currency: "RUB"}, 10)
	require.NoError(t, err)
	_, err = repo.AddCatalogProducts(ctx, 2, other.ID, []int64{p.ID}, 10)
	require.Equal(t, apierr.SalesProductNotFound.Code, code(err))
	require.Equal(t, apierr.SalesProductNotFound.Code, code(repo.DeleteProduct(ctx, 2, p.ID)))
	_, _, err = repo.Products(ctx, 2, &c.ID, 10, 0)
	require.Equal(t, apierr.SalesCatalogNotFound.Code, code(err))
}
