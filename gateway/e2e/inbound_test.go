package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Inbound messages (design/messaging.md "Inbound messages"): a person
// writes through the sandbox's POST /sandbox/v1/connections/{id}/inbound
// and the platform ingests it as a real messenger's update.

func inboundSend(t *testing.T, conn any, body map[string]any) response {
	t.Helper()
	return api(t, "POST", p("/sandbox/v1/connections/%v/inbound", conn), body, operator()...)
}

// inboundOK sends and answers the source message id the sandbox answered.
func inboundOK(t *testing.T, conn any, body map[string]any) string {
	t.Helper()
	got := requireJSON(t, inboundSend(t, conn, body), 200, map[string]any{"source_message_id": anyString}).(map[string]any)
	return got["source_message_id"].(string)
}

// authorisedWhatsapp is a whatsapp connection logged in by the sandbox's
// QR scan.
func authorisedWhatsapp(t *testing.T, c company) int64 {
	t.Helper()
	wa := idOf(mustCreate(t, c, "whatsapp", nil))
	require.Equal(t, 200, api(t, "POST", cpath(c, "/whatsapp/%d/login", wa), map[string]any{}, key(c.Key)...).Status)
	r := api(t, "POST", p("/sandbox/v1/whatsapp/%d/scan", wa), map[string]any{"phone": newPhone()}, operator()...)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return wa
}

// inboundMessageJSON is a whole inbound message of the API: every content
// field present, null except the one of its type.
func inboundMessageJSON(sourceID any, sourceChatID, typ string, content, author, replyTo any) map[string]any {
	m := map[string]any{
		"message_id": anyUUID, "source_message_id": sourceID, "chat_id": sourceChatID, "direction": "inbound",
		"message_type": typ, "author": author, "created_at": anyTime, "delivered_at": nil, "read_at": nil,
		"error_at": nil, "error_type": nil, "error_text": nil, "reply_to": replyTo,
	}
	for _, f := range []string{"text", "file", "image", "audio", "video", "voice", "waba_template", "waba_interactive", "service_order", "waba_order"} {
		m[f] = nil
	}
	m[typ] = content
	return m
}

func inboundMessages(t *testing.T, c company, chat any) []any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/messaging/messages/?chat_id=%v", chat), nil, key(c.Key)...)
	return requireJSON(t, r, 200, map[string]any{"messages": anyPresent}).(map[string]any)["messages"].([]any)
}

// inboundEvents are the events messaging emitted to webhooks about one
// message: messages.create only.
func inboundEvents(t *testing.T, messageID any) []any {
	t.Helper()
	out := []any{}
	for _, e := range emitted(t, "messaging",
		`SELECT payload FROM events WHERE payload->'event'->'message'->>'message_id' = $1 ORDER BY seq`, messageID) {
		require.Equal(t, "messages.create", e["event_type"])
		out = append(out, e)
	}
	return out
}

func inboundChat(t *testing.T, c company, conn int64, source string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s", conn, source), nil, key(c.Key)...)
	return requireJSON(t, r, 200, anyPresent).(map[string]any)
}

