package e2e

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var wabaParams = map[string]any{"waba_business_id": "102290129340398", "phone_number_id": "106540352242922", "access_token": "EAAGsecretWABAtoken"}

func createChat(t *testing.T, c company, body map[string]any) response {
	t.Helper()
	return api(t, "POST", cpath(c, "/messaging/chats/"), body, key(c.Key)...)
}

// chatJSON is a whole chat answer; the id and created_at are generated.
func chatJSON(connID int64, contactID any, sourceChatID, name string, phone, username, profileLink any) map[string]any {
	return map[string]any{
		"id": anyID, "connection_id": connID, "contact_id": contactID, "source_chat_id": sourceChatID,
		"name": name, "is_group": false, "avatar_url": nil, "profile_link": profileLink, "phone": phone,
		"username": username, "blacklist_item_id": nil, "unanswered_count": 0, "created_at": anyTime,
		"last_message_at": nil,
	}
}

// TestChatSources: the company's messenger connections by id, with what
// creates chats on each and their subscription; terminals are not sources.
func TestChatSources(t *testing.T) {
	c := newCompany(t, nil)
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/sources/"), nil, key(c.Key)...), 200, []any{})
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	mustCreate(t, c, "tinkoff", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}})
	tg := idOf(createTelegram(t, c, newPhone()))
	flags := func(phone, username, chatID bool) map[string]any {
		return map[string]any{"with_phone": phone, "with_username": username, "with_chat_id": chatID}
	}
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/sources"), nil, key(c.Key)...), 200, []any{
		map[string]any{"connection_id": wa, "name": "My whatsapp", "type": "whatsapp", "create_chat": flags(true, false, false), "subscription": startSub()},
		map[string]any{"connection_id": bot, "name": "My telegram_bot", "type": "telegram_bot", "create_chat": flags(false, false, false), "subscription": startSub()},
		map[string]any{"connection_id": tg, "name": "My telegram", "type": "telegram", "create_chat": flags(true, true, true), "subscription": startSub()},
	})
	// Another company sees none of them; the scope is messaging.
	other := newCompany(t, nil)
	requireJSON(t, api(t, "GET", cpath(other, "/messaging/chats/sources/"), nil, key(other.Key)...), 200, []any{})
	require.Equal(t, 403, api(t, "GET", cpath(c, "/messaging/chats/sources/"), nil, key(newKey(t, c.ID, "connections"))...).Status)
}

