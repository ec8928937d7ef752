package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSalesProductCreate: the answer in full, defaults, null category and
// sku, prices as numbers in the order sent, created_at = updated_at.
func TestSalesProductCreate(t *testing.T) {
	c := slCompany(t)
	r := slCall(t, c, "POST", "/products/", map[string]any{
		"name": "  Beans ", "description": "Arabica", "payment_object_type": "service", "vat": "vat20",
		"category": "Coffee", "sku": "B-1", "images": []any{"https://cdn.example.com/b.jpg"},
		"prices": []any{slPrice("USD", 12.5), slPrice("RUB", 990)},
		"id":     5, "catalog_ids": []any{1}, "created_at": "2020-01-01T00:00:00Z", // ignored
	})
	got := requireJSON(t, r, 200, map[string]any{"id": anyID, "name": "  Beans ", "description": "Arabica",
		"payment_object_type": "service", "category": "Coffee", "vat": "vat20", "sku": "B-1",
		"images": []any{"https://cdn.example.com/b.jpg"}, "prices": []any{slPrice("USD", 12.5), slPrice("RUB", 990)},
		"catalog_ids": []any{}, "created_at": anyTime, "updated_at": anyTime}).(map[string]any)
	require.Equal(t, got["created_at"], got["updated_at"])
	require.Contains(t, string(r.Body), `"price":12.5}`)

	r = slCall(t, c, "POST", "/products/", slProductBody("Plain", slPrice("RUB", 0.01)))
	plain := requireJSON(t, r, 200, map[string]any{"id": anyID, "name": "Plain", "description": "",
		"payment_object_type": "commodity", "category": nil, "vat": "none", "sku": nil, "images": []any{},
		"prices": []any{slPrice("RUB", 0.01)}, "catalog_ids": []any{}, "created_at": anyTime, "updated_at": anyTime}).(map[string]any)
	// Explicit nulls are "none" for category and sku.
	r = slCall(t, c, "POST", "/products/", map[string]any{"name": "Nulls", "category": nil, "sku": nil,
		"prices": []any{slPrice("EUR", 999999999.99)}})
	nulls := slOK(t, r)
	require.Nil(t, nulls["category"])
	require.Nil(t, nulls["sku"])
	require.Contains(t, string(r.Body), `"price":999999999.99`)

	// Read back the same.
	r = slCall(t, c, "GET", p("/products/%d", slID(plain)), nil)
	requireJSON(t, r, 200, plain)
}

