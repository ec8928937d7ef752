package e2e

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func slCatalog(id int64, name, currency string, count int) map[string]any {
	return map[string]any{"id": id, "name": name, "currency": currency, "products_count": count}
}

// TestSalesCatalogs: create, list, get, PATCH, DELETE, their rules.
func TestSalesCatalogs(t *testing.T) {
	c, other := slCompany(t), slCompany(t)
	r := slCall(t, c, "POST", "/catalogs/", map[string]any{"name": "Coffee", "currency": "RUB", "products_count": 9})
	requireJSON(t, r, 200, map[string]any{"id": anyID, "name": "Coffee", "currency": "RUB", "products_count": 0})
	r = slCall(t, c, "POST", "/catalogs/", map[string]any{"name": "Coffee", "currency": "RUB"})
	first := slID(r.JSON(t))
	r = slCall(t, c, "POST", "/catalogs/", map[string]any{"name": "Tea", "currency": "USD"})
	second := slID(r.JSON(t))
	requireJSON(t, slCall(t, c, "GET", "/catalogs/?offset=1&limit=1", nil), 200, map[string]any{"count": 3,
		"catalogs": []any{slCatalog(first, "Coffee", "RUB", 0)}})
	requireJSON(t, slCall(t, c, "GET", p("/catalogs/%d", second), nil), 200, slCatalog(second, "Tea", "USD", 0))
	requireJSON(t, slCall(t, c, "PATCH", p("/catalogs/%d", second), map[string]any{"name": "Green tea"}), 200, slCatalog(second, "Green tea", "USD", 0))
	requireJSON(t, slCall(t, c, "PATCH", p("/catalogs/%d", second), map[string]any{"currency": "EUR"}), 200, slCatalog(second, "Green tea", "EUR", 0))
	requireJSON(t, slCall(t, c, "PATCH", p("/catalogs/%d", second), map[string]any{}), 200, slCatalog(second, "Green tea", "EUR", 0))

	currencies := "Input should be 'RUB', 'USD', 'EUR', 'KZT', 'BYN', 'UZS', 'KGS', 'AMD', 'GEL', 'AZN' or 'CNY'"
	for _, tc := range []struct {
		method, path string
		body         map[string]any
		typ, msg     string
		loc          []any
	}{
		{"POST", "/catalogs/", map[string]any{"currency": "RUB"}, "missing", "Field required", []any{"body", "name"}},
		{"POST", "/catalogs/", map[string]any{"name": "N"}, "missing", "Field required", []any{"body", "currency"}},
		{"POST", "/catalogs/", map[string]any{"name": " ", "currency": "RUB"}, "value_error", "Value error, the name must not be only whitespace", []any{"body", "name"}},
		{"POST", "/catalogs/", map[string]any{"name": strings.Repeat("n", 256), "currency": "RUB"}, "string_too_long", "String should have at most 255 characters", []any{"body", "name"}},
		{"POST", "/catalogs/", map[string]any{"name": "N", "currency": "usd"}, "enum", currencies, []any{"body", "currency"}},
		{"POST", "/catalogs/", map[string]any{"name": "N", "currency": nil}, "string_type", "Input should be a valid string", []any{"body", "currency"}},
		{"PATCH", p("/catalogs/%d", first), map[string]any{"currency": "GBP"}, "enum", currencies, []any{"body", "currency"}},
		{"PATCH", p("/catalogs/%d", first), map[string]any{"name": nil}, "string_type", "Input should be a valid string", []any{"body", "name"}},
		{"PATCH", p("/catalogs/%d", first), map[string]any{"name": ""}, "string_too_short", "String should have at least 1 character", []any{"body", "name"}},
	} {
		slValidation(t, slCall(t, c, tc.method, tc.path, tc.body), tc.typ, tc.msg, tc.loc...)
	}

	theirs := slID(slNewCatalog(t, other, "Theirs", "RUB"))
	slCatalogNotFound(t, slCall(t, c, "GET", p("/catalogs/%d", theirs), nil))
	slCatalogNotFound(t, slCall(t, c, "PATCH", p("/catalogs/%d", theirs), map[string]any{"name": "x"}))
	slCatalogNotFound(t, slCall(t, c, "DELETE", p("/catalogs/%d", theirs), nil))
	slCatalogNotFound(t, slAdd(t, c, theirs, 1))

	r = slCall(t, c, "DELETE", p("/catalogs/%d", first), nil)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	slCatalogNotFound(t, slCall(t, c, "GET", p("/catalogs/%d", first), nil))
	require.EqualValues(t, 2, slOK(t, slCall(t, c, "GET", "/catalogs/", nil))["count"])
}

