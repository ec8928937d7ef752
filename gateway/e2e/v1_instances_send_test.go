package e2e

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --- Helpers of the v1 sends and dialogs tests.

// v1Sent is a send's answer.
func v1Sent(chatID string, queue any) map[string]any {
	return map[string]any{"sent": true, "message": "Sent to " + chatID, "id": anyUUID, "queueNumber": queue}
}

// v1SendOK sends through v1 and answers the message id.
func v1SendOK(t *testing.T, k string, conn any, action string, body map[string]any, queue any, headers ...string) string {
	t.Helper()
	r := api(t, "POST", instancePath(conn, action), body, append(key(k), headers...)...)
	return requireJSON(t, r, 200, v1Sent(body["chat_id"].(string), queue)).(map[string]any)["id"].(string)
}

// v2ChatBySource is the v2 chat of a source chat id (nil when none).
func v2ChatBySource(t *testing.T, c company, conn any, source string) map[string]any {
	t.Helper()
	r := api(t, "GET", cpath(c, "/messaging/chats/by_source/?connection_id=%v&source_chat_id=%s", conn, url.QueryEscape(source)), nil, key(c.Key)...)
	if r.Status == 404 {
		return nil
	}
	return requireJSON(t, r, 200, anyPresent).(map[string]any)
}

// waitTaken waits until the messenger has taken every send of the
// connection (the sandbox outbox holds n messages): the next send's
// queueNumber is 1.
func waitTaken(t *testing.T, conn int64, n int) []any {
	t.Helper()
	var got []any
	require.Eventually(t, func() bool { got = outbox(t, conn); return len(got) == n }, 10*time.Second, 20*time.Millisecond)
	return got
}

// --- send_message.

