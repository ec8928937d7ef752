package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// TestWabaTemplateCreatedAtIsUpdatedAt: a business template just stored,
// by a create or as a connection's auto template, was updated when it was
// created: one instant, not two readings of the clock a microsecond apart.
// Many rows, because two readings straddle a microsecond only now and then.
func TestWabaTemplateCreatedAtIsUpdatedAt(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	body := "Hello {{1}}"
	for i := range 300 {
		tmpl := domain.BusinessTemplate{CompanyID: 9, ConnectionID: 90, Name: fmt.Sprintf("t_%06d", i), CustomName: "t",
			Locale: "en", Category: "UTILITY", Status: domain.TemplateSubmitted,
			Components: []domain.Component{{Type: domain.ComponentBody, Text: &body}}, Examples: domain.Examples{BodyText: []string{"Ann"}}}
		got, err := r.CreateWabaTemplate(ctx, tmpl)
		require.NoError(t, err)
		require.Equal(t, got.CreatedAt, got.UpdatedAt, "template %s", got.Name)
		read, err := r.WabaTemplate(ctx, 9, 90, tmpl.Name)
		require.NoError(t, err)
		require.Equal(t, got, read, "answered as stored")
	}
	for conn := range int64(100) {
		auto := func() domain.BusinessTemplate {
			return domain.BusinessTemplate{CompanyID: 9, ConnectionID: 100 + conn, Name: "switchboard_auto_text", CustomName: "switchboard_auto_text",
				Locale: "en", Category: "UTILITY", Status: domain.TemplateApproved, Auto: true,
				Components: []domain.Component{{Type: domain.ComponentBody, Text: &body}}}
		}
		got, err := r.AutoWabaTemplate(ctx, 9, 100+conn, auto)
		require.NoError(t, err)
		require.Equal(t, got.CreatedAt, got.UpdatedAt, "auto template of connection %d", 100+conn)
	}
}

// TestReadOfUndeliveredIsOneInstant: a read receipt of a message never
// reported delivered tells both at once, so delivered_at is read_at (as
// stored and as the next read shows it).
func TestReadOfUndeliveredIsOneInstant(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 8, 80, domain.Telegram, "4242")
	for range 5 {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 8, ChatID: chatID, ConnectionID: 80,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
		_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
		require.NoError(t, err)
		require.NoError(t, r.ApplyReceipt(ctx, app.Receipt{MessageID: m.ID, Status: app.Read}, time.Time{}))
		got, err := r.Message(ctx, 8, m.ID)
		require.NoError(t, err)
		require.NotNil(t, got.ReadAt)
		require.NotNil(t, got.DeliveredAt)
		require.Equal(t, *got.ReadAt, *got.DeliveredAt)
		require.Equal(t, []string{domain.EventMessageDelivered, domain.EventMessageRead}, outboxTypes(t, r, m.ID))
	}
}

// outboxTypes are the event types written for one message, in order.
func outboxTypes(t *testing.T, r *Repo, messageID string) []string {
	t.Helper()
	rows, err := r.db.Query(context.Background(), `SELECT event_type FROM outbox
		WHERE payload->'event'->>'message_id' = $1 ORDER BY seq`, messageID)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var typ string
		require.NoError(t, rows.Scan(&typ))
		out = append(out, typ)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSaveOutboundOneStatementAsTransaction: the common send's one
// statement and the transaction SaveOutbound keeps for queue numbers and
// idempotency keys store the same rows and answer the same: the message
// stamped at the chat's last_message_at, the chat's unanswered count reset,
// the send queued, the blacklist item shown; a chat of another company is
// not found and stores nothing.
func TestSaveOutboundOneStatementAsTransaction(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 8, 80, domain.Telegram, "4343")
	_, err := r.db.Exec(ctx, `UPDATE chats SET unanswered_count = 3 WHERE id = $1`, chatID)
	require.NoError(t, err)
	_, err = r.db.Exec(ctx, `INSERT INTO blacklist_items (company_id, connection_id, source_chat_id) VALUES (8, 80, '4343')`)
	require.NoError(t, err)
	replied := uuid.NewString()
	save := func(opts app.SaveOpts) (app.Saved, domain.Message) {
		m := domain.Message{ID: uuid.NewString(), CompanyID: 8, ChatID: chatID, ConnectionID: 80,
			Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"},
			Author:           &domain.Author{ID: "a", Name: "Owner"},
			Markup:           map[string]any{"inline_keyboard": []any{}},
			ReplyToMessageID: &replied, ReplyToSourceMessageID: nil}
		saved, err := r.SaveOutbound(ctx, m, opts)
		require.NoError(t, err)
		stored, err := r.Message(ctx, 8, m.ID)
		require.NoError(t, err)
		var queued int
		require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends WHERE message_id = $1 AND company_id = 8`, m.ID).Scan(&queued))
		require.Equal(t, 1, queued)
		return saved, stored
	}
	fast, fastStored := save(app.SaveOpts{})
	_, err = r.db.Exec(ctx, `UPDATE chats SET unanswered_count = 3 WHERE id = $1`, chatID)
	require.NoError(t, err)
	slow, slowStored := save(app.SaveOpts{Queue: true})

	require.Equal(t, fast.Message.CreatedAt, *fast.Chat.LastMessageAt)
	require.Equal(t, fast.Message.CreatedAt, fastStored.CreatedAt)
	require.Zero(t, fast.Chat.UnansweredCount)
	require.NotNil(t, fast.Chat.BlacklistItemID)
	require.Equal(t, "4343", fast.Message.SourceChatID)
	// The two paths differ only in what differs between two sends.
	norm := func(s app.Saved, stored domain.Message) (app.Saved, domain.Message) {
		s.Message.ID, stored.ID = "", ""
		s.Message.CreatedAt, stored.CreatedAt = time.Time{}, time.Time{}
		s.Chat.LastMessageAt, s.QueueNumber = nil, 0
		return s, stored
	}
	f1, f2 := norm(fast, fastStored)
	s1, s2 := norm(slow, slowStored)
	require.Equal(t, s1, f1)
	require.Equal(t, s2, f2)

	_, err = r.SaveOutbound(ctx, domain.Message{ID: uuid.NewString(), CompanyID: 9, ChatID: chatID, ConnectionID: 80,
		Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "x"}}, app.SaveOpts{})
	require.ErrorIs(t, err, domain.ErrNotFound)
	var n int
	require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) FROM messages WHERE chat_id = $1`, chatID).Scan(&n))
	require.Equal(t, 2, n)
}
