package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The chat blacklist of a connection (spec 2.3, 4.1 blacklist rules 1-5),
// served by messaging under /connections/{connection_id}/chats_blacklist/.

func blPath(c company, conn any, suffix string) string {
	return cpath(c, "/connections/%v/chats_blacklist/%s", conn, suffix)
}

func blBlock(t *testing.T, c company, conn any, body any) response {
	t.Helper()
	return api(t, "POST", blPath(c, conn, ""), body, key(c.Key)...)
}

// blItem is a whole blacklist item; the id and created_at are generated.
func blItem(source, name string, phone any) map[string]any {
	return map[string]any{"id": anyID, "source_chat_id": source, "chat_name": name, "phone": phone, "created_at": anyTime}
}

func chatBlacklistItem(t *testing.T, c company, chatID any) any {
	t.Helper()
	return requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", chatID), nil, key(c.Key)...), 200, anyPresent).(map[string]any)["blacklist_item_id"]
}

// phoneConnection makes a max_personal or vk_direct connection through the
// sandbox's code login.
func phoneConnection(t *testing.T, c company, typ string) int64 {
	t.Helper()
	ph := newPhone()
	sandboxAccount(t, typ, ph, nil)
	sid := requireSession(t, api(t, "POST", cpath(c, "/%s/init", typ), map[string]any{"phone": ph}, key(c.Key)...), "waiting_for_code")
	requireSession(t, api(t, "POST", cpath(c, "/%s/login", typ), map[string]any{"session_id": sid, "code": sentCode(t, typ, sid)}, key(c.Key)...), "authenticated")
	return idOf(mustCreate(t, c, typ, map[string]any{"session_id": sid}))
}

// TestBlacklistWhatsappByPhone: whatsapp blocks a phone before its chat
// exists (<digits>@c.us), the chat made later carries the item, a delete
// clears it; a chat blocked by chat_id is named after the chat.
func TestBlacklistWhatsappByPhone(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{})

	ph := newPhone()
	item := requireJSON(t, blBlock(t, c, wa, map[string]any{"phone": spaced(ph)}), 200,
		blItem(digits(ph)+"@c.us", ph, digits(ph))).(map[string]any)
	// Again, in another spelling: already blocked.
	requireError(t, blBlock(t, c, wa, map[string]any{"phone": "8" + digits(ph)[1:]}), 409, 10007, "CONNECTION_BLACKLIST_CHAT_IS_ALREADY_BLACKLISTED")
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{item})

	// The chat made afterwards is blocked by the same item, and blocking it
	// by chat_id is blocking it again.
	chat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph}), 200, anyPresent).(map[string]any)["chat_id"]
	require.Equal(t, item["id"], chatBlacklistItem(t, c, chat))
	requireError(t, blBlock(t, c, wa, map[string]any{"chat_id": chat}), 409, 10007, "CONNECTION_BLACKLIST_CHAT_IS_ALREADY_BLACKLISTED")

	// Delete: 204 without a body; the chat's item is null; twice is 404.
	r := api(t, "DELETE", blPath(c, wa, p("%v", item["id"])), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	require.Nil(t, chatBlacklistItem(t, c, chat))
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{})
	requireError(t, api(t, "DELETE", blPath(c, wa, p("%v", item["id"])), nil, key(c.Key)...), 404, 10008, "CONNECTION_BLACKLIST_CHAT_IS_NOT_BLACKLISTED")
	requireError(t, api(t, "DELETE", blPath(c, wa, "999999999"), nil, key(c.Key)...), 404, 10008, "CONNECTION_BLACKLIST_CHAT_IS_NOT_BLACKLISTED")

	// By chat_id: the chat's name and phone.
	named := requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": newPhone(), "name": "Ann"}), 200, anyPresent).(map[string]any)["chat_id"]
	namedChat := requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", named), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	item2 := requireJSON(t, blBlock(t, c, wa, map[string]any{"chat_id": named}), 200,
		blItem(namedChat["source_chat_id"].(string), "Ann", namedChat["phone"])).(map[string]any)
	require.Equal(t, item2["id"], chatBlacklistItem(t, c, named))
	// By phone of an existing chat: the chat's name too.
	ph3 := newPhone()
	requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph3, "name": "Bob"}), 200, anyPresent)
	requireJSON(t, blBlock(t, c, wa, map[string]any{"phone": ph3}), 200, blItem(digits(ph3)+"@c.us", "Bob", digits(ph3)))
	// Deleting the item unblocks the chat and leaves the others.
	require.Equal(t, 204, api(t, "DELETE", blPath(c, wa, p("%v/", item2["id"])), nil, key(c.Key)...).Status)
	require.Nil(t, chatBlacklistItem(t, c, named))
	list := requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{anyPresent}).([]any)
	require.Equal(t, digits(ph3)+"@c.us", list[0].(map[string]any)["source_chat_id"])
}