// TestV1InstanceSendMessage: a v1 send is a v2 send: the person's chat
// made as v2's create chat makes it, the message with the owner as author,
// its receipts and events, the sandbox outbox; a group needs its chat;
// Idempotency-Key replays the first answer with its queueNumber.
func TestV1InstanceSendMessage(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	ph := newPhone()
	chatID := digits(ph) + "@c.us"
	require.Nil(t, v2ChatBySource(t, c, wa, chatID))

	id := v1SendOK(t, c.Key, wa, "send_message", map[string]any{"chat_id": chatID, "text": "Hello, Ann"}, 1)
	chat := v2ChatBySource(t, c, wa, chatID)
	requireValue(t, map[string]any{
		"id": anyID, "connection_id": wa, "contact_id": anyID, "source_chat_id": chatID, "name": ph,
		"is_group": false, "avatar_url": nil, "profile_link": nil, "phone": digits(ph), "username": nil,
		"blacklist_item_id": nil, "unanswered_count": 0, "created_at": anyTime, "last_message_at": anyTime,
	}, chat)
	chatNum := int64(chat["id"].(float64))
	// The v2 message: the owner its author; delivered and read by the
	// sandbox's receipts; the messenger received it.
	done := waitMessage(t, c, chatNum, id, func(m map[string]any) bool { return m["read_at"] != nil })
	want := outboundJSON(chatID, "text", map[string]any{"text": "Hello, Ann"}, c.OwnerID)
	want["source_message_id"], want["delivered_at"], want["read_at"] = anyString, anyTime, anyTime
	requireValue(t, want, done)
	requireValue(t, []any{map[string]any{"source_message_id": done["source_message_id"], "source_chat_id": chatID,
		"message_type": "text", "content": map[string]any{"text": "Hello, Ann"}, "markup": nil}}, outbox(t, wa))
	// Its events are a v2 send's: the same kinds, in the same order.
	v2 := requireJSON(t, send(t, c, textMsg(chatNum, "from v2")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	waitMessage(t, c, chatNum, v2, func(m map[string]any) bool { return m["read_at"] != nil })
	waitQuiet(t, wa)
	require.Equal(t, eventTypes(messagingEvents(t, v2)), eventTypes(messagingEvents(t, id)))
	require.Contains(t, eventTypes(messagingEvents(t, id)), "messages.delivery.read")

	// The same chat_id is the same chat, in every writing v1 allows.
	waitTaken(t, wa, 2)
	id2 := v1SendOK(t, c.Key, wa, "send_message", map[string]any{"chat_id": chatID, "text": "again"}, 1)
	require.Equal(t, chat["id"], v2ChatBySource(t, c, wa, chatID)["id"])
	waitMessage(t, c, chatNum, id2, func(m map[string]any) bool { return m["delivered_at"] != nil })

	// Idempotency-Key: the first answer again, queueNumber and all; one
	// message; another body under the key is 409 15014.
	waitTaken(t, wa, 3)
	body := map[string]any{"chat_id": chatID, "text": "once"}
	r := api(t, "POST", instancePath(wa, "send_message"), body, append(key(c.Key), "Idempotency-Key", "v1-once")...)
	first := requireJSON(t, r, 200, v1Sent(chatID, 1)).(map[string]any)
	waitTaken(t, wa, 4)
	r = api(t, "POST", instancePath(wa, "send_message"), body, append(key(c.Key), "Idempotency-Key", "v1-once")...)
	requireJSON(t, r, 200, first)
	requireError(t, api(t, "POST", instancePath(wa, "send_message"), map[string]any{"chat_id": chatID, "text": "twice"},
		append(key(c.Key), "Idempotency-Key", "v1-once")...), 409, 15014, "MESSAGING_IDEMPOTENCY_KEY_REUSED")
	// A v2 send under a v1 key is another request too.
	requireError(t, send(t, c, textMsg(chatNum, "once"), "Idempotency-Key", "v1-once"), 409, 15014, "MESSAGING_IDEMPOTENCY_KEY_REUSED")
	onces := 0
	for _, m := range listMessages(t, c, chatNum, "&limit=100") {
		if txt, _ := m.(map[string]any)["text"].(map[string]any); txt != nil && txt["text"] == "once" {
			onces++
		}
	}
	require.Equal(t, 1, onces)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, outbox(t, wa), 4, "the replay sent nothing")

	// A group: the chat the connection has; an unknown one is 404 15000,
	// nothing made.
	writer := newPhone()
	group := "120363000000" + digits(writer)[4:] + "@g.us"
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"source_chat_id": group, "name": "Team", "is_group": true},
		"author":  map[string]any{"name": "Bob", "phone": writer},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hi all"}},
	})
	gid := v1SendOK(t, c.Key, wa, "send_message", map[string]any{"chat_id": group, "text": "hello team"}, anyPresent)
	gchat := v2ChatBySource(t, c, wa, group)
	waitMessage(t, c, int64(gchat["id"].(float64)), gid, func(m map[string]any) bool { return m["delivered_at"] != nil })
	unknown := "120363999999-1600000000@g.us"
	requireBody(t, `{"error_code":15000,"error_name":"MESSAGING_CHAT_NOT_FOUND","message":"chat not found","detail":{}}`,
		v1(t, c.Key, "POST", instancePath(wa, "send_message"), map[string]any{"chat_id": unknown, "text": "x"}))
	require.Nil(t, v2ChatBySource(t, c, wa, unknown))
}