// TestCreateWhatsappChat: a chat by phone is <digits>@c.us, bound to a new
// contact; the same person again is the same chat.
func TestCreateWhatsappChat(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	ph := newPhone()
	r := createChat(t, c, map[string]any{"connection_id": wa, "phone": spaced(ph)})
	created := requireJSON(t, r, 200, map[string]any{"chat_id": anyID, "contact_id": anyID, "created_chat": true, "created_contact": true}).(map[string]any)
	chatID, contactID := created["chat_id"], created["contact_id"]

	chat := requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", chatID), nil, key(c.Key)...), 200,
		chatJSON(wa, contactID, digits(ph)+"@c.us", ph, digits(ph), nil, nil)).(map[string]any)
	require.Equal(t, chatID, chat["id"])

	// The same person again, in another spelling: the same chat.
	requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph, "name": "Other"}), 200,
		map[string]any{"chat_id": chatID, "contact_id": contactID, "created_chat": false, "created_contact": false})
	// By source.
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s@c.us", wa, digits(ph)), nil, key(c.Key)...), 200, chat)
	requireError(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=1@c.us", wa), nil, key(c.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireLoc(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d", wa), nil, key(c.Key)...), "query", "source_chat_id")
	// The contact carries the chat's phone.
	contact := requireJSON(t, api(t, "GET", cpath(c, "/contacts/%v", contactID), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, ph, contact["name"])

	// Another company cannot read it, nor create chats on the connection.
	other := newCompany(t, nil)
	requireError(t, api(t, "GET", cpath(other, "/messaging/chats/%v", chatID), nil, key(other.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireError(t, createChat(t, other, map[string]any{"connection_id": wa, "phone": ph}), 404, 10000, "CONNECTION_NOT_FOUND")
}

// TestCreateChatRules: rule 1 (identifiers per type), unknown connections
// and contacts, bad phones; nothing is stored by a refused create.
func TestCreateChatRules(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	terminal := idOf(mustCreate(t, c, "tinkoff", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}}))
	ph := newPhone()

	requireLoc(t, createChat(t, c, map[string]any{"connection_id": wa}), "body")
	requireLoc(t, createChat(t, c, map[string]any{"phone": ph}), "body", "connection_id")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": wa, "user_name": "ann"}), "body", "user_name")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": wa, "chat_id": "123"}), "body", "chat_id")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph, "chat_id": "123"}), "body", "chat_id")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": "not a phone"}), "body", "phone")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": bot, "chat_id": "123"}), "body", "connection_id")
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": terminal, "phone": ph}), "body", "connection_id")
	requireError(t, createChat(t, c, map[string]any{"connection_id": wa + 1000000, "phone": ph}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph, "contact_id": 999999999}), 404, 1000, "CONTACT_NOT_FOUND")
	// None of these made a chat.
	requireError(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s@c.us", wa, digits(ph)), nil, key(c.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")

	// Rule 3a: a contact with the phone takes the chat.
	ann := requireJSON(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Ann", "phones": []any{map[string]any{"phone": ph}}}, key(c.Key)...), 200, anyPresent).(map[string]any)
	requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": ph}), 200,
		map[string]any{"chat_id": anyID, "contact_id": ann["id"], "created_chat": true, "created_contact": false})
}

// TestCreateTelegramAndMaxChats: the messenger side resolves the person;
// rule 3c binds a new chat to an explicit contact; rule 5 gives a
// max_personal chat by chat id a profile link.
func TestCreateTelegramAndMaxChats(t *testing.T) {
	c := newCompany(t, nil)
	tg := idOf(createTelegram(t, c, newPhone()))
	r := createChat(t, c, map[string]any{"connection_id": tg, "user_name": "@Ann_Smith"})
	byName := requireJSON(t, r, 200, map[string]any{"chat_id": anyID, "contact_id": anyID, "created_chat": true, "created_contact": true}).(map[string]any)
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", byName["chat_id"]), nil, key(c.Key)...), 200,
		chatJSON(tg, byName["contact_id"], "ann_smith", "@Ann_Smith", nil, "Ann_Smith", nil))

	bob := requireJSON(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Bob"}, key(c.Key)...), 200, anyPresent).(map[string]any)
	r = createChat(t, c, map[string]any{"connection_id": tg, "chat_id": "5550001", "contact_id": bob["id"], "name": "Bob T"})
	byID := requireJSON(t, r, 200, map[string]any{"chat_id": anyID, "contact_id": bob["id"], "created_chat": true, "created_contact": false}).(map[string]any)
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", byID["chat_id"]), nil, key(c.Key)...), 200,
		chatJSON(tg, bob["id"], "5550001", "Bob T", nil, nil, nil))
	// The contact id is only for a new chat: the existing one keeps Bob.
	carl := requireJSON(t, api(t, "POST", cpath(c, "/contacts/"), map[string]any{"name": "Carl"}, key(c.Key)...), 200, anyPresent).(map[string]any)
	requireJSON(t, createChat(t, c, map[string]any{"connection_id": tg, "chat_id": "5550001", "contact_id": carl["id"]}), 200,
		map[string]any{"chat_id": byID["chat_id"], "contact_id": bob["id"], "created_chat": false, "created_contact": false})

	ph := newPhone()
	sandboxAccount(t, "max_personal", ph, nil)
	sid := requireSession(t, api(t, "POST", cpath(c, "/max_personal/init"), map[string]any{"phone": ph}, key(c.Key)...), "waiting_for_code")
	requireSession(t, api(t, "POST", cpath(c, "/max_personal/login"), map[string]any{"session_id": sid, "code": sentCode(t, "max_personal", sid)}, key(c.Key)...), "authenticated")
	mx := idOf(mustCreate(t, c, "max_personal", map[string]any{"session_id": sid}))
	r = createChat(t, c, map[string]any{"connection_id": mx, "chat_id": "777"})
	m := requireJSON(t, r, 200, map[string]any{"chat_id": anyID, "contact_id": anyID, "created_chat": true, "created_contact": true}).(map[string]any)
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", m["chat_id"]), nil, key(c.Key)...), 200,
		chatJSON(mx, m["contact_id"], "777", "777", nil, nil, "https://max.ru/u/777"))
	requireLoc(t, createChat(t, c, map[string]any{"connection_id": mx, "user_name": "x"}), "body", "user_name")
}