// TestSalesProductValidation: every field rule is a 422 naming the field.
func TestSalesProductValidation(t *testing.T) {
	c := slCompany(t)
	ok := func() map[string]any { return slProductBody("N", slPrice("RUB", 1)) }
	with := func(k string, v any) map[string]any { b := ok(); b[k] = v; return b }
	price := func(v any) map[string]any {
		return with("prices", []any{map[string]any{"currency": "RUB", "price": v}})
	}
	cases := []struct {
		name string
		body map[string]any
		typ  string
		msg  string
		loc  []any
	}{
		{"name left out", map[string]any{"prices": []any{slPrice("RUB", 1)}}, "missing", "Field required", []any{"body", "name"}},
		{"name empty", with("name", ""), "string_too_short", "String should have at least 1 character", []any{"body", "name"}},
		{"name too long", with("name", strings.Repeat("я", 256)), "string_too_long", "String should have at most 255 characters", []any{"body", "name"}},
		{"name whitespace", with("name", " \t\n"), "value_error", "Value error, the name must not be only whitespace", []any{"body", "name"}},
		{"name null", with("name", nil), "string_type", "Input should be a valid string", []any{"body", "name"}},
		{"name number", with("name", 5), "string_type", "Input should be a valid string", []any{"body", "name"}},
		{"description too long", with("description", strings.Repeat("d", 4097)), "string_too_long", "String should have at most 4096 characters", []any{"body", "description"}},
		{"description null", with("description", nil), "string_type", "Input should be a valid string", []any{"body", "description"}},
		{"payment_object_type", with("payment_object_type", "Commodity"), "enum",
			"Input should be 'commodity', 'excise', 'job', 'service', 'gambling_bet', 'gambling_prize', 'lottery', 'lottery_prize', 'intellectual_activity', 'payment', 'agent_commission', 'composite' or 'another'",
			[]any{"body", "payment_object_type"}},
		{"payment_object_type null", with("payment_object_type", nil), "string_type", "Input should be a valid string", []any{"body", "payment_object_type"}},
		{"vat", with("vat", "vat18"), "enum",
			"Input should be 'none', 'vat0', 'vat5', 'vat7', 'vat10', 'vat20', 'vat22', 'vat25', 'vat105', 'vat107', 'vat110', 'vat120' or 'vat122'",
			[]any{"body", "vat"}},
		{"category empty", with("category", ""), "string_too_short", "String should have at least 1 character", []any{"body", "category"}},
		{"category too long", with("category", strings.Repeat("c", 129)), "string_too_long", "String should have at most 128 characters", []any{"body", "category"}},
		{"category number", with("category", 1), "string_type", "Input should be a valid string", []any{"body", "category"}},
		{"sku empty", with("sku", ""), "string_too_short", "String should have at least 1 character", []any{"body", "sku"}},
		{"sku too long", with("sku", strings.Repeat("s", 65)), "string_too_long", "String should have at most 64 characters", []any{"body", "sku"}},
		{"images too many", with("images", []any{"https://a/1", "https://a/2", "https://a/3", "https://a/4", "https://a/5", "https://a/6",
			"https://a/7", "https://a/8", "https://a/9", "https://a/10", "https://a/11"}), "too_long",
			"List should have at most 10 items after validation, not 11", []any{"body", "images"}},
		{"images repeated", with("images", []any{"https://a/1", "https://a/1"}), "value_error",
			"Value error, list items should be unique: 'https://a/1' is repeated", []any{"body", "images"}},
		{"image too long", with("images", []any{"https://a/" + strings.Repeat("x", 2039)}), "string_too_long",
			"String should have at most 2048 characters", []any{"body", "images", 0}},
		{"images null", with("images", nil), "list_type", "Input should be a valid list", []any{"body", "images"}},
		{"prices left out", map[string]any{"name": "N"}, "missing", "Field required", []any{"body", "prices"}},
		{"prices empty", with("prices", []any{}), "too_short", "List should have at least 1 item after validation, not 0", []any{"body", "prices"}},
		{"prices null", with("prices", nil), "list_type", "Input should be a valid list", []any{"body", "prices"}},
		{"price a string", price("10"), "float_type", "Input should be a valid number", []any{"body", "prices", 0, "price"}},
		{"price null", price(nil), "float_type", "Input should be a valid number", []any{"body", "prices", 0, "price"}},
		{"price left out", with("prices", []any{map[string]any{"currency": "RUB"}}), "missing", "Field required", []any{"body", "prices", 0, "price"}},
		{"price zero", price(0), "greater_than", "Input should be greater than 0", []any{"body", "prices", 0, "price"}},
		{"price negative", price(-1), "greater_than", "Input should be greater than 0", []any{"body", "prices", 0, "price"}},
		{"price three decimals", price(1.005), "decimal_max_places", "Decimal input should have no more than 2 decimal places", []any{"body", "prices", 0, "price"}},
		{"price too big", price(1000000000), "less_than_equal", "Input should be less than or equal to 999999999.99", []any{"body", "prices", 0, "price"}},
		{"currency lower case", with("prices", []any{slPrice("rub", 1)}), "enum",
			"Input should be 'RUB', 'USD', 'EUR', 'KZT', 'BYN', 'UZS', 'KGS', 'AMD', 'GEL', 'AZN' or 'CNY'", []any{"body", "prices", 0, "currency"}},
		{"currency unknown", with("prices", []any{slPrice("RUB", 1), slPrice("GBP", 1)}), "enum",
			"Input should be 'RUB', 'USD', 'EUR', 'KZT', 'BYN', 'UZS', 'KGS', 'AMD', 'GEL', 'AZN' or 'CNY'", []any{"body", "prices", 1, "currency"}},
		{"currency twice", with("prices", []any{slPrice("RUB", 1), slPrice("USD", 1), slPrice("RUB", 2)}), "value_error",
			"Value error, RUB is given twice: one price per currency", []any{"body", "prices", 2, "currency"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slValidation(t, slCall(t, c, "POST", "/products/", tc.body), tc.typ, tc.msg, tc.loc...)
		})
	}
	// Nothing was stored.
	requireJSON(t, slCall(t, c, "GET", "/products/", nil), 200, map[string]any{"count": 0, "products": []any{}})
}