// TestBlacklistWabaByPhone: waba's source chat id is the digits, like its
// chats'.
func TestBlacklistWabaByPhone(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	ph := newPhone()
	item := requireJSON(t, blBlock(t, c, waba, map[string]any{"phone": ph}), 200, blItem(digits(ph), ph, digits(ph))).(map[string]any)
	chat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": waba, "phone": spaced(ph)}), 200, anyPresent).(map[string]any)["chat_id"]
	require.Equal(t, item["id"], chatBlacklistItem(t, c, chat))
	r := api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s", waba, digits(ph)), nil, key(c.Key)...)
	require.Equal(t, item["id"], requireJSON(t, r, 200, anyPresent).(map[string]any)["blacklist_item_id"])
}

// TestBlacklistBodyRules: rules 3 and 4 and the body's shape.
func TestBlacklistBodyRules(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	tg := idOf(createTelegram(t, c, newPhone()))

	// Rule 4: neither phone nor chat_id (an absent body, {}, nulls).
	requireLoc(t, api(t, "POST", blPath(c, wa, ""), nil, key(c.Key)...), "body")
	requireLoc(t, blBlock(t, c, wa, map[string]any{}), "body")
	requireLoc(t, blBlock(t, c, tg, map[string]any{"phone": nil, "chat_id": nil}), "body")
	// Both at once, wrong types, bad phones.
	requireLoc(t, blBlock(t, c, wa, map[string]any{"phone": newPhone(), "chat_id": 1}), "body", "chat_id")
	requireLoc(t, blBlock(t, c, wa, map[string]any{"chat_id": "12"}), "body", "chat_id")
	requireLoc(t, blBlock(t, c, wa, map[string]any{"phone": 79991234567}), "body", "phone")
	requireLoc(t, blBlock(t, c, wa, map[string]any{"phone": ""}), "body", "phone")
	requireLoc(t, blBlock(t, c, wa, map[string]any{"phone": "not a phone"}), "body", "phone")

	// Rule 3: telegram blocks by chat_id only.
	requireError(t, blBlock(t, c, tg, map[string]any{"phone": newPhone()}), 422, 10015, "CONNECTION_BLACKLIST_CHAT_EXPECTED_CHAT_ID")
	chat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": tg, "user_name": "@Ann_BL"}), 200, anyPresent).(map[string]any)["chat_id"]
	item := requireJSON(t, blBlock(t, c, tg, map[string]any{"chat_id": chat}), 200, blItem("ann_bl", "@Ann_BL", nil)).(map[string]any)
	require.Equal(t, item["id"], chatBlacklistItem(t, c, chat))
	requireJSON(t, api(t, "GET", blPath(c, tg, ""), nil, key(c.Key)...), 200, []any{item})

	// chat_id must name a chat of this connection of this company: 404 15000.
	waChat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": newPhone()}), 200, anyPresent).(map[string]any)["chat_id"]
	requireError(t, blBlock(t, c, tg, map[string]any{"chat_id": waChat}), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireError(t, blBlock(t, c, tg, map[string]any{"chat_id": 999999999}), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	other := newCompany(t, nil)
	owa := idOf(mustCreate(t, other, "whatsapp", nil))
	theirChat := requireJSON(t, createChat(t, other, map[string]any{"connection_id": owa, "phone": newPhone()}), 200, anyPresent).(map[string]any)["chat_id"]
	requireError(t, blBlock(t, c, wa, map[string]any{"chat_id": theirChat}), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	require.Nil(t, chatBlacklistItem(t, other, theirChat))
	// None of the refused requests stored an item.
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{})
}

// TestBlacklistTypes: rule 1 (the nine chat types have a list; others and
// unknown or foreign connections are 404 10000) and rule 3 per type.
func TestBlacklistTypes(t *testing.T) {
	c := newCompany(t, nil)
	tgTok, _ := botToken()
	conns := map[string]int64{
		"whatsapp":     idOf(mustCreate(t, c, "whatsapp", nil)),
		"waba":         idOf(mustCreate(t, c, "waba", wabaParams)),
		"telegram":     idOf(createTelegram(t, c, newPhone())),
		"telegram_bot": idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tgTok})),
		"max_personal": phoneConnection(t, c, "max_personal"),
		"max_bot":      idOf(mustCreate(t, c, "max_bot", map[string]any{"bot_token": "maxbotTOKEN_blacklist-0001"})),
		"vk_group":     idOf(mustCreate(t, c, "vk_group", map[string]any{"group_id": "218000077", "access_token": "vk1.a.blacklist"})),
		"vk_direct":    phoneConnection(t, c, "vk_direct"),
		"avito":        idOf(mustCreate(t, c, "avito", map[string]any{"client_id": "avito-bl", "client_secret": "avito-bl-secret"})),
	}
	for typ, id := range conns {
		requireJSON(t, api(t, "GET", blPath(c, id, ""), nil, key(c.Key)...), 200, []any{})
		ph := newPhone()
		r := blBlock(t, c, id, map[string]any{"phone": ph})
		switch typ {
		case "whatsapp", "waba":
			require.Equal(t, 200, r.Status, "%s: %s", typ, r.Body)
		default:
			requireError(t, r, 422, 10015, "CONNECTION_BLACKLIST_CHAT_EXPECTED_CHAT_ID")
		}
		requireError(t, api(t, "DELETE", blPath(c, id, "999999999"), nil, key(c.Key)...), 404, 10008, "CONNECTION_BLACKLIST_CHAT_IS_NOT_BLACKLISTED")
	}

	other := newCompany(t, nil)
	notChats := map[string]int64{
		"odnoklassniki": idOf(mustCreate(t, c, "odnoklassniki", map[string]any{"group_id": "70000077777", "access_token": "ok-bl"})),
		"tinkoff":       idOf(mustCreate(t, c, "tinkoff", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}})),
		"unknown":       999999999,
		"other company": idOf(mustCreate(t, other, "whatsapp", nil)),
	}
	for what, id := range notChats {
		for _, r := range []response{
			api(t, "GET", blPath(c, id, ""), nil, key(c.Key)...),
			blBlock(t, c, id, map[string]any{"phone": newPhone()}),
			blBlock(t, c, id, map[string]any{"chat_id": 1}),
			api(t, "DELETE", blPath(c, id, "1"), nil, key(c.Key)...),
		} {
			require.Equal(t, 404, r.Status, "%s: %s", what, r.Body)
			requireError(t, r, 404, 10000, "CONNECTION_NOT_FOUND")
		}
	}
	// The other company's list is untouched and its own.
	requireJSON(t, api(t, "GET", blPath(other, notChats["other company"], ""), nil, key(other.Key)...), 200, []any{})
}