// TestCreateChatRace: one person created at once from many requests is one
// chat and one contact.
func TestCreateChatRace(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	ph := newPhone()
	const n = 12
	var wg sync.WaitGroup
	out := make([]response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = call(t, "POST", cpath(c, "/messaging/chats/"), map[string]any{"connection_id": wa, "phone": ph}, key(c.Key)...)
		}()
	}
	wg.Wait()
	chats, contacts, createdChats, createdContacts := map[any]bool{}, map[any]bool{}, 0, 0
	for _, r := range out {
		require.Equal(t, 200, r.Status, "%s", r.Body)
		m := r.JSON(t)
		chats[m["chat_id"]], contacts[m["contact_id"]] = true, true
		if m["created_chat"] == true {
			createdChats++
		}
		if m["created_contact"] == true {
			createdContacts++
		}
	}
	require.Len(t, chats, 1)
	require.Len(t, contacts, 1)
	require.Equal(t, 1, createdChats)
	require.Equal(t, 1, createdContacts)
}

// TestMarkAnsweredAndAvailability: mark_answered is 204 (404 15000 for no
// chat); a non-business chat is always open; a business chat's session is
// closed until the person writes, and its balance is the company's.
func TestMarkAnsweredAndAvailability(t *testing.T) {
	c := newCompany(t, nil)
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	chat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": newPhone()}), 200, anyPresent).(map[string]any)["chat_id"]
	r := api(t, "POST", cpath(c, "/messaging/chats/%v/actions/mark_answered", chat), nil, key(c.Key)...)
	require.Equal(t, 204, r.Status, "%s", r.Body)
	require.Empty(t, r.Body)
	requireError(t, api(t, "POST", cpath(c, "/messaging/chats/%d/actions/mark_answered", 999999999), nil, key(c.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v/availability", chat), nil, key(c.Key)...), 200,
		map[string]any{"chat_id": chat, "is_session_open": true, "session_expires_at": nil, "dialogs_balance": nil, "is_balance_sufficient": true})
	requireError(t, api(t, "GET", cpath(c, "/messaging/chats/%d/availability", 999999999), nil, key(c.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")

	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	ph := newPhone()
	bchat := requireJSON(t, createChat(t, c, map[string]any{"connection_id": waba, "phone": ph}), 200, anyPresent).(map[string]any)["chat_id"]
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v", bchat), nil, key(c.Key)...), 200,
		chatJSON(waba, anyID, digits(ph), ph, digits(ph), nil, nil))
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v/availability", bchat), nil, key(c.Key)...), 200,
		map[string]any{"chat_id": bchat, "is_session_open": false, "session_expires_at": nil, "dialogs_balance": 0, "is_balance_sufficient": false})
	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/waba_dialogs", c.ID), map[string]any{"count": 3}, operator()...), 200,
		map[string]any{"waba_dialogs_balance": 3})
	requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%v/availability", bchat), nil, key(c.Key)...), 200,
		map[string]any{"chat_id": bchat, "is_session_open": false, "session_expires_at": nil, "dialogs_balance": 3, "is_balance_sufficient": true})
}