// TestSalesCatalogMembers: add_products and delete_products, their order
// of errors, no-ops, duplicates, all or nothing, currency rules.
func TestSalesCatalogMembers(t *testing.T) {
	c, other := slCompany(t), slCompany(t)
	rub := slID(slNewProduct(t, c, "Rub", slPrice("RUB", 10)))
	both := slID(slNewProduct(t, c, "Both", slPrice("RUB", 10), slPrice("USD", 1)))
	usd := slID(slNewProduct(t, c, "Usd", slPrice("USD", 1)))
	theirs := slID(slNewProduct(t, other, "Theirs", slPrice("RUB", 1)))
	cat := slID(slNewCatalog(t, c, "Cat", "RUB"))

	requireJSON(t, slAdd(t, c, cat, rub, rub, both), 200, slCatalog(cat, "Cat", "RUB", 2))
	requireJSON(t, slAdd(t, c, cat, rub), 200, slCatalog(cat, "Cat", "RUB", 2)) // a member again: no-op
	require.Equal(t, []any{float64(cat)}, slOK(t, slCall(t, c, "GET", p("/products/%d", rub), nil))["catalog_ids"])

	// Order: body 422, catalog 404, product 404, currency 409.
	slValidation(t, slCall(t, c, "POST", "/catalogs/999999999/add_products", map[string]any{"product_ids": []any{}}),
		"too_short", "List should have at least 1 item after validation, not 0", "body", "product_ids")
	slValidation(t, slCall(t, c, "POST", "/catalogs/999999999/add_products", map[string]any{}),
		"missing", "Field required", "body", "product_ids")
	many := make([]int64, 101)
	slValidation(t, slAdd(t, c, 999999999, many...), "too_long", "List should have at most 100 items after validation, not 101", "body", "product_ids")
	slValidation(t, slCall(t, c, "POST", p("/catalogs/%d/add_products", cat), map[string]any{"product_ids": []any{"a"}}),
		"int_type", "Input should be a valid integer", "body", "product_ids", 0)
	slCatalogNotFound(t, slAdd(t, c, 999999999, theirs))
	slProductNotFound(t, slAdd(t, c, cat, usd, theirs))
	slProductNotFound(t, slAdd(t, c, cat, 999999999))
	slMismatch(t, slAdd(t, c, cat, usd))
	// All or nothing: rub2 is not added beside usd.
	rub2 := slID(slNewProduct(t, c, "Rub2", slPrice("RUB", 3)))
	slMismatch(t, slAdd(t, c, cat, rub2, usd))
	requireJSON(t, slCall(t, c, "GET", p("/catalogs/%d", cat), nil), 200, slCatalog(cat, "Cat", "RUB", 2))

	// A product PATCH dropping the catalog's currency, a catalog PATCH to a
	// currency a member lacks: 409, nothing changes.
	slMismatch(t, slCall(t, c, "PATCH", p("/products/%d", rub), map[string]any{"prices": []any{slPrice("USD", 1)}, "name": "Changed"}))
	got := slOK(t, slCall(t, c, "GET", p("/products/%d", rub), nil))
	require.Equal(t, "Rub", got["name"])
	require.Equal(t, []any{slPrice("RUB", float64(10))}, got["prices"])
	slMismatch(t, slCall(t, c, "PATCH", p("/catalogs/%d", cat), map[string]any{"currency": "USD", "name": "Changed"}))
	requireJSON(t, slCall(t, c, "GET", p("/catalogs/%d", cat), nil), 200, slCatalog(cat, "Cat", "RUB", 2))

	// delete_products: order and no-ops.
	del := func(catalog int64, ids ...int64) response {
		return slCall(t, c, "DELETE", p("/catalogs/%d/delete_products", catalog), map[string]any{"product_ids": ids})
	}
	slCatalogNotFound(t, del(999999999, rub))
	slProductNotFound(t, del(cat, rub, theirs))
	requireJSON(t, del(cat, usd), 200, slCatalog(cat, "Cat", "RUB", 2)) // not a member: no-op
	requireJSON(t, del(cat, rub, rub), 200, slCatalog(cat, "Cat", "RUB", 1))
	// Now the catalog may go to USD: its only member has a USD price.
	requireJSON(t, slCall(t, c, "PATCH", p("/catalogs/%d", cat), map[string]any{"currency": "USD"}), 200, slCatalog(cat, "Cat", "USD", 1))
	// Membership moves no product's updated_at.
	before := slOK(t, slCall(t, c, "GET", p("/products/%d", usd), nil))
	slOK(t, slAdd(t, c, cat, usd))
	after := slOK(t, slCall(t, c, "GET", p("/products/%d", usd), nil))
	require.Equal(t, before["updated_at"], after["updated_at"])
	require.Equal(t, []any{float64(cat)}, after["catalog_ids"])
	// A catalog's delete keeps its products.
	require.Equal(t, 204, slCall(t, c, "DELETE", p("/catalogs/%d", cat), nil).Status)
	require.Equal(t, []any{}, slOK(t, slCall(t, c, "GET", p("/products/%d", usd), nil))["catalog_ids"])
}