// TestSalesProductImages: uploaded image files of the company and https
// links are taken; anything else is 400 34004 and stores nothing.
func TestSalesProductImages(t *testing.T) {
	c := slCompany(t)
	other := slCompany(t)
	png := func(co company) string {
		r, _ := upload(t, co.ID, co.Key, filePart{field: "file", filename: "p.png", contentType: "image/png", size: 64, head: pngMagic})
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON(t)["url"].(string)
	}
	mine, theirs := png(c), png(other)
	r, _ := upload(t, c.ID, c.Key, filePart{field: "file", filename: "a.pdf", contentType: "application/pdf", size: 64, head: []byte("%PDF-1.4\n")})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	pdf := r.JSON(t)["url"].(string)

	body := func(images ...any) map[string]any {
		b := slProductBody("Pic", slPrice("RUB", 1))
		b["images"] = images
		return b
	}
	got := slOK(t, slCall(t, c, "POST", "/products/", body(mine, "https://cdn.example.com/x.webp?s=1")))
	require.Equal(t, []any{mine, "https://cdn.example.com/x.webp?s=1"}, got["images"])

	refused := func(img string) {
		t.Helper()
		r := slCall(t, c, "POST", "/products/", body(mine, img))
		slErr(t, r, 400, 34004, "SALES_PRODUCT_IMAGE_URL_NOT_ALLOWED",
			img+" is neither an image file the company uploaded nor an https link")
		r = slCall(t, c, "PATCH", p("/products/%d", slID(got)), map[string]any{"images": []any{img}})
		slErr(t, r, 400, 34004, "SALES_PRODUCT_IMAGE_URL_NOT_ALLOWED",
			img+" is neither an image file the company uploaded nor an https link")
	}
	refused(theirs)                                  // another company's upload
	refused(pdf)                                     // not an image
	refused(mine + "x")                              // an unknown file
	refused("http://cdn.example.com/x.png")          // not https
	refused("ftp://cdn.example.com/x.png")           // not https
	refused("/files/abc")                            // not absolute
	refused("cdn.example.com/x.png")                 // not absolute
	refused(stack.BaseURL + "/v2/companies/1/files") // our host, not a file
	requireJSON(t, slCall(t, c, "GET", p("/products/%d", slID(got)), nil), 200, got)
	requireJSON(t, slCall(t, c, "GET", "/products/", nil), 200, map[string]any{"count": 1, "products": []any{got}})
}