// TestV1InstanceSendRefusals: v1's order (key, scope, malformed JSON,
// the id, the body's rules, the call's own), every refusal storing
// nothing; a connection never authorised is 10020 as in v2.
func TestV1InstanceSendRefusals(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	path := instancePath(wa, "send_message")
	ok := map[string]any{"chat_id": digits(newPhone()) + "@c.us", "text": "hi"}

	// Keys and scopes: messaging only, and a send is a write.
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	for _, action := range []string{"send_message", "send_file"} {
		ap := instancePath(wa, action)
		require.Equal(t, 401, call(t, "POST", ap, ok).Status)
		require.Equal(t, 401, call(t, "POST", withToken(ap, c.Key), ok).Status)
		require.Equal(t, 401, call(t, "POST", ap, `{"chat_id":`).Status, "the key before the body")
		for _, k := range []string{newKey(t, c.ID, "connections", "integrations"), newKey(t, c.ID, "messaging:read")} {
			requireBody(t, forbidden, v1(t, k, "POST", ap, ok))
			requireBody(t, forbidden, v1(t, k, "POST", ap, `{"chat_id":`))
		}
	}
	msgKey := newKey(t, c.ID, "messaging")
	waitTaken(t, wa, 0)
	v1SendOK(t, msgKey, wa, "send_message", map[string]any{"chat_id": ok["chat_id"], "text": "by a messaging key"}, 1)

	// Malformed JSON before the id; the id before the body's rules.
	r := v1(t, c.Key, "POST", instancePath(999999999, "send_message"), `{"chat_id":`)
	requireLoc(t, r, "body")
	require.Equal(t, "json_invalid", firstError(t, r)["type"])
	requireError(t, v1(t, c.Key, "POST", instancePath(999999999, "send_message"), map[string]any{}), 404, 10000, "CONNECTION_NOT_FOUND")
	tok, _ := botToken()
	bot := mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})
	requireError(t, v1(t, c.Key, "POST", instancePath(bot["id"], "send_message"), ok), 404, 10000, "CONNECTION_NOT_FOUND")
	other := newCompany(t, nil)
	requireError(t, v1(t, other.Key, "POST", path, ok), 404, 10000, "CONNECTION_NOT_FOUND")

	// The body's rules: 422 naming the field.
	r = v1(t, c.Key, "POST", path, map[string]any{"text": "hi"})
	requireLoc(t, r, "body", "chat_id")
	require.Equal(t, "Field required", firstError(t, r)["message"])
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": ok["chat_id"]}), "body", "text")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": ok["chat_id"], "text": ""}), "body", "text")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": ok["chat_id"], "text": 5}), "body", "text")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": 79991234567, "text": "hi"}), "body", "chat_id")
	for _, bad := range []string{"79991234567", "+79991234567@c.us", "79991234567@s.whatsapp.net", "123@c.us", "0000000000@c.us", "abc@g.us", "-1@g.us", "7999 1234567@c.us"} {
		r = v1(t, c.Key, "POST", path, map[string]any{"chat_id": bad, "text": "hi"})
		requireLoc(t, r, "body", "chat_id")
	}
	require.Equal(t, "Value error, chat_id is <phone digits>@c.us for a person or <digits and dashes>@g.us for a group", firstError(t, r)["message"])

	// Never authorised: 10020, no chat made.
	fc := newCompany(t, nil)
	fresh := idOf(mustCreate(t, fc, "whatsapp", nil))
	for _, tc := range []struct {
		action string
		body   map[string]any
	}{
		{"send_message", map[string]any{"chat_id": ok["chat_id"], "text": "hi"}},
		{"send_file", map[string]any{"chat_id": ok["chat_id"], "url": "https://files.example.com/a.pdf", "file_name": "a.pdf"}},
	} {
		requireBody(t, `{"error_code":10020,"error_name":"CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED","message":"whatsapp provider is not supported; contact support","detail":{}}`,
			v1(t, fc.Key, "POST", instancePath(fresh, tc.action), tc.body))
	}
	require.Nil(t, v2ChatBySource(t, fc, fresh, ok["chat_id"].(string)))
	// The body's rules come first there too.
	requireLoc(t, v1(t, fc.Key, "POST", instancePath(fresh, "send_message"), map[string]any{"chat_id": "x", "text": "hi"}), "body", "chat_id")
}

// --- send_file.