// TestSalesCatalogLimits: the company's catalog limit and a catalog's
// product limit hold under parallel calls (the stack runs with 100
// catalogs and 1000 products, so the test fills them).
func TestSalesCatalogLimits(t *testing.T) {
	c := slCompany(t)
	keys := []string{c.Key}
	for i := 0; i < 4; i++ {
		keys = append(keys, newKey(t, c.ID, "sales"))
	}
	for i := 0; i < 96; i++ {
		slNewCatalog(t, c, p("C%d", i), "RUB")
	}
	// 20 parallel creates for the last 4 places.
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := api(t, "POST", slPath(c, "/catalogs/"), map[string]any{"name": "P", "currency": "RUB"}, key(keys[i%len(keys)])...)
			statuses[i] = r.Status
			if r.Status != 200 {
				slErr(t, r, 409, 34007, "SALES_CATALOGS_LIMIT_EXCEEDED", "the company's limit of catalogs is reached")
			}
		}(i)
	}
	wg.Wait()
	n := 0
	for _, s := range statuses {
		if s == 200 {
			n++
		}
	}
	require.Equal(t, 4, n)
	require.EqualValues(t, 100, slOK(t, slCall(t, c, "GET", "/catalogs/", nil))["count"])

}

// TestSalesCatalogProductsLimit: 1000 products a catalog under parallel
// adds, and products_count exact under parallel adds and removes.
func TestSalesCatalogProductsLimit(t *testing.T) {
	c := slCompany(t)
	keys := []string{c.Key}
	for i := 0; i < 4; i++ {
		keys = append(keys, newKey(t, c.ID, "sales"))
	}
	// 1010 products, loaded at the source (the API's create is tested
	// elsewhere; here only membership is).
	db := serviceDB(t, "sales")
	rows, err := db.Query(context.Background(), `WITH p AS (
			INSERT INTO products (company_id, name, payment_object_type, vat)
			SELECT $1, 'Bulk ' || g, 'commodity', 'none' FROM generate_series(1, 1010) g RETURNING id)
		INSERT INTO product_prices (product_id, position, currency, price) SELECT id, 1, 'RUB', 1 FROM p RETURNING product_id`, c.ID)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 1010)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })

	cat := slID(slNewCatalog(t, c, "Big", "RUB"))
	for i := 0; i < 990; i += 100 {
		end := min(i+100, 990)
		requireJSON(t, slAdd(t, c, cat, ids[i:end]...), 200, slCatalog(cat, "Big", "RUB", end))
	}
	// 20 parallel adds of one new product each for the last 10 places.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := call(t, "POST", slPath(c, "/catalogs/%d/add_products", cat), map[string]any{"product_ids": []int64{ids[990+i]}}, key(keys[i%len(keys)])...)
			if r.Status == 200 {
				mu.Lock()
				won++
				mu.Unlock()
				return
			}
			if r.Status != 429 {
				slErr(t, r, 409, 34006, "SALES_CATALOG_PRODUCTS_LIMIT_EXCEEDED", "the catalog's limit of products is reached")
			}
		}(i)
	}
	wg.Wait()
	got := slOK(t, slCall(t, c, "GET", p("/catalogs/%d", cat), nil))
	require.EqualValues(t, 990+won, got["products_count"])
	require.LessOrEqual(t, won, 10)
	// Fill up what rate limits left, then one more is refused, a member
	// again is not (no change).
	for i := 0; got["products_count"].(float64) < 1000 && i < 20; i++ {
		r := slAdd(t, c, cat, ids[990+i])
		if r.Status == 200 {
			got = r.JSON(t)
		}
	}
	require.EqualValues(t, 1000, got["products_count"])
	// A product not in the catalog.
	var outside int64
	members := map[float64]bool{}
	for off := 0; off < 1000; off += 100 {
		for _, pr := range slOK(t, slCall(t, c, "GET", p("/products/?catalog_id=%d&offset=%d", cat, off), nil))["products"].([]any) {
			members[pr.(map[string]any)["id"].(float64)] = true
		}
	}
	require.Len(t, members, 1000)
	for _, id := range ids {
		if !members[float64(id)] {
			outside = id
			break
		}
	}
	slErr(t, slAdd(t, c, cat, outside), 409, 34006, "SALES_CATALOG_PRODUCTS_LIMIT_EXCEEDED", "the catalog's limit of products is reached")
	requireJSON(t, slAdd(t, c, cat, ids[0]), 200, slCatalog(cat, "Big", "RUB", 1000))

	// Parallel adds and removes of overlapping sets on a second catalog:
	// the count is the members' number at the end.
	cat2 := slID(slNewCatalog(t, c, "Busy", "RUB"))
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				set := ids[i*5 : i*5+20] // overlapping windows
				k := key(keys[i%len(keys)])
				if i%3 == 2 {
					api(t, "DELETE", slPath(c, "/catalogs/%d/delete_products", cat2), map[string]any{"product_ids": set}, k...)
				} else {
					api(t, "POST", slPath(c, "/catalogs/%d/add_products", cat2), map[string]any{"product_ids": set}, k...)
				}
			}(i)
		}
		wg.Wait()
		list := slOK(t, slCall(t, c, "GET", p("/products/?catalog_id=%d", cat2), nil))
		got := slOK(t, slCall(t, c, "GET", p("/catalogs/%d", cat2), nil))
		require.Equal(t, list["count"], got["products_count"])
		require.Len(t, list["products"], int(list["count"].(float64)))
	}
}
