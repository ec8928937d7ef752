package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// telegramChat is a company with an authorised telegram connection and a
// chat with a person on it.
func telegramChat(t *testing.T) (company, int64, int64) {
	t.Helper()
	c := newCompany(t, nil)
	conn := idOf(createTelegram(t, c, newPhone()))
	r := createChat(t, c, map[string]any{"connection_id": conn, "chat_id": "4242", "name": "Ann"})
	chat := int64(requireJSON(t, r, 200, anyPresent).(map[string]any)["chat_id"].(float64))
	return c, conn, chat
}

func send(t *testing.T, c company, body map[string]any, headers ...string) response {
	t.Helper()
	return api(t, "POST", cpath(c, "/messaging/messages/"), body, append(key(c.Key), headers...)...)
}

func textMsg(chat int64, text string) map[string]any {
	return map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": text}}
}

// outboundJSON is a whole outbound message as the API shows it.
func outboundJSON(sourceChatID, typ string, content any, ownerID int64) map[string]any {
	m := map[string]any{
		"message_id": anyUUID, "source_message_id": nil, "chat_id": sourceChatID, "direction": "outbound",
		"message_type": typ,
		"author":       map[string]any{"id": anyUUID, "name": anyString, "external_id": nil, "user_id": ownerID, "phone": nil},
		"created_at":   anyTime, "delivered_at": nil, "read_at": nil, "error_at": nil, "error_type": nil, "error_text": nil,
		"reply_to": nil, "text": nil, "file": nil, "image": nil, "audio": nil, "video": nil, "voice": nil,
		"waba_template": nil, "waba_interactive": nil, "service_order": nil, "waba_order": nil,
	}
	m[typ] = content
	return m
}

func listMessages(t *testing.T, c company, chat int64, query string) []any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/messaging/messages/?chat_id=%d%s", chat, query), nil, key(c.Key)...)
	return requireJSON(t, r, 200, map[string]any{"messages": anyPresent}).(map[string]any)["messages"].([]any)
}

// waitMessage polls the chat's newest messages until one satisfies ok.
func waitMessage(t *testing.T, c company, chat int64, id any, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, m := range listMessages(t, c, chat, "&limit=100") {
			if mm := m.(map[string]any); mm["message_id"] == id && ok(mm) {
				return mm
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %v never reached the expected state", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// messagingEvents are the events messaging emitted to webhooks about one
// message, in order.
func messagingEvents(t *testing.T, messageID any) []map[string]any {
	t.Helper()
	return emitted(t, "messaging", `SELECT payload FROM events
		WHERE payload->'event'->>'message_id' = $1 OR payload->'event'->'message'->>'message_id' = $1 ORDER BY seq`, messageID)
}

func eventTypes(events []map[string]any) []string {
	var out []string
	for _, e := range events {
		out = append(out, e["event_type"].(string))
	}
	return out
}

// TestSendText: the answer is immediate (async) with the stored message;
// the messenger then receives it, and its receipts mark it delivered and
// read, each with its event.
func TestSendText(t *testing.T) {
	c, conn, chat := telegramChat(t)
	r := send(t, c, textMsg(chat, "Hello, Ann"))
	wantChat := chatJSON(conn, anyID, "4242", "Ann", nil, nil, nil)
	wantChat["last_message_at"] = anyTime // the send is the chat's last message
	body := requireJSON(t, r, 200, map[string]any{
		"mode":    "async",
		"chat":    wantChat,
		"message": outboundJSON("4242", "text", map[string]any{"text": "Hello, Ann"}, c.OwnerID),
	}).(map[string]any)
	require.Equal(t, body["message"].(map[string]any)["created_at"], body["chat"].(map[string]any)["last_message_at"])
	msg := body["message"].(map[string]any)
	id := msg["message_id"]

	done := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["read_at"] != nil })
	require.NotNil(t, done["delivered_at"])
	require.NotNil(t, done["source_message_id"])
	require.Nil(t, done["error_at"])
	requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", conn), nil, operator()...), 200, []any{
		map[string]any{"source_message_id": done["source_message_id"], "source_chat_id": "4242", "message_type": "text", "content": map[string]any{"text": "Hello, Ann"}, "markup": nil},
	})
	events := messagingEvents(t, id)
	require.Equal(t, []string{"messages.delivery.delivered", "messages.delivery.read"}, eventTypes(events))
	contact := requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%d", chat), nil, key(c.Key)...), 200, anyPresent).(map[string]any)["contact_id"]
	require.Equal(t, map[string]any{"company_id": float64(c.ID), "event_type": "messages.delivery.read",
		"event": map[string]any{"connection_id": float64(conn), "contact_id": contact, "chat_id": float64(chat), "message_id": id}}, events[1])
}

