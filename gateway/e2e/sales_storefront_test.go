package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slSign is launch data as the messenger makes it: fields plus hash, the
// hex HMAC-SHA256 of the sorted key=value lines keyed by
// HMAC-SHA256("WebAppData", token). Written out here, not taken from the
// service, so that a shared mistake cannot pass.
func slSign(token string, fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + fields[k]
	}
	secret := hmac.New(sha256.New, []byte("WebAppData"))
	secret.Write([]byte(token))
	m := hmac.New(sha256.New, secret.Sum(nil))
	m.Write([]byte(strings.Join(lines, "\n")))
	v := url.Values{}
	for k, val := range fields {
		v.Set(k, val)
	}
	v.Set("hash", hex.EncodeToString(m.Sum(nil)))
	return v.Encode()
}

// slLaunch is a buyer's fresh launch data for the bot of token.
func slLaunch(token, queryID string, userID int64, at time.Time) string {
	user, _ := json.Marshal(map[string]any{"id": userID, "first_name": "Ann", "last_name": "Buyer", "username": "ann_buys", "language_code": "en"})
	return slSign(token, map[string]string{"query_id": queryID, "user": string(user), "auth_date": strconv.FormatInt(at.Unix(), 10),
		"start_param": "shop_1", "chat_instance": "-100", "chat_type": "sender"})
}

// without is launch data with one field left out.
func without(initData, field string) string {
	v, _ := url.ParseQuery(initData)
	v.Del(field)
	return v.Encode()
}

func tma(initData string) []string { return []string{"Authorization", "tma " + initData} }

// slShopFixture is a company with a catalog of two products (one with an
// image) and a shop on a telegram bot.
type slShopFixture struct {
	c            company
	token        string
	bot          int64
	catalog      int64
	shop         int64
	beans, mugs  int64
	beansProduct map[string]any
}

func slNewShop(t *testing.T) slShopFixture {
	t.Helper()
	c := slCompany(t)
	f := slShopFixture{c: c, token: p("%d:AAsecret-%d", 800000+time.Now().UnixNano()%100000, time.Now().UnixNano())}
	f.bot = slBot(t, c, f.token)
	r := slCall(t, c, "POST", "/products/", map[string]any{"name": "Espresso beans", "description": "1 kg, medium roast",
		"category": "Coffee", "sku": "EB-1", "images": []any{"https://cdn.example.com/beans.jpg"},
		"prices": []any{slPrice("USD", 12), slPrice("RUB", 1290.5)}})
	f.beansProduct = slOK(t, r)
	f.beans = slID(f.beansProduct)
	f.mugs = slID(slNewProduct(t, c, "Mug", slPrice("RUB", 450)))
	other := slID(slNewProduct(t, c, "Not in the catalog", slPrice("RUB", 1)))
	_ = other
	f.catalog = slID(slNewCatalog(t, c, "Coffee", "RUB"))
	slOK(t, slAdd(t, c, f.catalog, f.mugs, f.beans))
	f.shop = slID(slOK(t, slCall(t, c, "POST", "/shops/", map[string]any{"name": "Coffee corner", "catalog_id": f.catalog,
		"connection_id": f.bot, "use_device_color_scheme": true})))
	return f
}

func slUnauthorized(t *testing.T, r response) {
	t.Helper()
	slErr(t, r, 401, 34011, "SALES_STOREFRONT_UNAUTHORIZED",
		"the launch data is missing, malformed, not signed by the shop's bot or too old")
}