// TestSalesProductPatch: absent fields stay, images and prices replace,
// null clears category and sku only, updated_at moves.
func TestSalesProductPatch(t *testing.T) {
	c := slCompany(t)
	r := slCall(t, c, "POST", "/products/", map[string]any{"name": "Beans", "category": "Coffee", "sku": "B-1",
		"images": []any{"https://a.example/1.png"}, "prices": []any{slPrice("RUB", 100)}})
	orig := slOK(t, r)
	path := p("/products/%d", slID(orig))
	time.Sleep(10 * time.Millisecond)

	r = slCall(t, c, "PATCH", path, map[string]any{"description": "New"})
	got := slOK(t, r)
	require.Equal(t, "New", got["description"])
	require.Equal(t, "Beans", got["name"])
	require.Equal(t, "Coffee", got["category"])
	require.Equal(t, "B-1", got["sku"])
	require.Equal(t, orig["created_at"], got["created_at"])
	require.NotEqual(t, orig["updated_at"], got["updated_at"])

	r = slCall(t, c, "PATCH", path, map[string]any{"category": nil, "sku": nil, "images": []any{},
		"prices": []any{slPrice("USD", 1.5), slPrice("RUB", 99.99)}, "vat": "vat0", "payment_object_type": "job", "name": "Beans 2",
		"id": 77, "catalog_ids": []any{5}})
	requireJSON(t, r, 200, map[string]any{"id": slID(orig), "name": "Beans 2", "description": "New", "payment_object_type": "job",
		"category": nil, "vat": "vat0", "sku": nil, "images": []any{}, "prices": []any{slPrice("USD", 1.5), slPrice("RUB", 99.99)},
		"catalog_ids": []any{}, "created_at": orig["created_at"], "updated_at": anyTime})
	// An empty body changes nothing but updated_at.
	r = slCall(t, c, "PATCH", path, map[string]any{})
	require.Equal(t, 200, r.Status, "%s", r.Body)

	for _, tc := range []struct {
		body map[string]any
		typ  string
		msg  string
		loc  []any
	}{
		{map[string]any{"name": nil}, "string_type", "Input should be a valid string", []any{"body", "name"}},
		{map[string]any{"name": "  "}, "value_error", "Value error, the name must not be only whitespace", []any{"body", "name"}},
		{map[string]any{"description": nil}, "string_type", "Input should be a valid string", []any{"body", "description"}},
		{map[string]any{"vat": nil}, "string_type", "Input should be a valid string", []any{"body", "vat"}},
		{map[string]any{"images": nil}, "list_type", "Input should be a valid list", []any{"body", "images"}},
		{map[string]any{"images": []any{1}}, "string_type", "Input should be a valid string", []any{"body", "images", 0}},
		{map[string]any{"images": []any{"https://a/1", "https://a/1"}}, "value_error", "Value error, list items should be unique: 'https://a/1' is repeated", []any{"body", "images"}},
		{map[string]any{"prices": nil}, "list_type", "Input should be a valid list", []any{"body", "prices"}},
		{map[string]any{"prices": []any{}}, "too_short", "List should have at least 1 item after validation, not 0", []any{"body", "prices"}},
		{map[string]any{"prices": []any{5}}, "dict_type", "Input should be a valid dictionary or object", []any{"body", "prices", 0}},
		{map[string]any{"prices": []any{slPrice("RUB", "5")}}, "float_type", "Input should be a valid number", []any{"body", "prices", 0, "price"}},
		{map[string]any{"prices": []any{slPrice("RUB", 0.001)}}, "decimal_max_places", "Decimal input should have no more than 2 decimal places", []any{"body", "prices", 0, "price"}},
		{map[string]any{"prices": []any{map[string]any{"price": 1}}}, "missing", "Field required", []any{"body", "prices", 0, "currency"}},
		{map[string]any{"prices": []any{slPrice("RUB", 1), slPrice("RUB", 2)}}, "value_error", "Value error, RUB is given twice: one price per currency", []any{"body", "prices", 1, "currency"}},
		{map[string]any{"sku": ""}, "string_too_short", "String should have at least 1 character", []any{"body", "sku"}},
	} {
		slValidation(t, slCall(t, c, "PATCH", path, tc.body), tc.typ, tc.msg, tc.loc...)
	}
	// Prices are read exactly, in a PATCH as on create: no literal passes
	// through a float (1.0000000000000001 would read as 1).
	for _, path := range []string{"/products/", path} {
		method := map[bool]string{true: "POST", false: "PATCH"}[path == "/products/"]
		r := slCall(t, c, method, path, `{"name": "Exact", "prices": [{"currency": "RUB", "price": 1.0000000000000001}]}`)
		slValidation(t, r, "decimal_max_places", "Decimal input should have no more than 2 decimal places", "body", "prices", 0, "price")
		r = slCall(t, c, method, path, `{"name": "Exact", "prices": [{"currency": "RUB", "price": 123456789.125e0}]}`)
		slValidation(t, r, "decimal_max_places", "Decimal input should have no more than 2 decimal places", "body", "prices", 0, "price")
	}
	got = slOK(t, slCall(t, c, "PATCH", path, `{"prices": [{"currency": "RUB", "price": 999999999.99}, {"currency": "USD", "price": 1e-2}]}`))
	require.Equal(t, []any{slPrice("RUB", 999999999.99), slPrice("USD", 0.01)}, got["prices"])
	// images: [] clears, left out keeps.
	got = slOK(t, slCall(t, c, "PATCH", path, map[string]any{"images": []any{"https://a.example/2.png"}}))
	require.Equal(t, []any{"https://a.example/2.png"}, got["images"])
	got = slOK(t, slCall(t, c, "PATCH", path, map[string]any{"name": "Kept images"}))
	require.Equal(t, []any{"https://a.example/2.png"}, got["images"])
	got = slOK(t, slCall(t, c, "PATCH", path, map[string]any{"images": []any{}}))
	require.Equal(t, []any{}, got["images"])

	// 422 before 404.
	slValidation(t, slCall(t, c, "PATCH", "/products/999999999", map[string]any{"name": nil}), "string_type", "Input should be a valid string", "body", "name")
	slProductNotFound(t, slCall(t, c, "PATCH", "/products/999999999", map[string]any{"name": "x"}))
}