// TestSendBehaviours: fail stores the messenger's error and its event;
// accept stays quiet until a receipt comes, and receipts never move a
// message backwards.
func TestSendBehaviours(t *testing.T) {
	c, conn, chat := telegramChat(t)
	behave := func(body map[string]any) {
		r := api(t, "PUT", p("/sandbox/v1/connections/%d/behaviour", conn), body, operator()...)
		require.Equal(t, 200, r.Status, "%s", r.Body)
	}
	behave(map[string]any{"outbound": "fail", "error_type": "MESSENGER_USER_NOT_FOUND", "error_text": "no such user"})
	id := requireJSON(t, send(t, c, textMsg(chat, "one")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	failed := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["error_at"] != nil })
	require.Equal(t, "MESSENGER_USER_NOT_FOUND", failed["error_type"])
	require.Equal(t, "no such user", failed["error_text"])
	require.Nil(t, failed["delivered_at"])
	events := messagingEvents(t, id)
	require.Equal(t, []string{"messages.delivery.error"}, eventTypes(events))
	require.Equal(t, "MESSENGER_USER_NOT_FOUND", events[0]["event"].(map[string]any)["error_type"])

	behave(map[string]any{"outbound": "accept"})
	id = requireJSON(t, send(t, c, textMsg(chat, "two")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["source_message_id"] != nil })
	time.Sleep(600 * time.Millisecond) // longer than the sandbox's receipt delays
	quiet := waitMessage(t, c, chat, id, func(map[string]any) bool { return true })
	require.Nil(t, quiet["delivered_at"], "accept sends no receipts")
	status := func(s string) {
		r := api(t, "POST", p("/sandbox/v1/messages/%v/status", id), map[string]any{"status": s}, operator()...)
		require.Equal(t, 204, r.Status, "%s", r.Body)
	}
	status("read")
	read := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["read_at"] != nil })
	require.NotNil(t, read["delivered_at"], "read implies delivered")
	require.Equal(t, read["read_at"], read["delivered_at"], "a read of an undelivered message tells both at one instant")
	status("delivered")
	status("read")
	again := waitMessage(t, c, chat, id, func(map[string]any) bool { return true })
	require.Equal(t, read["delivered_at"], again["delivered_at"])
	require.Equal(t, read["read_at"], again["read_at"])
	require.Equal(t, []string{"messages.delivery.delivered", "messages.delivery.read"}, eventTypes(messagingEvents(t, id)))

	r := api(t, "POST", p("/sandbox/v1/messages/%s/status", "00000000-0000-4000-8000-000000000000"), map[string]any{"status": "read"}, operator()...)
	require.Equal(t, 404, r.Status)
	requireLoc(t, api(t, "PUT", p("/sandbox/v1/connections/%d/behaviour", conn), map[string]any{"outbound": "explode"}, operator()...), "body", "outbound")
	requireError(t, api(t, "PUT", p("/sandbox/v1/connections/%d/behaviour", conn+1000000), map[string]any{"outbound": "fail"}, operator()...), 404, 10000, "CONNECTION_NOT_FOUND")
}