// TestSalesStorefrontCatalog: the signed read in full, and every refusal.
func TestSalesStorefrontCatalog(t *testing.T) {
	f := slNewShop(t)
	now := time.Now()
	path := p("/storefront/v1/shops/%d/catalog", f.shop)
	want := map[string]any{
		"shop":    map[string]any{"id": f.shop, "name": "Coffee corner", "use_device_color_scheme": true},
		"catalog": map[string]any{"id": f.catalog, "name": "Coffee", "currency": "RUB"},
		"products": []any{
			map[string]any{"id": f.beans, "name": "Espresso beans", "description": "1 kg, medium roast", "category": "Coffee",
				"sku": "EB-1", "images": []any{"https://cdn.example.com/beans.jpg"}, "price": 1290.5},
			map[string]any{"id": f.mugs, "name": "Mug", "description": "", "category": nil, "sku": nil, "images": []any{}, "price": 450},
		},
	}
	launch := slLaunch(f.token, "AAQ1", 5550001, now)
	requireJSON(t, call(t, "GET", path, nil, tma(launch)...), 200, want)
	// A little ahead of the server's clock is skew, not forgery.
	requireJSON(t, call(t, "GET", path, nil, tma(slLaunch(f.token, "AAQ2", 5550001, now.Add(4*time.Minute)))...), 200, want)

	// Refusals: no header, another scheme, malformed, no hash, no
	// auth_date, a field changed, another bot's token, too old, too far
	// ahead, a key twice.
	refused := map[string][]string{
		"no header":     nil,
		"bearer":        {"Authorization", "Bearer " + launch},
		"no data":       {"Authorization", "tma "},
		"TMA":           {"Authorization", "TMA " + launch},
		"malformed":     tma("%zz"),
		"no hash":       tma(without(launch, "hash")),
		"no auth_date":  tma(slSign(f.token, map[string]string{"query_id": "X", "user": `{"id":1}`})),
		"tampered":      tma(strings.Replace(launch, "5550001", "5550002", 1)),
		"another bot":   tma(slLaunch(f.token+"x", "AAQ3", 5550001, now)),
		"too old":       tma(slLaunch(f.token, "AAQ4", 5550001, now.Add(-24*time.Hour-time.Minute))),
		"too far ahead": tma(slLaunch(f.token, "AAQ5", 5550001, now.Add(10*time.Minute))),
		"key twice":     tma(launch + "&query_id=AAQ6"),
	}
	for name, h := range refused {
		t.Run(name, func(t *testing.T) {
			slUnauthorized(t, call(t, "GET", path, nil, h...))
		})
	}
	// Another shop's bot signs nothing for this shop.
	g := slNewShop(t)
	slUnauthorized(t, call(t, "GET", path, nil, tma(slLaunch(g.token, "AAQ7", 5550001, now))...))

	// A MAX bot's shop: its launch data is signed alike with its token.
	mk := newKey(t, f.c.ID, "connections")
	maxToken := p("%d:max-%d", 900000+time.Now().UnixNano()%100000, time.Now().UnixNano())
	rm := api(t, "POST", cpath(f.c, "/connections/"), map[string]any{"name": "MAX shop bot", "type": "max_bot",
		"params": map[string]any{"bot_token": maxToken}}, key(mk)...)
	require.Equal(t, 200, rm.Status, "%s", rm.Body)
	maxShop := slOK(t, slCall(t, f.c, "POST", "/shops/", map[string]any{"name": "MAX corner", "catalog_id": f.catalog,
		"connection_id": slID(rm.JSON(t))}))
	require.True(t, strings.HasPrefix(maxShop["link"].(string), "https://max.ru/sandbox"), maxShop["link"])
	maxPath := p("/storefront/v1/shops/%d/catalog", slID(maxShop))
	requireJSON(t, call(t, "GET", maxPath, nil, tma(slLaunch(maxToken, "M1", 5550001, now))...), 200, map[string]any{
		"shop":    map[string]any{"id": slID(maxShop), "name": "MAX corner", "use_device_color_scheme": false},
		"catalog": want["catalog"], "products": want["products"]})
	slUnauthorized(t, call(t, "GET", maxPath, nil, tma(launch)...)) // the telegram bot's data

	// No shop: 404 whatever is sent, the page too.
	for _, h := range [][]string{nil, tma(launch)} {
		slShopNotFound(t, call(t, "GET", "/storefront/v1/shops/999999999/catalog", nil, h...))
	}
	require.Equal(t, 204, slCall(t, g.c, "DELETE", p("/shops/%d", g.shop), nil).Status)
	slShopNotFound(t, call(t, "GET", p("/storefront/v1/shops/%d/catalog", g.shop), nil, tma(slLaunch(g.token, "AAQ8", 1, now))...))
	res, body := fetch(t, "GET", p("/storefront/v1/shops/%d", g.shop))
	require.Equal(t, 404, res.StatusCode, "%s", body)
	require.JSONEq(t, `{"error_code":34002,"error_name":"SALES_SHOP_NOT_FOUND","message":"shop not found","detail":{}}`, string(body))

	// The page: a shell without shop data.
	res, body = fetch(t, "GET", p("/storefront/v1/shops/%d", f.shop))
	require.Equal(t, 200, res.StatusCode, "%s", body)
	require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	require.Contains(t, string(body), `<script src="/storefront/v1/storefront.js"></script>`)
	require.NotContains(t, string(body), "Coffee corner")
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "default-src 'none'")

	// A product's change shows at once; a member deleted leaves.
	slOK(t, slCall(t, f.c, "PATCH", p("/products/%d", f.mugs), map[string]any{"prices": []any{slPrice("RUB", 455.25)}}))
	require.Equal(t, 204, slCall(t, f.c, "DELETE", p("/products/%d", f.beans), nil).Status)
	requireJSON(t, call(t, "GET", path, nil, tma(launch)...), 200, map[string]any{"shop": want["shop"], "catalog": want["catalog"],
		"products": []any{map[string]any{"id": f.mugs, "name": "Mug", "description": "", "category": nil, "sku": nil, "images": []any{}, "price": 455.25}}})
}

