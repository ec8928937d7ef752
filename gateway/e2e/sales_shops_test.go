package e2e

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func slShop(id int64, name, link string, scheme bool, c company, catalog, conn int64) map[string]any {
	return map[string]any{"id": id, "name": name, "link": link, "web_app_url": p("%s/storefront/v1/shops/%d", stack.BaseURL, id),
		"use_device_color_scheme": scheme, "company_id": c.ID, "catalog_id": catalog, "connection_id": conn}
}

// TestSalesShops: create (links of telegram_bot and max_bot), list, get,
// PATCH, DELETE and their rules.
func TestSalesShops(t *testing.T) {
	c, other := slCompany(t), slCompany(t)
	cat := slID(slNewCatalog(t, c, "Cat", "RUB"))
	cat2 := slID(slNewCatalog(t, c, "Cat 2", "USD"))
	bot := slBot(t, c, "700100:AAshop")
	ck := newKey(t, c.ID, "connections")
	r := api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "Max", "type": "max_bot", "params": map[string]any{"bot_token": "700200:max"}}, key(ck)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	maxBot := slID(r.JSON(t))
	r = api(t, "POST", cpath(c, "/connections/"), map[string]any{"name": "WA", "type": "whatsapp"}, key(ck)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	wa := slID(r.JSON(t))
	theirBot := slBot(t, other, "700300:AAtheirs")

	r = slCall(t, c, "POST", "/shops/", map[string]any{"name": "Shop", "catalog_id": cat, "connection_id": bot, "link": "x"})
	shop := slID(r.JSON(t))
	requireJSON(t, r, 200, slShop(shop, "Shop", p("https://t.me/sandbox700100_bot?startapp=shop_%d", shop), false, c, cat, bot))
	r = slCall(t, c, "POST", "/shops/", map[string]any{"name": "Max shop", "catalog_id": cat, "connection_id": maxBot, "use_device_color_scheme": true})
	maxShop := slID(r.JSON(t))
	maxWant := slShop(maxShop, "Max shop", p("https://max.ru/sandbox700200_bot?startapp=shop_%d", maxShop), true, c, cat, maxBot)
	requireJSON(t, r, 200, maxWant)
	requireJSON(t, slCall(t, c, "GET", p("/shops/%d", maxShop), nil), 200, maxWant)
	requireJSON(t, slCall(t, c, "GET", "/shops/?limit=1&offset=1", nil), 200, map[string]any{"count": 2, "shops": []any{maxWant}})

	// Errors in order: 422, catalog 404, connection 404, type 400, taken 409.
	create := func(body map[string]any) response { return slCall(t, c, "POST", "/shops/", body) }
	slValidation(t, create(map[string]any{"name": "S", "connection_id": bot}), "missing", "Field required", "body", "catalog_id")
	slValidation(t, create(map[string]any{"name": "S", "catalog_id": cat}), "missing", "Field required", "body", "connection_id")
	slValidation(t, create(map[string]any{"name": "  ", "catalog_id": cat, "connection_id": bot}), "value_error", "Value error, the name must not be only whitespace", "body", "name")
	slValidation(t, create(map[string]any{"name": "S", "catalog_id": cat, "connection_id": bot, "use_device_color_scheme": nil}),
		"bool_type", "Input should be a valid boolean", "body", "use_device_color_scheme")
	slCatalogNotFound(t, create(map[string]any{"name": "S", "catalog_id": 999999999, "connection_id": 999999999}))
	notConn := func(r response) {
		t.Helper()
		requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
	}
	notConn(create(map[string]any{"name": "S", "catalog_id": cat, "connection_id": 999999999}))
	notConn(create(map[string]any{"name": "S", "catalog_id": cat, "connection_id": theirBot}))
	slErr(t, create(map[string]any{"name": "S", "catalog_id": cat, "connection_id": wa}), 400, 34009,
		"SALES_SHOP_CONNECTION_TYPE_NOT_SUPPORTED", "a shop needs a telegram_bot or max_bot connection")
	slErr(t, create(map[string]any{"name": "S", "catalog_id": cat2, "connection_id": bot}), 409, 34010,
		"SALES_SHOP_CONNECTION_TAKEN", "the connection has a shop already")

	// PATCH.
	path := p("/shops/%d", shop)
	requireJSON(t, slCall(t, c, "PATCH", path, map[string]any{"name": "Renamed", "catalog_id": cat2, "use_device_color_scheme": true}), 200,
		slShop(shop, "Renamed", p("https://t.me/sandbox700100_bot?startapp=shop_%d", shop), true, c, cat2, bot))
	slValidation(t, slCall(t, c, "PATCH", path, map[string]any{"connection_id": maxBot}), "value_error",
		"Value error, a shop's connection cannot be changed: its link is given out", "body", "connection_id")
	slValidation(t, slCall(t, c, "PATCH", path, map[string]any{"connection_id": bot}), "value_error",
		"Value error, a shop's connection cannot be changed: its link is given out", "body", "connection_id")
	slValidation(t, slCall(t, c, "PATCH", path, map[string]any{"name": nil}), "string_type", "Input should be a valid string", "body", "name")
	slValidation(t, slCall(t, c, "PATCH", path, map[string]any{"catalog_id": nil}), "int_type", "Input should be a valid integer", "body", "catalog_id")
	slCatalogNotFound(t, slCall(t, c, "PATCH", path, map[string]any{"catalog_id": slID(slNewCatalog(t, other, "T", "RUB"))}))
	theirCat := slID(slNewCatalog(t, other, "T2", "RUB"))
	theirShop := slID(slOK(t, slCall(t, other, "POST", "/shops/", map[string]any{"name": "T", "catalog_id": theirCat, "connection_id": theirBot})))
	slShopNotFound(t, slCall(t, c, "GET", p("/shops/%d", theirShop), nil))
	slShopNotFound(t, slCall(t, c, "PATCH", p("/shops/%d", theirShop), map[string]any{"name": "x"}))
	slShopNotFound(t, slCall(t, c, "DELETE", p("/shops/%d", theirShop), nil))

	// A catalog a shop uses cannot go; once the shop is gone it can.
	slErr(t, slCall(t, c, "DELETE", p("/catalogs/%d", cat2), nil), 409, 34008, "SALES_CATALOG_IN_USE", "a shop uses the catalog")
	r = slCall(t, c, "DELETE", path, nil)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	slShopNotFound(t, slCall(t, c, "GET", path, nil))
	require.Equal(t, 204, slCall(t, c, "DELETE", p("/catalogs/%d", cat2), nil).Status)
	// Its bot may take a new shop; of parallel creates on one bot, one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := create(map[string]any{"name": p("Again %d", i), "catalog_id": cat, "connection_id": bot})
			if r.Status == 200 {
				mu.Lock()
				won++
				mu.Unlock()
				return
			}
			slErr(t, r, 409, 34010, "SALES_SHOP_CONNECTION_TAKEN", "the connection has a shop already")
		}(i)
	}
	wg.Wait()
	require.Equal(t, 1, won)
}

