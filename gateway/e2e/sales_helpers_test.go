package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --- Helpers of the sales tests (products, catalogs, shops, storefront).

// slCompany is a company with a key holding only the sales scope.
func slCompany(t *testing.T) company {
	t.Helper()
	c := newCompany(t, nil)
	c.Key = newKey(t, c.ID, "sales")
	return c
}

func slPath(c company, format string, a ...any) string { return cpath(c, "/sales"+format, a...) }

func slCall(t *testing.T, c company, method, path string, body any) response {
	t.Helper()
	return api(t, method, slPath(c, "%s", path), body, key(c.Key)...)
}

// slOK is a 200 answer's body.
func slOK(t *testing.T, r response) map[string]any {
	t.Helper()
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

func slID(v map[string]any) int64 { return int64(v["id"].(float64)) }

// slPrice is one {currency, price} as answered.
func slPrice(currency string, price any) map[string]any {
	return map[string]any{"currency": currency, "price": price}
}

// slProductBody is a minimal valid product.
func slProductBody(name string, prices ...map[string]any) map[string]any {
	list := make([]any, len(prices))
	for i, p := range prices {
		list[i] = p
	}
	return map[string]any{"name": name, "prices": list}
}

func slNewProduct(t *testing.T, c company, name string, prices ...map[string]any) map[string]any {
	t.Helper()
	if len(prices) == 0 {
		prices = []map[string]any{slPrice("RUB", 100)}
	}
	return slOK(t, slCall(t, c, "POST", "/products/", slProductBody(name, prices...)))
}

func slNewCatalog(t *testing.T, c company, name, currency string) map[string]any {
	t.Helper()
	return slOK(t, slCall(t, c, "POST", "/catalogs/", map[string]any{"name": name, "currency": currency}))
}

func slAdd(t *testing.T, c company, catalog int64, ids ...int64) response {
	t.Helper()
	return slCall(t, c, "POST", p("/catalogs/%d/add_products", catalog), map[string]any{"product_ids": ids})
}

// slBot is a telegram_bot connection of the company (made with its own
// key, which needs the connections scope) and its bot token.
func slBot(t *testing.T, c company, token string) int64 {
	t.Helper()
	k := newKey(t, c.ID, "connections")
	r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Shop bot", "type": "telegram_bot",
		"params": map[string]any{"bot_token": token}}, key(k)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return slID(r.JSON(t))
}

// slErr checks an error answer in full, detail {}.
func slErr(t *testing.T, r response, status, code int, name, message string) {
	t.Helper()
	requireJSON(t, r, status, map[string]any{"error_code": code, "error_name": name, "message": message, "detail": map[string]any{}})
}

// slValidation checks a 422 with one error in full.
func slValidation(t *testing.T, r response, typ, message string, loc ...any) {
	t.Helper()
	requireJSON(t, r, 422, map[string]any{"error_code": 1, "error_name": "REQUEST_VALIDATION_ERROR", "message": message,
		"detail": map[string]any{"errors": []any{map[string]any{"location": loc, "message": message, "type": typ}}}})
}

func slProductNotFound(t *testing.T, r response) {
	t.Helper()
	slErr(t, r, 404, 34000, "SALES_PRODUCT_NOT_FOUND", "product not found")
}

func slCatalogNotFound(t *testing.T, r response) {
	t.Helper()
	slErr(t, r, 404, 34001, "SALES_CATALOG_NOT_FOUND", "catalog not found")
}

func slShopNotFound(t *testing.T, r response) {
	t.Helper()
	slErr(t, r, 404, 34002, "SALES_SHOP_NOT_FOUND", "shop not found")
}

func slMismatch(t *testing.T, r response) {
	t.Helper()
	slErr(t, r, 409, 34005, "SALES_CATALOG_CURRENCY_MISMATCH", "a product of the catalog has no price in the catalog's currency")
}