// TestSalesStorefrontOrder: an order reaches the company as the buyer's
// inbound service_order message with its messages.create event; a replay
// answers the same order, another body 409; the rules of its body; a
// blacklisted buyer is 403 with nothing stored.
func TestSalesStorefrontOrder(t *testing.T) {
	f := slNewShop(t)
	orders := p("/storefront/v1/shops/%d/orders", f.shop)
	buyer := int64(7770000 + time.Now().UnixNano()%10000)
	launch := slLaunch(f.token, "AAorder1", buyer, time.Now())
	body := map[string]any{"items": []any{map[string]any{"product_id": f.beans, "quantity": 3}, map[string]any{"product_id": f.mugs, "quantity": 1}},
		"comment": "Ring twice"}
	r := call(t, "POST", orders, body, tma(launch)...)
	items := []any{
		map[string]any{"product_id": f.beans, "name": "Espresso beans", "price": 1290.5, "quantity": 3},
		map[string]any{"product_id": f.mugs, "name": "Mug", "price": 450, "quantity": 1},
	}
	got := requireJSON(t, r, 200, map[string]any{"order_id": anyUUID, "amount": 4321.5, "currency": "RUB", "items": items}).(map[string]any)
	orderID := got["order_id"]

	// The message, through the API.
	ck := newKey(t, f.c.ID, "messaging")
	rc := api(t, "GET", cpath(f.c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%d", f.bot, buyer), nil, key(ck)...)
	chat := requireJSON(t, rc, 200, anyPresent).(map[string]any)
	require.Equal(t, "Ann Buyer", chat["name"])
	require.Equal(t, "ann_buys", chat["username"])
	require.EqualValues(t, 1, chat["unanswered_count"])
	content := map[string]any{"order_id": orderID, "shop_id": f.shop, "catalog_id": f.catalog, "currency": "RUB", "amount": 4321.5,
		"items": items, "comment": "Ring twice"}
	list := inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"])
	require.Len(t, list, 1)
	msg := list[0].(map[string]any)
	requireValue(t, inboundMessageJSON(p("storefront_order_%s", orderID), p("%d", buyer), "service_order", content, nil, nil), msg)
	ev := inboundEvents(t, msg["message_id"])
	require.Len(t, ev, 1)
	require.Equal(t, "service_order", ev[0].(map[string]any)["event"].(map[string]any)["message"].(map[string]any)["message_type"])
	requireValue(t, content, ev[0].(map[string]any)["event"].(map[string]any)["message"].(map[string]any)["service_order"])

	// A replay, also in parallel: the same order, one message.
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(t, "POST", orders, body, tma(launch)...)
			requireJSON(t, r, 200, got)
		}()
	}
	wg.Wait()
	slErr(t, call(t, "POST", orders, map[string]any{"items": []any{map[string]any{"product_id": f.mugs, "quantity": 1}}}, tma(launch)...),
		409, 34012, "SALES_ORDER_REPLAYED", "this launch data placed another order")
	require.Len(t, inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"]), 1)

	// A crash after messaging stored the message but before sales kept the
	// order (its row gone, as if never committed): the buyer's retry finds
	// the same message, and the order is kept once.
	tag, err := serviceDB(t, "sales").Exec(context.Background(), `DELETE FROM storefront_orders WHERE id = $1`, orderID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	requireJSON(t, call(t, "POST", orders, body, tma(launch)...), 200, got)
	require.Len(t, inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"]), 1)

	// A second launch of the same buyer places a second order, at the
	// current price, in the same chat.
	slOK(t, slCall(t, f.c, "PATCH", p("/products/%d", f.mugs), map[string]any{"prices": []any{slPrice("RUB", 0.1)}}))
	r = call(t, "POST", orders, map[string]any{"items": []any{map[string]any{"product_id": f.mugs, "quantity": 1000}}}, tma(slLaunch(f.token, "AAorder2", buyer, time.Now()))...)
	second := requireJSON(t, r, 200, map[string]any{"order_id": anyUUID, "amount": 100, "currency": "RUB",
		"items": []any{map[string]any{"product_id": f.mugs, "name": "Mug", "price": 0.1, "quantity": 1000}}}).(map[string]any)
	require.NotEqual(t, orderID, second["order_id"])
	require.Len(t, inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"]), 2)

	// The body's rules.
	fresh := func() []string { return tma(slLaunch(f.token, p("AAbad%d", time.Now().UnixNano()), buyer, time.Now())) }
	item := func(id any, q any) map[string]any { return map[string]any{"product_id": id, "quantity": q} }
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{}}, fresh()...), "too_short", "List should have at least 1 item after validation, not 0", "body", "items")
	slValidation(t, call(t, "POST", orders, map[string]any{}, fresh()...), "missing", "Field required", "body", "items")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 0)}}, fresh()...), "greater_than_equal", "Input should be greater than or equal to 1", "body", "items", 0, "quantity")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 1001)}}, fresh()...), "less_than_equal", "Input should be less than or equal to 1000", "body", "items", 0, "quantity")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 1)}, "comment": strings.Repeat("c", 1025)}, fresh()...), "string_too_long", "String should have at most 1024 characters", "body", "comment")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 1)}, "comment": nil}, fresh()...), "string_type", "Input should be a valid string", "body", "comment")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 1), item(f.beans, 1), item(f.mugs, 2)}}, fresh()...),
		"value_error", p("Value error, product %d is given twice", f.mugs), "body", "items", 2, "product_id")
	slValidation(t, call(t, "POST", orders, map[string]any{"items": []any{item(f.mugs, 1), item(999999999, 1)}}, fresh()...),
		"value_error", "Value error, product 999999999 is not in the shop's catalog", "body", "items", 1, "product_id")
	slUnauthorized(t, call(t, "POST", orders, body))
	slUnauthorized(t, call(t, "POST", orders, body, tma(slSign(f.token, map[string]string{"auth_date": strconv.FormatInt(time.Now().Unix(), 10), "query_id": "nouser"}))...))
	slShopNotFound(t, call(t, "POST", "/storefront/v1/shops/999999999/orders", body, tma(launch)...))

	// An amount past what a message's content carries to the cent (15
	// significant digits): 422 at items, nothing stored.
	var gold []int64
	var big []any
	for i := range 11 {
		id := slID(slNewProduct(t, f.c, p("Gold %d", i), slPrice("RUB", 999999999.99)))
		gold = append(gold, id)
		big = append(big, item(id, 1000))
	}
	slOK(t, slAdd(t, f.c, f.catalog, gold...))
	slValidation(t, call(t, "POST", orders, map[string]any{"items": big}, fresh()...),
		"value_error", "Value error, the order's amount is above 9999999999999.99", "body", "items")

	// Blacklisted: 403, nothing stored.
	rb := api(t, "POST", cpath(f.c, "/connections/%d/chats_blacklist/", f.bot), map[string]any{"chat_id": chat["id"]}, key(ck)...)
	require.Equal(t, 200, rb.Status, "%s", rb.Body)
	blocked := slLaunch(f.token, "AAblocked", buyer, time.Now())
	r = call(t, "POST", orders, body, tma(blocked)...)
	require.Equal(t, 403, r.Status, "%s", r.Body)
	requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
	require.Len(t, inboundMessages(t, company{ID: f.c.ID, Key: ck}, chat["id"]), 2)
	var n int
	require.NoError(t, serviceDB(t, "sales").QueryRow(context.Background(),
		`SELECT count(*) FROM storefront_orders WHERE shop_id = $1`, f.shop).Scan(&n))
	require.Equal(t, 2, n)
}