// TestBlacklistScopes: rule 2. Reading needs connections (a messaging-only
// key is 403), changes need messaging (a connections-only key is 403);
// read-only grants pass reads only. Another company's key is 403.
func TestBlacklistScopes(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	conn, msg := newKey(t, c.ID, "connections"), newKey(t, c.ID, "messaging")
	connRO, msgRO := newKey(t, c.ID, "connections:read"), newKey(t, c.ID, "messaging:read")
	forbidden := func(r response) {
		t.Helper()
		requireBody(t, `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`, r)
		require.Equal(t, 403, r.Status)
	}

	item := requireJSON(t, api(t, "POST", blPath(c, wa, ""), map[string]any{"phone": newPhone()}, key(msg)...), 200, anyPresent).(map[string]any)
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(conn)...), 200, []any{item})
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(connRO)...), 200, []any{item})
	forbidden(api(t, "GET", blPath(c, wa, ""), nil, key(msg)...))
	forbidden(api(t, "GET", blPath(c, wa, ""), nil, key(msgRO)...))

	for _, k := range []string{conn, connRO, msgRO} {
		forbidden(api(t, "POST", blPath(c, wa, ""), map[string]any{"phone": newPhone()}, key(k)...))
		forbidden(api(t, "DELETE", blPath(c, wa, p("%v", item["id"])), nil, key(k)...))
	}
	r := api(t, "DELETE", blPath(c, wa, p("%v", item["id"])), nil, key(msg)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)

	// Another company's key, even with every scope.
	other := newCompany(t, nil)
	for _, r := range []response{
		api(t, "GET", blPath(c, wa, ""), nil, key(other.Key)...),
		api(t, "POST", blPath(c, wa, ""), map[string]any{"phone": newPhone()}, key(other.Key)...),
		api(t, "DELETE", blPath(c, wa, "1"), nil, key(other.Key)...),
	} {
		forbidden(r)
	}
	requireJSON(t, api(t, "GET", blPath(c, wa, ""), nil, key(c.Key)...), 200, []any{})
}

