package e2e

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// The inbox (GET /messaging/chats/with_contacts/, design/messaging.md
// "Inbox"): contacts by their latest message, newest first, with their
// chats and each chat's last message. One call per second per company:
// inbox calls go through api(), which waits out a 429.

func inbox(t *testing.T, c company, query string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/messaging/chats/with_contacts/")+query, nil, key(c.Key)...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON(t)
}

// inboxContacts are the contact ids of a page, in order, and its cursor.
func inboxContacts(page map[string]any) ([]any, any) {
	ids := []any{}
	for _, it := range page["data"].([]any) {
		ids = append(ids, it.(map[string]any)["contact_id"])
	}
	return ids, page["response_metadata"].(map[string]any)["next_cursor"]
}

// personWrites: a person with phone ph writes text on conn; answers the
// chat.
func personWrites(t *testing.T, c company, conn int64, source, ph, name, text string) map[string]any {
	t.Helper()
	inboundOK(t, conn, map[string]any{
		"chat":    map[string]any{"phone": ph, "name": name},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": text}},
	})
	return inboundChat(t, c, conn, source)
}

// inboundAnyID is inboundMessageJSON with a made-up source message id.
func inboundAnyID(sourceChatID, typ string, content, author, replyTo any) map[string]any {
	m := inboundMessageJSON("", sourceChatID, typ, content, author, replyTo)
	m["source_message_id"] = anyString
	return m
}

// sentMessage is an outbound message the send worker and the sandbox's
// receipts may have reached by the time it is read: its messenger id and
// delivery times are present, set or not.
func sentMessage(m map[string]any) map[string]any {
	for _, k := range []string{"source_message_id", "delivered_at", "read_at"} {
		m[k] = anyPresent
	}
	return m
}