// TestSalesAccess: the sales scope, sales:read reads only, no scope 403,
// and POST /files/ takes a sales key.
func TestSalesAccess(t *testing.T) {
	c := newCompany(t, nil)
	read := newKey(t, c.ID, "sales:read")
	none := newKey(t, c.ID, "messaging")
	full := newKey(t, c.ID, "sales")
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	r := api(t, "POST", slPath(c, "/products/"), slProductBody("P", slPrice("RUB", 1)), key(full)...)
	prod := slID(slOK(t, r))
	for _, k := range []string{read, full} {
		require.Equal(t, 200, api(t, "GET", slPath(c, "/products/%d", prod), nil, key(k)...).Status)
		require.Equal(t, 200, api(t, "GET", slPath(c, "/catalogs/"), nil, key(k)...).Status)
		require.Equal(t, 200, api(t, "GET", slPath(c, "/shops/"), nil, key(k)...).Status)
	}
	for _, k := range []string{read, none} {
		r := api(t, "POST", slPath(c, "/catalogs/"), map[string]any{"name": "C", "currency": "RUB"}, key(k)...)
		require.Equal(t, 403, r.Status, "%s", r.Body)
		requireBody(t, forbidden, r)
		r = api(t, "PATCH", slPath(c, "/products/%d", prod), map[string]any{"name": "x"}, key(k)...)
		require.Equal(t, 403, r.Status, "%s", r.Body)
		r = api(t, "DELETE", slPath(c, "/products/%d", prod), nil, key(k)...)
		require.Equal(t, 403, r.Status, "%s", r.Body)
	}
	r = api(t, "GET", slPath(c, "/products/"), nil, key(none)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, forbidden, r)
	r, _ = upload(t, c.ID, full, filePart{field: "file", filename: "p.png", contentType: "image/png", size: 64, head: pngMagic})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r, _ = upload(t, c.ID, read, filePart{field: "file", filename: "p.png", contentType: "image/png", size: 64, head: pngMagic})
	require.Equal(t, 403, r.Status, "%s", r.Body)
}