// TestBlacklistPagingAndLimit: limit (1..200, default 200) and offset; at
// most 2048 items per connection, also under concurrent adds (rule 5).
func TestBlacklistPagingAndLimit(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "offset=-1"} {
		name, _, _ := strings.Cut(q, "=")
		requireLoc(t, api(t, "GET", blPath(c, wa, "?"+q), nil, key(c.Key)...), "query", name)
	}

	// 2046 items stored directly, then ten different phones at once:
	// exactly two get in.
	const stored = 2046
	db := serviceDB(t, "messaging")
	_, err := db.Exec(context.Background(), `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id, chat_name, phone)
		SELECT $1, $2, (79990000000 + g)::text || '@c.us', '+' || (79990000000 + g)::text, (79990000000 + g)::text
		FROM generate_series(1, $3) g`, c.ID, wa, stored)
	require.NoError(t, err)

	const n = 10
	out := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := tryCall("POST", blPath(c, wa, ""), map[string]any{"phone": newPhone()}, key(c.Key)...)
			if err == nil {
				out[i] = r
			}
		}()
	}
	wg.Wait()
	created := 0
	for _, r := range out {
		if r.Status == 200 {
			created++
			continue
		}
		requireError(t, r, 409, 10009, "CONNECTION_BLACKLIST_LIMIT_EXCEEDED")
	}
	require.Equal(t, 2, created)

	// Pages: default 200, oldest first; the last page holds the rest.
	page := func(q string) []any {
		t.Helper()
		return requireJSON(t, api(t, "GET", blPath(c, wa, q), nil, key(c.Key)...), 200, anyPresentList).([]any)
	}
	first := page("")
	require.Len(t, first, 200)
	require.Equal(t, "79990000001@c.us", first[0].(map[string]any)["source_chat_id"])
	require.Len(t, page("?offset=2000&limit=200"), 48)
	require.Len(t, page("?limit=1&offset=1"), 1)
	require.Equal(t, first[1], page("?limit=1&offset=1")[0])
	require.Empty(t, page("?offset=2048"))

	// Full: a new chat is 409 10009, an already blocked one still 10007; a
	// delete makes room for one.
	requireError(t, blBlock(t, c, wa, map[string]any{"phone": newPhone()}), 409, 10009, "CONNECTION_BLACKLIST_LIMIT_EXCEEDED")
	requireError(t, blBlock(t, c, wa, map[string]any{"phone": "+79990000001"}), 409, 10007, "CONNECTION_BLACKLIST_CHAT_IS_ALREADY_BLACKLISTED")
	require.Equal(t, 204, api(t, "DELETE", blPath(c, wa, p("%v", first[0].(map[string]any)["id"])), nil, key(c.Key)...).Status)
	requireJSON(t, blBlock(t, c, wa, map[string]any{"phone": "+79990000001"}), 200, blItem("79990000001@c.us", "+79990000001", "79990000001"))
	requireError(t, blBlock(t, c, wa, map[string]any{"phone": newPhone()}), 409, 10009, "CONNECTION_BLACKLIST_LIMIT_EXCEEDED")
	// The limit is per connection.
	wa2 := func() int64 {
		raiseLimit(t, c, "whatsapp", 2)
		return idOf(mustCreate(t, c, "whatsapp", nil))
	}()
	requireJSON(t, blBlock(t, c, wa2, map[string]any{"phone": "+79990000001"}), 200, blItem("79990000001@c.us", "+79990000001", "79990000001"))
}

// anyPresentList is any JSON array.
var anyPresentList = matcher{"an array", func(v any) bool { _, ok := v.([]any); return ok }}