// TestInboundWhatsapp: a person writes to an authorised whatsapp
// connection: the chat appears bound to a contact with one unanswered
// message, the message lists exactly, messages.create carries the spec-6
// payload; a resend is a no-op; mark_answered resets the count; a reply
// resolves; media keep every key; a sandbox-made id is answered.
func TestInboundWhatsapp(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	ph := newPhone()
	source := digits(ph) + "@c.us"
	first := map[string]any{
		"chat":    map[string]any{"phone": spaced(ph), "name": "Ann Lee"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "Hello there"}, "source_message_id": "wamid.A1"},
	}
	require.Equal(t, "wamid.A1", inboundOK(t, wa, first))

	chat := inboundChat(t, c, wa, source)
	requireValue(t, map[string]any{
		"id": anyID, "connection_id": wa, "contact_id": anyID, "source_chat_id": source, "name": "Ann Lee",
		"is_group": false, "avatar_url": nil, "profile_link": nil, "phone": digits(ph), "username": nil,
		"blacklist_item_id": nil, "unanswered_count": 1, "created_at": anyTime, "last_message_at": anyTime,
	}, chat)
	contact := requireJSON(t, api(t, "GET", cpath(c, "/contacts/%v", chat["contact_id"]), nil, key(c.Key)...), 200, anyPresent).(map[string]any)
	require.Equal(t, "Ann Lee", contact["name"])

	list := inboundMessages(t, c, chat["id"])
	require.Len(t, list, 1)
	msg := list[0].(map[string]any)
	requireValue(t, inboundMessageJSON("wamid.A1", source, "text", map[string]any{"text": "Hello there"}, nil, nil), msg)
	require.Equal(t, chat["last_message_at"], msg["created_at"])

	// The event, to the field (spec 6).
	requireValue(t, []any{map[string]any{
		"company_id": c.ID, "event_type": "messages.create",
		"event": map[string]any{
			"connection_id": wa, "contact_id": chat["contact_id"], "chat_id": chat["id"],
			"chat": map[string]any{"id": chat["id"], "name": "Ann Lee", "is_group": false, "phone": digits(ph), "username": nil, "avatar_url": nil},
			"message": map[string]any{
				"message_id": msg["message_id"], "source_message_id": "wamid.A1", "chat_id": source, "direction": "inbound",
				"message_type": "text", "author": nil, "created_at": msg["created_at"], "delivered_at": nil, "read_at": nil,
				"error_at": nil, "error_type": nil, "error_text": nil, "reply_to": nil, "text": map[string]any{"text": "Hello there"},
			},
		},
	}}, inboundEvents(t, msg["message_id"]))

	// A resend of the same id changes nothing and emits nothing.
	first["message"].(map[string]any)["text"] = map[string]any{"text": "Hello again"}
	require.Equal(t, "wamid.A1", inboundOK(t, wa, first))
	require.Equal(t, []any{msg}, inboundMessages(t, c, chat["id"]))
	requireValue(t, chat, inboundChat(t, c, wa, source))
	require.Len(t, inboundEvents(t, msg["message_id"]), 1)

	// mark_answered resets the count; the next message raises it again.
	require.Equal(t, 204, api(t, "POST", cpath(c, "/messaging/chats/%v/actions/mark_answered", chat["id"]), nil, key(c.Key)...).Status)
	require.EqualValues(t, 0, inboundChat(t, c, wa, source)["unanswered_count"])

	// A reply to the first message, a voice note without an id: the
	// sandbox makes one up; media content keeps every key.
	voiceID := inboundOK(t, wa, map[string]any{
		"chat": map[string]any{"source_chat_id": source, "name": "ignored"},
		"message": map[string]any{"message_type": "voice", "voice": map[string]any{"url": "https://cdn.example/v.ogg", "mime_type": "audio/ogg"},
			"reply_to": map[string]any{"source_message_id": "wamid.A1"}},
	})
	require.True(t, strings.HasPrefix(voiceID, "sb-in-"), voiceID)
	list = inboundMessages(t, c, chat["id"])
	require.Len(t, list, 2)
	requireValue(t, inboundMessageJSON(voiceID, source, "voice",
		map[string]any{"caption": nil, "name": nil, "size": nil, "mime_type": "audio/ogg", "url": "https://cdn.example/v.ogg", "waba_referred_product": nil},
		nil, map[string]any{"source_message_id": "wamid.A1", "message_id": msg["message_id"]}), list[0])
	after := inboundChat(t, c, wa, source)
	require.EqualValues(t, 1, after["unanswered_count"])
	require.Equal(t, "Ann Lee", after["name"], "an existing chat keeps its name")
	require.Equal(t, list[0].(map[string]any)["created_at"], after["last_message_at"])
	ev := inboundEvents(t, list[0].(map[string]any)["message_id"])
	require.Len(t, ev, 1)
	require.Equal(t, map[string]any{"source_message_id": "wamid.A1", "message_id": msg["message_id"]},
		ev[0].(map[string]any)["event"].(map[string]any)["message"].(map[string]any)["reply_to"])
	// A reply to an unknown message keeps its id, with no message id.
	unknownID := inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"phone": ph, "name": "Ann"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "?"}, "reply_to": map[string]any{"source_message_id": "gone"}},
	})
	requireValue(t, inboundMessageJSON(unknownID, source, "text", map[string]any{"text": "?"}, nil,
		map[string]any{"source_message_id": "gone", "message_id": nil}), inboundMessages(t, c, chat["id"])[0])
	// Another company sees none of it.
	other := newCompany(t, nil)
	requireError(t, api(t, "GET", cpath(other, "/messaging/messages/?chat_id=%v", chat["id"]), nil, key(other.Key)...), 404, 15000, "MESSAGING_CHAT_NOT_FOUND")
}