// TestSendIdempotency: one key and body answer the first answer again and
// send once, also when raced; another body with the key is 409 15014.
func TestSendIdempotency(t *testing.T) {
	c, conn, chat := telegramChat(t)
	first := send(t, c, textMsg(chat, "once"), "Idempotency-Key", "k-1")
	require.Equal(t, 200, first.Status, "%s", first.Body)
	again := send(t, c, textMsg(chat, "once"), "Idempotency-Key", "k-1")
	require.JSONEq(t, string(first.Body), string(again.Body), "the first answer, replayed")
	requireError(t, send(t, c, textMsg(chat, "other"), "Idempotency-Key", "k-1"), 409, 15014, "MESSAGING_IDEMPOTENCY_KEY_REUSED")
	requireLoc(t, send(t, c, textMsg(chat, "x"), "Idempotency-Key", strings.Repeat("k", 256)), "header", "idempotency-key")

	const n = 10
	var wg sync.WaitGroup
	out := make([]response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = call(t, "POST", cpath(c, "/messaging/messages/"), textMsg(chat, "raced"), append(key(c.Key), "Idempotency-Key", "k-race")...)
		}()
	}
	wg.Wait()
	for _, r := range out {
		require.Equal(t, 200, r.Status, "%s", r.Body)
		require.JSONEq(t, string(out[0].Body), string(r.Body))
	}
	var texts []string
	for _, m := range listMessages(t, c, chat, "&limit=100") {
		texts = append(texts, m.(map[string]any)["text"].(map[string]any)["text"].(string))
	}
	require.ElementsMatch(t, []string{"once", "raced"}, texts)
	// The messenger received each once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", conn), nil, operator()...), 200, anyPresent).([]any)
		if len(got) == 2 || time.Now().After(deadline) {
			require.Len(t, got, 2)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSendRefusals: the synchronous refusals store nothing.
func TestSendRefusals(t *testing.T) {
	c, _, chat := telegramChat(t)
	requireError(t, send(t, c, textMsg(999999999, "x")), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "text"}), "body", "text")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": "a"}, "image": map[string]any{"url": "https://x.test/a.png"}}), "body", "image")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": ""}}), "body", "text", "text")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "sticker", "text": map[string]any{"text": "a"}}), "body", "message_type")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "text": map[string]any{"text": "a"}}), "body", "message_type")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": map[string]any{"caption": "no url"}}), "body", "image", "url")
	requireError(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": map[string]any{"url": "ftp://x.test/a.png"}}), 400, 15011, "MESSAGING_FILE_URL_NOT_SUPPORTED")
	requireError(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "file", "file": map[string]any{"url": "/relative.pdf"}}), 400, 15011, "MESSAGING_FILE_URL_NOT_SUPPORTED")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "waba_template", "waba_template": map[string]any{"template_name": "hello", "template_locale": "en"}}), "body", "message_type")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "waba_order", "waba_order": map[string]any{"currency": "RUB"}}), "body", "message_type")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": "a"}, "markup": map[string]any{"inline_keyboard": []any{}}}), "body", "markup")
	requireLoc(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "text", "text": map[string]any{"text": "a"}, "reply_to": map[string]any{"message_id": "00000000-0000-4000-8000-000000000000"}}), "body", "reply_to", "message_id")
	require.Empty(t, listMessages(t, c, chat, ""), "refusals store nothing")

	// A whatsapp connection never authorised has no provider: 500 10020,
	// nothing stored.
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	waChat := int64(requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": newPhone()}), 200, anyPresent).(map[string]any)["chat_id"].(float64))
	requireError(t, send(t, c, textMsg(waChat, "hi")), 500, 10020, "CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED")
	require.Empty(t, listMessages(t, c, waChat, ""))

	// A business chat whose dialog session never opened takes templates only.
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	wabaChat := int64(requireJSON(t, createChat(t, c, map[string]any{"connection_id": waba, "phone": newPhone()}), 200, anyPresent).(map[string]any)["chat_id"].(float64))
	requireError(t, send(t, c, textMsg(wabaChat, "hi")), 400, 15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED")

	// Another company's chat is not found.
	other := newCompany(t, nil)
	requireError(t, send(t, other, textMsg(chat, "x")), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	requireError(t, api(t, "GET", cpath(other, "/messaging/messages/?chat_id=%d", chat), nil, key(other.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
}

// TestSendMediaReplyAndList: a media message keeps every content field,
// a reply names the message replied to, and the list pages backwards with
// until.
func TestSendMediaReplyAndList(t *testing.T) {
	c, _, chat := telegramChat(t)
	image := map[string]any{"url": "https://files.example.com/cat.png", "caption": "a cat", "name": "cat.png", "size": 1024, "mime_type": "image/png"}
	first := requireJSON(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "image", "image": image}), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	require.Equal(t, map[string]any{"url": "https://files.example.com/cat.png", "caption": "a cat", "name": "cat.png", "size": float64(1024), "mime_type": "image/png"}, first["image"])
	bare := requireJSON(t, send(t, c, map[string]any{"chat_id": chat, "message_type": "voice", "voice": map[string]any{"url": "https://files.example.com/v.ogg"}}), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	require.Equal(t, map[string]any{"url": "https://files.example.com/v.ogg", "caption": nil, "name": nil, "size": nil, "mime_type": nil,
		"waba_referred_product": nil}, bare["voice"])
	reply := textMsg(chat, "about the cat")
	reply["reply_to"] = map[string]any{"message_id": first["message_id"]}
	third := requireJSON(t, send(t, c, reply), 200, anyPresent).(map[string]any)["message"].(map[string]any)
	// The replied message's messenger id, once the messenger has it.
	requireValue(t, map[string]any{"source_message_id": anyPresent, "message_id": first["message_id"]}, third["reply_to"])

	all := listMessages(t, c, chat, "")
	require.Len(t, all, 3)
	require.Equal(t, third["message_id"], all[0].(map[string]any)["message_id"], "newest first")
	page := listMessages(t, c, chat, "&limit=1")
	require.Len(t, page, 1)
	until := page[0].(map[string]any)["created_at"].(string)
	rest := listMessages(t, c, chat, "&until="+until)
	require.Len(t, rest, 2)
	require.Equal(t, first["message_id"], rest[1].(map[string]any)["message_id"])
	requireLoc(t, api(t, "GET", cpath(c, "/messaging/messages/"), nil, key(c.Key)...), "query", "chat_id")
	requireLoc(t, api(t, "GET", cpath(c, "/messaging/messages/?chat_id=%d&limit=101", chat), nil, key(c.Key)...), "query", "limit")
}

// TestSendNotPaid: a connection whose subscription is neither paid nor in
// its test period fails its sends with SUBSCRIPTION_NOT_PAID.
func TestSendNotPaid(t *testing.T) {
	c, _, chat := telegramChat(t)
	// A send while paid first: messaging keeps the connection's paid state
	// in memory (adapters/companyview), and billing's change must drop it.
	paidID := requireJSON(t, send(t, c, textMsg(chat, "paid")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	waitMessage(t, c, chat, paidID, func(m map[string]any) bool { return m["delivered_at"] != nil })
	sub := subscriptionOf(t, c, "telegram")
	r := adjust(t, c, sub["id"], map[string]any{"test_until": "2020-01-01T00:00:00Z"})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	id := requireJSON(t, send(t, c, textMsg(chat, "unpaid")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	failed := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["error_at"] != nil })
	require.Equal(t, "SUBSCRIPTION_NOT_PAID", failed["error_type"])
	require.Equal(t, []string{"messages.delivery.error"}, eventTypes(messagingEvents(t, id)))
}

// TestSendWabaDialogs: a business chat the person has written to is open,
// but a send needs the company's dialog balance: with none it fails with
// WABA_DIALOGS_LIMIT_EXCEEDED; the first send outside a paid dialog takes
// one dialog, and later sends in that dialog take none.
func TestSendWabaDialogs(t *testing.T) {
	c := newCompany(t, nil)
	waba := idOf(mustCreate(t, c, "waba", wabaParams))
	ph := newPhone()
	inboundOK(t, waba, map[string]any{
		"chat":    map[string]any{"phone": ph, "name": "Dana"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hello business"}},
	})
	chat := int64(inboundChat(t, c, waba, digits(ph))["id"].(float64))
	availability := func() map[string]any {
		return requireJSON(t, api(t, "GET", cpath(c, "/messaging/chats/%d/availability", chat), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	}
	require.Equal(t, true, availability()["is_session_open"])

	id := requireJSON(t, send(t, c, textMsg(chat, "no dialogs")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	failed := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["error_at"] != nil })
	require.Equal(t, "WABA_DIALOGS_LIMIT_EXCEEDED", failed["error_type"])

	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/waba_dialogs", c.ID), map[string]any{"count": 2}, operator()...), 200,
		map[string]any{"waba_dialogs_balance": 2})
	for _, text := range []string{"first in the dialog", "second in the dialog"} {
		id := requireJSON(t, send(t, c, textMsg(chat, text)), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
		sent := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["source_message_id"] != nil || m["error_at"] != nil })
		require.Nil(t, sent["error_at"], "%v", sent)
	}
	require.EqualValues(t, 1, availability()["dialogs_balance"], "one dialog for both sends")
}

// TestSendBotMarkup: telegram_bot buttons go to the messenger with the
// message.
func TestSendBotMarkup(t *testing.T) {
	c := newCompany(t, nil)
	tok, _ := botToken()
	bot := idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok}))
	inboundOK(t, bot, map[string]any{
		"chat":    map[string]any{"user_id": "777001", "name": "Eve"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "/start"}},
	})
	chat := int64(inboundChat(t, c, bot, "777001")["id"].(float64))
	markup := map[string]any{"inline_keyboard": []any{[]any{map[string]any{"text": "Yes", "callback_data": "yes"}}}}
	body := textMsg(chat, "Continue?")
	body["markup"] = markup
	id := requireJSON(t, send(t, c, body), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	sent := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["source_message_id"] != nil })
	requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", bot), nil, operator()...), 200, []any{
		map[string]any{"source_message_id": sent["source_message_id"], "source_chat_id": "777001", "message_type": "text",
			"content": map[string]any{"text": "Continue?"}, "markup": markup},
	})
}