// TestSalesProductSKU: unique in the company (exact match), free again
// after a delete; another company may use it.
func TestSalesProductSKU(t *testing.T) {
	c, other := slCompany(t), slCompany(t)
	b := slProductBody("A", slPrice("RUB", 1))
	b["sku"] = "X-1"
	first := slOK(t, slCall(t, c, "POST", "/products/", b))
	conflict := func(r response) {
		t.Helper()
		slErr(t, r, 409, 34003, "SALES_PRODUCT_SKU_CONFLICT", "another product of the company has this sku")
	}
	conflict(slCall(t, c, "POST", "/products/", b))
	b2 := slProductBody("B", slPrice("RUB", 1))
	b2["sku"] = "x-1" // another sku: exact match
	second := slOK(t, slCall(t, c, "POST", "/products/", b2))
	conflict(slCall(t, c, "PATCH", p("/products/%d", slID(second)), map[string]any{"sku": "X-1"}))
	slOK(t, slCall(t, other, "POST", "/products/", b))
	// Its own sku again is no conflict.
	slOK(t, slCall(t, c, "PATCH", p("/products/%d", slID(first)), map[string]any{"sku": "X-1"}))
	require.Equal(t, 204, slCall(t, c, "DELETE", p("/products/%d", slID(first)), nil).Status)
	slOK(t, slCall(t, c, "PATCH", p("/products/%d", slID(second)), map[string]any{"sku": "X-1"}))
}

// TestSalesProductListAndDelete: paging, count, id ascending, the catalog
// filter, 404s of other companies' ids, DELETE 204 with no body.
func TestSalesProductListAndDelete(t *testing.T) {
	c, other := slCompany(t), slCompany(t)
	var ids []int64
	for i := 0; i < 5; i++ {
		ids = append(ids, slID(slNewProduct(t, c, p("P%d", i))))
	}
	theirs := slID(slNewProduct(t, other, "Theirs"))
	list := func(q string) map[string]any { return slOK(t, slCall(t, c, "GET", "/products/"+q, nil)) }
	got := list("?limit=2&offset=1")
	require.EqualValues(t, 5, got["count"])
	require.Len(t, got["products"], 2)
	require.EqualValues(t, ids[1], got["products"].([]any)[0].(map[string]any)["id"])
	require.EqualValues(t, ids[2], got["products"].([]any)[1].(map[string]any)["id"])
	got = list("?offset=10")
	require.EqualValues(t, 5, got["count"])
	require.Empty(t, got["products"])
	require.Len(t, list("")["products"], 5)

	cat := slID(slNewCatalog(t, c, "Cat", "RUB"))
	slOK(t, slAdd(t, c, cat, ids[3], ids[1]))
	got = list(p("?catalog_id=%d", cat))
	require.EqualValues(t, 2, got["count"])
	require.EqualValues(t, []any{float64(cat)}, got["products"].([]any)[0].(map[string]any)["catalog_ids"])
	require.EqualValues(t, ids[1], got["products"].([]any)[0].(map[string]any)["id"])
	otherCat := slID(slNewCatalog(t, other, "Theirs", "RUB"))
	slCatalogNotFound(t, slCall(t, c, "GET", p("/products/?catalog_id=%d", otherCat), nil))

	slValidation(t, slCall(t, c, "GET", "/products/?limit=0", nil), "greater_than_equal", "Input should be greater than or equal to 1", "query", "limit")
	slValidation(t, slCall(t, c, "GET", "/products/?limit=101", nil), "less_than_equal", "Input should be less than or equal to 100", "query", "limit")
	slValidation(t, slCall(t, c, "GET", "/products/?offset=-1", nil), "greater_than_equal", "Input should be greater than or equal to 0", "query", "offset")

	for _, m := range []string{"GET", "DELETE"} {
		slProductNotFound(t, slCall(t, c, m, p("/products/%d", theirs), nil))
	}
	slProductNotFound(t, slCall(t, c, "PATCH", p("/products/%d", theirs), map[string]any{"name": "Mine"}))
	require.Equal(t, "Theirs", slOK(t, slCall(t, other, "GET", p("/products/%d", theirs), nil))["name"])

	r := slCall(t, c, "DELETE", p("/products/%d", ids[1]), nil)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	slProductNotFound(t, slCall(t, c, "GET", p("/products/%d", ids[1]), nil))
	slProductNotFound(t, slCall(t, c, "DELETE", p("/products/%d", ids[1]), nil))
	// It left its catalog.
	requireJSON(t, slCall(t, c, "GET", p("/catalogs/%d", cat), nil), 200,
		map[string]any{"id": cat, "name": "Cat", "currency": "RUB", "products_count": 1})
}