func TestInbox(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	tg := idOf(createTelegram(t, c, newPhone()))
	ann, bob := newPhone(), newPhone()

	annWa := personWrites(t, c, wa, digits(ann)+"@c.us", ann, "Ann Lee", "hello on whatsapp")
	bobTg := personWrites(t, c, tg, digits(bob), bob, "Bob", "bob here")
	annTg := personWrites(t, c, tg, digits(ann), ann, "Ann Lee", "hello on telegram")
	require.Equal(t, annWa["contact_id"], annTg["contact_id"], "one person, one contact")
	group := "120363000000" + digits(bob)[4:] + "@g.us"
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"source_chat_id": group, "name": "Team", "is_group": true},
		"author":  map[string]any{"name": "Kate"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hi all"}},
	})
	groupChat := inboundChat(t, c, wa, group)
	// The company answers Bob: he moves to the top, answered.
	require.Equal(t, 200, send(t, c, textMsg(int64(bobTg["id"].(float64)), "hi Bob")).Status)
	// A chat nobody wrote in is not in the inbox.
	require.Equal(t, 200, createChat(t, c, map[string]any{"connection_id": tg, "chat_id": "silent", "name": "Silent"}).Status)

	page := inbox(t, c, "")
	ids, next := inboxContacts(page)
	require.Equal(t, []any{bobTg["contact_id"], groupChat["contact_id"], annWa["contact_id"]}, ids)
	require.Nil(t, next)
	chatJSON := func(ch map[string]any, unanswered int, last any) map[string]any {
		return map[string]any{
			"chat_id": ch["id"], "connection_id": ch["connection_id"], "source_chat_id": ch["source_chat_id"],
			"phone": ch["phone"], "username": ch["username"], "profile_link": ch["profile_link"], "name": ch["name"],
			"is_group": ch["is_group"], "unanswered_count": unanswered, "blacklist_item_id": nil, "last_message": last,
		}
	}
	requireValue(t, map[string]any{
		"data": []any{
			map[string]any{
				"contact_id": bobTg["contact_id"], "contact_name": "Bob", "avatar_url": nil, "is_group": false,
				"unanswered_count": 0, "last_chat_updated_at": anyTime,
				"chats": []any{chatJSON(bobTg, 0, sentMessage(outboundJSON(digits(bob), "text", map[string]any{"text": "hi Bob"}, c.OwnerID)))},
			},
			map[string]any{
				"contact_id": groupChat["contact_id"], "contact_name": "Team", "avatar_url": nil, "is_group": true,
				"unanswered_count": 1, "last_chat_updated_at": anyTime,
				"chats": []any{chatJSON(groupChat, 1, inboundAnyID(group, "text", map[string]any{"text": "hi all"},
					map[string]any{"id": anyUUID, "name": "Kate", "external_id": nil, "user_id": nil, "phone": nil}, nil))},
			},
			map[string]any{
				"contact_id": annWa["contact_id"], "contact_name": "Ann Lee", "avatar_url": nil, "is_group": false,
				"unanswered_count": 2, "last_chat_updated_at": anyTime,
				"chats": []any{
					chatJSON(annTg, 1, inboundAnyID(digits(ann), "text", map[string]any{"text": "hello on telegram"}, nil, nil)),
					chatJSON(annWa, 1, inboundAnyID(digits(ann)+"@c.us", "text", map[string]any{"text": "hello on whatsapp"}, nil, nil)),
				},
			},
		},
		"response_metadata": map[string]any{"next_cursor": nil},
	}, page)
	first := page["data"].([]any)[0].(map[string]any)
	require.Equal(t, first["chats"].([]any)[0].(map[string]any)["last_message"].(map[string]any)["created_at"], first["last_chat_updated_at"])

	// Filters: whatsapp only; unanswered only; both; sort_order ignored.
	ids, _ = inboxContacts(inbox(t, c, p("?connection_ids=%d&sort_order=whatever", wa)))
	require.Equal(t, []any{groupChat["contact_id"], annWa["contact_id"]}, ids)
	ids, _ = inboxContacts(inbox(t, c, "?unanswered_only=true"))
	require.Equal(t, []any{groupChat["contact_id"], annWa["contact_id"]}, ids)
	page = inbox(t, c, p("?unanswered_only=true&connection_ids=%d&connection_ids=%d", tg, tg))
	ids, _ = inboxContacts(page)
	require.Equal(t, []any{annWa["contact_id"]}, ids)
	require.Len(t, page["data"].([]any)[0].(map[string]any)["chats"], 1, "only the chats the filters keep")

	// Paging one by one while Bob writes again after his page: he is not
	// shown twice, nobody is skipped.
	page = inbox(t, c, "?limit=1")
	ids, next = inboxContacts(page)
	require.Equal(t, []any{bobTg["contact_id"]}, ids)
	personWrites(t, c, tg, digits(bob), bob, "Bob", "me again")
	seen := ids
	for next != nil {
		page = inbox(t, c, "?limit=1&cursor="+url.QueryEscape(next.(string)))
		ids, next = inboxContacts(page)
		seen = append(seen, ids...)
	}
	require.Equal(t, []any{bobTg["contact_id"], groupChat["contact_id"], annWa["contact_id"]}, seen)
	ids, _ = inboxContacts(inbox(t, c, ""))
	require.Equal(t, bobTg["contact_id"], ids[0], "Bob is on top again")

	// Refusals.
	for _, q := range []string{"?cursor=nonsense", "?cursor=" + url.QueryEscape("a.b")} {
		requireLoc(t, api(t, "GET", cpath(c, "/messaging/chats/with_contacts/")+q, nil, key(c.Key)...), "query", "cursor")
	}
	for _, q := range []string{"?limit=0", "?limit=101"} {
		requireLoc(t, api(t, "GET", cpath(c, "/messaging/chats/with_contacts/")+q, nil, key(c.Key)...), "query", "limit")
	}
}

// TestInboxRateLimit: one inbox call per second per company; the next is
// 429 with a whole-second Retry-After, and other companies are unaffected.
func TestInboxRateLimit(t *testing.T) {
	if benchMode {
		t.Skip("benchmark run: the inbox rate limit is off")
	}
	t.Parallel()
	c, other := newCompany(t, nil), newCompany(t, nil)
	const path = "/messaging/chats/with_contacts/"
	require.Equal(t, 200, call(t, "GET", cpath(c, path), nil, key(c.Key)...).Status)
	r := call(t, "GET", cpath(c, path), nil, key(c.Key)...)
	requireJSON(t, r, 429, map[string]any{"error_code": 429, "error_name": "TOO_MANY_REQUESTS", "message": anyString, "detail": anyPresent})
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	requireJSON(t, call(t, "GET", cpath(other, path), nil, key(other.Key)...), 200,
		map[string]any{"data": []any{}, "response_metadata": map[string]any{"next_cursor": nil}})
}