// TestV1InstanceSendFile: the type by the name's extension in any case,
// the content of a v2 send of the link (an uploaded file's size and type
// known, another link's null), the caption or null; a refused link is
// 15011 and makes nothing.
func TestV1InstanceSendFile(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	ph := newPhone()
	chatID := digits(ph) + "@c.us"
	cases := []struct {
		name, typ string
		caption   any
	}{
		{"cat.JPG", "image", "a cat"}, {"clip.mp4", "video", nil}, {"voice.OGG", "audio", "listen"},
		{"song.mp3", "audio", nil}, {"report.pdf", "file", nil}, {"archive", "file", "no extension"},
	}
	for i, tc := range cases {
		link := "https://files.example.com/" + url.PathEscape(tc.name)
		body := map[string]any{"chat_id": chatID, "url": link, "file_name": tc.name}
		if tc.caption != nil {
			body["caption"] = tc.caption
		}
		waitTaken(t, wa, i)
		id := v1SendOK(t, c.Key, wa, "send_file", body, 1)
		chat := int64(v2ChatBySource(t, c, wa, chatID)["id"].(float64))
		content := map[string]any{"caption": tc.caption, "name": tc.name, "size": nil, "mime_type": nil, "url": link}
		m := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["delivered_at"] != nil })
		want := outboundJSON(chatID, tc.typ, content, c.OwnerID)
		want["source_message_id"], want["delivered_at"], want["read_at"] = anyString, anyTime, anyPresent
		requireValue(t, want, m)
		got := waitTaken(t, wa, i+1)
		requireValue(t, map[string]any{"source_message_id": m["source_message_id"], "source_chat_id": chatID,
			"message_type": tc.typ, "content": content, "markup": nil}, got[i])
	}

	// An uploaded file: its size and type, as a v2 send gives them; the
	// name v1 gives.
	up, _ := upload(t, c.ID, c.Key, filePart{filename: "scan.png", contentType: "image/png", size: 3000, head: pngMagic})
	link := fileLink(t, up)["url"].(string)
	id := v1SendOK(t, c.Key, wa, "send_file", map[string]any{"chat_id": chatID, "url": link, "file_name": "Invoice.PNG"}, anyPresent)
	chat := int64(v2ChatBySource(t, c, wa, chatID)["id"].(float64))
	m := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["delivered_at"] != nil })
	require.Equal(t, "image", m["message_type"])
	require.Equal(t, map[string]any{"caption": nil, "name": "Invoice.PNG", "size": float64(3000), "mime_type": "image/png", "url": link}, m["image"])

	// Refused links: 15011, nothing made for a new person.
	nobody := digits(newPhone()) + "@c.us"
	for _, bad := range []string{"ftp://files.example.com/a.pdf", "/relative.pdf", "files.example.com/a.pdf", stack.BaseURL + "/files/AAAA"} {
		r := v1(t, c.Key, "POST", instancePath(wa, "send_file"), map[string]any{"chat_id": nobody, "url": bad, "file_name": "a.pdf"})
		requireError(t, r, 400, 15011, "MESSAGING_FILE_URL_NOT_SUPPORTED")
	}
	require.Nil(t, v2ChatBySource(t, c, wa, nobody))
	// The body's rules.
	path := instancePath(wa, "send_file")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": chatID, "file_name": "a.pdf"}), "body", "url")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": chatID, "url": "https://files.example.com/a.pdf"}), "body", "file_name")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"chat_id": chatID, "url": "https://files.example.com/a.pdf", "file_name": ""}), "body", "file_name")
	requireLoc(t, v1(t, c.Key, "POST", path, map[string]any{"url": "https://files.example.com/a.pdf", "file_name": "a.pdf"}), "body", "chat_id")
}

// --- dialogs.

