package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sandbox messengers' side of sends (docs/sandbox.md, "What
// each sandbox messenger reports"): the receipts each type gives, and the
// outbox that shows every copy a messenger received.

// outbox is what the sandbox messenger of a connection received.
func outbox(t *testing.T, conn int64) []any {
	t.Helper()
	return requireJSON(t, api(t, "GET", p("/sandbox/v1/connections/%d/outbox", conn), nil, operator()...), 200, anyPresent).([]any)
}

// waitQuiet waits until the sandbox has sent every receipt it scheduled
// for the connection. A receipt's row is deleted in the transaction that
// applied it, after the receipt's own change committed, so once none is
// left every receipt the messenger will ever send has been applied: what
// a message shows then is final.
func waitQuiet(t *testing.T, conn int64) {
	t.Helper()
	db := serviceDB(t, "messaging")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM sandbox_receipts WHERE connection_id = $1`, conn).Scan(&n))
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %d still has %d receipts to send", conn, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSandboxReceiptsPerType: with the default behaviour (deliver_and_read)
// each messenger type gives the receipts its real messenger gives and no
// other: every type's message is delivered (WhatsApp's by a receipt, the
// others' by the send's answer); Telegram and MAX bots never report a
// read, the rest do. A normal send is exactly one copy in the outbox.
func TestSandboxReceiptsPerType(t *testing.T) {
	c := newCompany(t, nil)
	requireJSON(t, api(t, "POST", p("/admin/v1/companies/%d/waba_dialogs", c.ID), map[string]any{"count": 5}, operator()...), 200, anyPresent)
	tok, _ := botToken()
	suffix := p("%d", time.Now().UnixNano())
	waPhone, wabaPhone := newPhone(), newPhone()
	cases := []struct {
		typ    string
		conn   int64
		chat   map[string]any // the person, as the inbound route takes them
		source string
		read   bool
	}{
		{"whatsapp", authorisedWhatsapp(t, c), map[string]any{"phone": waPhone}, digits(waPhone) + "@c.us", true},
		{"waba", idOf(mustCreate(t, c, "waba", wabaParams)), map[string]any{"phone": wabaPhone}, digits(wabaPhone), true},
		{"telegram", idOf(createTelegram(t, c, newPhone())), map[string]any{"source_chat_id": "61001"}, "61001", true},
		{"telegram_bot", idOf(mustCreate(t, c, "telegram_bot", map[string]any{"bot_token": tok})), map[string]any{"source_chat_id": "61002"}, "61002", false},
		{"max_personal", phoneConnection(t, c, "max_personal"), map[string]any{"source_chat_id": "61003"}, "61003", true},
		{"max_bot", idOf(mustCreate(t, c, "max_bot", map[string]any{"bot_token": "maxbotTOKEN_receipts-" + suffix})), map[string]any{"source_chat_id": "61004"}, "61004", false},
		{"vk_group", idOf(mustCreate(t, c, "vk_group", map[string]any{"group_id": "218000061", "access_token": "vk1.a.receipts"})), map[string]any{"source_chat_id": "61005"}, "61005", true},
		{"vk_direct", phoneConnection(t, c, "vk_direct"), map[string]any{"source_chat_id": "61006"}, "61006", true},
		{"avito", idOf(mustCreate(t, c, "avito", map[string]any{"client_id": "avito-receipts", "client_secret": "avito-receipts-secret"})), map[string]any{"source_chat_id": "61007"}, "61007", true},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			// The person writes first: bots and communities cannot start a
			// chat, and a business chat's session opens.
			tc.chat["name"] = "Person"
			inboundOK(t, tc.conn, map[string]any{"chat": tc.chat,
				"message": map[string]any{"message_type": "text", "text": map[string]any{"text": "hi"}}})
			chat := int64(inboundChat(t, c, tc.conn, tc.source)["id"].(float64))
			id := requireJSON(t, send(t, c, textMsg(chat, "Hello from "+tc.typ)), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]

			waitMessage(t, c, chat, id, func(m map[string]any) bool {
				return m["delivered_at"] != nil && (!tc.read || m["read_at"] != nil)
			})
			waitQuiet(t, tc.conn)
			final := waitMessage(t, c, chat, id, func(map[string]any) bool { return true })
			require.Nil(t, final["error_at"])
			want := []string{"messages.delivery.delivered", "messages.delivery.read"}
			if !tc.read {
				require.Nil(t, final["read_at"], "a %s messenger reports no reads", tc.typ)
				want = want[:1]
			}
			require.Equal(t, want, eventTypes(messagingEvents(t, id)))

			requireValue(t, []any{map[string]any{"source_message_id": final["source_message_id"], "source_chat_id": tc.source,
				"message_type": "text", "content": map[string]any{"text": "Hello from " + tc.typ}, "markup": nil}}, outbox(t, tc.conn))
		})
	}
}

// TestSandboxOutboxShowsDuplicates: a message the worker sends twice (here
// queued again after its send, as a crash before the worker recorded the
// send would) reaches the messenger twice, as a real messenger would
// deliver a second copy; the outbox shows both, each with its own id, and
// the message keeps the id of the copy recorded last.
func TestSandboxOutboxShowsDuplicates(t *testing.T) {
	c, conn, chat := telegramChat(t)
	id := requireJSON(t, send(t, c, textMsg(chat, "Only once, please")), 200, anyPresent).(map[string]any)["message"].(map[string]any)["message_id"]
	first := waitMessage(t, c, chat, id, func(m map[string]any) bool { return m["read_at"] != nil })
	waitQuiet(t, conn)
	copyOf := func(sourceID any) map[string]any {
		return map[string]any{"source_message_id": sourceID, "source_chat_id": "4242", "message_type": "text",
			"content": map[string]any{"text": "Only once, please"}, "markup": nil}
	}
	requireValue(t, []any{copyOf(first["source_message_id"])}, outbox(t, conn))

	db := serviceDB(t, "messaging")
	ctx := context.Background()
	_, err := db.Exec(ctx, `INSERT INTO outbound_sends (message_id, company_id, due_at) VALUES ($1, $2, now())`, id, c.ID)
	require.NoError(t, err)
	// The worker takes it, sends it and records the send (the queue row goes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var queued bool
		require.NoError(t, db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbound_sends WHERE message_id = $1)`, id).Scan(&queued))
		if !queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %v was never sent again", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := waitMessage(t, c, chat, id, func(map[string]any) bool { return true })
	require.NotEqual(t, first["source_message_id"], again["source_message_id"], "the second copy has its own id")
	requireValue(t, []any{copyOf(first["source_message_id"]), copyOf(again["source_message_id"])}, outbox(t, conn))
}