// TestInboundGroupAndBlacklist: a group message carries its writer as
// author (and its event a shorter chat); a blacklisted person's messages
// make no chat, no message and no event.
func TestInboundGroupAndBlacklist(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	writer := newPhone()
	group := "120363000000" + digits(writer)[4:] + "@g.us"
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"source_chat_id": group, "name": "Team", "is_group": true},
		"author":  map[string]any{"name": "Bob", "phone": writer, "external_id": digits(writer) + "@c.us"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hi all"}, "source_message_id": "g-1"},
	})
	chat := inboundChat(t, c, wa, group)
	requireValue(t, map[string]any{
		"id": anyID, "connection_id": wa, "contact_id": anyID, "source_chat_id": group, "name": "Team",
		"is_group": true, "avatar_url": nil, "profile_link": nil, "phone": nil, "username": nil,
		"blacklist_item_id": nil, "unanswered_count": 1, "created_at": anyTime, "last_message_at": anyTime,
	}, chat)
	author := map[string]any{"id": anyUUID, "name": "Bob", "external_id": digits(writer) + "@c.us", "user_id": nil, "phone": digits(writer)}
	list := inboundMessages(t, c, chat["id"])
	require.Len(t, list, 1)
	requireValue(t, inboundMessageJSON("g-1", group, "text", map[string]any{"text": "hi all"}, author, nil), list[0])
	msg := list[0].(map[string]any)
	ev := inboundEvents(t, msg["message_id"])
	require.Len(t, ev, 1)
	event := ev[0].(map[string]any)["event"].(map[string]any)
	require.Equal(t, map[string]any{"id": chat["id"], "name": "Team", "is_group": true, "avatar_url": nil}, event["chat"])
	require.Equal(t, msg["author"], event["message"].(map[string]any)["author"])

	// Blocked by phone before the person writes: dropped.
	blocked := newPhone()
	require.Equal(t, 200, api(t, "POST", cpath(c, "/connections/%d/chats_blacklist/", wa), map[string]any{"phone": blocked}, key(c.Key)...).Status)
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"phone": blocked, "name": "Spam"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "buy"}, "source_message_id": "spam-1"},
	})
	requireError(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s@c.us", wa, digits(blocked)), nil, key(c.Key)...),
		404, 15000, "MESSAGING_CHAT_NOT_FOUND")
	var n int
	require.NoError(t, serviceDB(t, "messaging").QueryRow(context.Background(),
		`SELECT count(*) FROM messages WHERE connection_id = $1 AND source_message_id = 'spam-1'`, wa).Scan(&n))
	require.Zero(t, n)
	require.Empty(t, emitted(t, "messaging", `SELECT payload FROM events WHERE connection_id = $1
		AND payload->'event'->'message'->>'source_message_id' = 'spam-1' ORDER BY seq`, wa))
}

// TestInboundRefusals: unknown connections and non-messenger ones are 404
// 10000; content must match the type; a group needs its id; only the
// operator's token reaches the route.
func TestInboundRefusals(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	terminal := idOf(mustCreate(t, c, "tinkoff", map[string]any{"invoice_lifetime_minutes": 60, "credentials": map[string]any{"k": "v"}}))
	ph := newPhone()
	text := map[string]any{"message_type": "text", "text": map[string]any{"text": "hi"}}
	person := map[string]any{"phone": ph, "name": "Ann"}
	requireError(t, inboundSend(t, 999999999, map[string]any{"chat": person, "message": text}), 404, 10000, "CONNECTION_NOT_FOUND")
	requireError(t, inboundSend(t, terminal, map[string]any{"chat": person, "message": text}), 404, 10000, "CONNECTION_NOT_FOUND")

	requireLoc(t, inboundSend(t, wa, map[string]any{"chat": person, "message": map[string]any{"message_type": "text"}}), "body", "message", "text")
	requireLoc(t, inboundSend(t, wa, map[string]any{"chat": person, "message": map[string]any{"message_type": "text",
		"text": map[string]any{"text": "hi"}, "image": map[string]any{"url": "https://cdn.example/a.png"}}}), "body", "message", "image")
	requireLoc(t, inboundSend(t, wa, map[string]any{"chat": person, "message": map[string]any{"message_type": "image",
		"image": map[string]any{"caption": "no link"}}}), "body", "message", "image", "url")
	requireLoc(t, inboundSend(t, wa, map[string]any{"chat": map[string]any{"name": "Team", "is_group": true}, "message": text}),
		"body", "chat", "source_chat_id")
	requireLoc(t, inboundSend(t, wa, map[string]any{"chat": map[string]any{"name": "Nobody"}, "message": text}), "body", "chat", "phone")
	requireLoc(t, inboundSend(t, wa, map[string]any{"message": text}), "body", "chat")
	// None of these made a chat.
	requireError(t, api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%d&source_chat_id=%s@c.us", wa, digits(ph)), nil, key(c.Key)...),
		404, 15000, "MESSAGING_CHAT_NOT_FOUND")

	// The route is the operator's: an API key does not reach it.
	r := call(t, "POST", p("/sandbox/v1/connections/%d/inbound", wa), map[string]any{"chat": person, "message": text}, key(c.Key)...)
	require.Equal(t, 401, r.Status, "%s", r.Body)
}