// TestV1InstanceDialogs: one per chat, latest message first (a chat
// without one by its creation), a group's writers in the order of their
// first message, paged; the v2 chats agree.
func TestV1InstanceDialogs(t *testing.T) {
	c := newCompany(t, nil)
	wa := authorisedWhatsapp(t, c)
	list := func(query string) response { return v1(t, c.Key, "GET", instancePath(wa, "dialogs")+query, nil) }
	requireJSON(t, list(""), 200, map[string]any{"dialogs": []any{}})

	// Oldest first: a chat without messages, a v1 send, a group, an
	// inbound person.
	silent := newPhone()
	requireJSON(t, createChat(t, c, map[string]any{"connection_id": wa, "phone": silent, "name": "Silent"}), 200, anyPresent)
	sentTo := newPhone()
	v1SendOK(t, c.Key, wa, "send_message", map[string]any{"chat_id": digits(sentTo) + "@c.us", "text": "hi"}, 1)
	w1, w2, w3 := newPhone(), newPhone(), newPhone()
	group := "120363000000" + digits(w1)[4:] + "-1600000000@g.us"
	for i, w := range []string{w1, w2, w1, w3} {
		inboundOK(t, wa, map[string]any{
			"chat":    map[string]any{"source_chat_id": group, "name": "Team", "is_group": true},
			"author":  map[string]any{"name": p("Writer %d", i), "phone": w},
			"message": map[string]any{"message_type": "text", "text": map[string]any{"text": p("m%d", i)}},
		})
	}
	// A writer without a phone is no participant.
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"source_chat_id": group, "name": "Team", "is_group": true},
		"author":  map[string]any{"name": "Nameless", "external_id": "x-1"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "?"}},
	})
	person := newPhone()
	inboundOK(t, wa, map[string]any{
		"chat":    map[string]any{"phone": person, "name": "Ann Lee"},
		"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hello"}},
	})

	dialog := func(id, name string, group bool, participants []any) map[string]any {
		return map[string]any{"id": id, "name": name, "image": nil,
			"metadata": map[string]any{"isGroup": group, "participants": participants, "groupInviteLink": nil}}
	}
	all := []any{
		dialog(digits(person)+"@c.us", "Ann Lee", false, []any{}),
		dialog(group, "Team", true, []any{digits(w1) + "@c.us", digits(w2) + "@c.us", digits(w3) + "@c.us"}),
		dialog(digits(sentTo)+"@c.us", sentTo, false, []any{}),
		dialog(digits(silent)+"@c.us", "Silent", false, []any{}),
	}
	requireJSON(t, list(""), 200, map[string]any{"dialogs": all})
	requireJSON(t, list("?limit=2"), 200, map[string]any{"dialogs": all[:2]})
	requireJSON(t, list("?limit=2&offset=1"), 200, map[string]any{"dialogs": all[1:3]})
	requireJSON(t, list("?offset=3"), 200, map[string]any{"dialogs": all[3:]})
	requireJSON(t, list("?offset=4"), 200, map[string]any{"dialogs": []any{}})
	requireJSON(t, list("?limit=100"), 200, map[string]any{"dialogs": all})

	// A new message moves its chat first.
	v1SendOK(t, c.Key, wa, "send_message", map[string]any{"chat_id": digits(silent) + "@c.us", "text": "wake up"}, anyPresent)
	requireJSON(t, list("?limit=1"), 200, map[string]any{"dialogs": []any{all[3]}})

	// v2 shows the same chats.
	for _, d := range all {
		id := d.(map[string]any)["id"].(string)
		chat := v2ChatBySource(t, c, wa, id)
		require.Equal(t, d.(map[string]any)["name"], chat["name"])
		require.Equal(t, d.(map[string]any)["metadata"].(map[string]any)["isGroup"], chat["is_group"])
	}

	// The query's rules after the id.
	requireLoc(t, list("?limit=0"), "query", "limit")
	requireLoc(t, list("?limit=101"), "query", "limit")
	requireLoc(t, list("?offset=-1"), "query", "offset")
	requireLoc(t, list("?limit=x"), "query", "limit")
	requireError(t, v1(t, c.Key, "GET", instancePath(999999999, "dialogs")+"?limit=0", nil), 404, 10000, "CONNECTION_NOT_FOUND")
	other := newCompany(t, nil)
	requireError(t, v1(t, other.Key, "GET", instancePath(wa, "dialogs"), nil), 404, 10000, "CONNECTION_NOT_FOUND")

	// Scopes: connections (connections:read reads).
	forbidden := `{"error_code":403,"error_name":"FORBIDDEN","message":"forbidden","detail":"Forbidden"}`
	requireBody(t, forbidden, v1(t, newKey(t, c.ID, "messaging"), "GET", instancePath(wa, "dialogs"), nil))
	require.Equal(t, 200, v1(t, newKey(t, c.ID, "connections:read"), "GET", instancePath(wa, "dialogs"), nil).Status)
	require.Equal(t, 401, call(t, "GET", withToken(instancePath(wa, "dialogs"), c.Key), nil).Status)
}
