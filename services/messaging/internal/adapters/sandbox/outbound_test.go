package sandbox

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

func outboundText(text string) domain.Message {
	return domain.Message{ID: uuid.NewString(), CompanyID: 1, Direction: domain.Outbound, Type: domain.Text,
		Content: map[string]any{"text": text}}
}

// scheduledFor are the receipts waiting to be sent for one copy, in order.
func scheduledFor(t *testing.T, db *pgxpool.Pool, sourceID string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT status FROM sandbox_receipts
		WHERE source_message_id = $1 ORDER BY due_at, id`, sourceID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// TestSendTwiceIsTwoCopies: a message sent twice reaches the messenger
// twice, as a real one would deliver two copies: two rows of the outbox,
// each with its own id and its own receipts, so a test reading the outbox
// sees the duplicate.
func TestSendTwiceIsTwoCopies(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	m := New(db)
	conn := app.Connection{ID: 11, Type: domain.Whatsapp}
	chat := domain.Chat{ID: 5, ConnectionID: 11, SourceChatID: "79990001122@c.us"}
	msg := outboundText("Hello")

	first, err := m.Send(ctx, conn, chat, msg)
	require.NoError(t, err)
	second, err := m.Send(ctx, conn, chat, msg)
	require.NoError(t, err)
	require.NotEqual(t, first.SourceMessageID, second.SourceMessageID, "each copy has its own id")

	out, err := m.Outbox(ctx, conn.ID)
	require.NoError(t, err)
	copyOf := func(sourceID string) Received {
		return Received{MessageID: msg.ID, SourceMessageID: sourceID, SourceChatID: "79990001122@c.us", MessageType: "text",
			Content: map[string]any{"text": "Hello"}}
	}
	require.Equal(t, []Received{copyOf(first.SourceMessageID), copyOf(second.SourceMessageID)}, out)
	require.Equal(t, []string{"delivered", "read"}, scheduledFor(t, db, first.SourceMessageID))
	require.Equal(t, []string{"delivered", "read"}, scheduledFor(t, db, second.SourceMessageID))

	// Another connection's outbox holds none of them.
	other, err := m.Outbox(ctx, 12)
	require.NoError(t, err)
	require.Empty(t, other)
}

// TestReportsPerType: each type's messenger gives only the reports its
// real counterpart gives (docs/sandbox.md, "What each sandbox messenger reports"),
// within what the connection's behaviour lets through.
func TestReportsPerType(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	m := New(db)
	type want struct {
		onAnswer  bool
		scheduled []string
	}
	cases := []struct {
		typ                     domain.Type
		deliverAndRead, deliver want
	}{
		{domain.Whatsapp, want{false, []string{"delivered", "read"}}, want{false, []string{"delivered"}}},
		{domain.Waba, want{false, []string{"delivered", "read"}}, want{false, []string{"delivered"}}},
		{domain.Telegram, want{true, []string{"read"}}, want{true, nil}},
		{domain.TelegramBot, want{true, nil}, want{true, nil}},
		{domain.MaxPersonal, want{true, []string{"read"}}, want{true, nil}},
		{domain.MaxBot, want{true, nil}, want{true, nil}},
		{domain.VKGroup, want{true, []string{"read"}}, want{true, nil}},
		{domain.VKDirect, want{true, []string{"read"}}, want{true, nil}},
		{domain.Avito, want{true, []string{"read"}}, want{true, nil}},
	}
	require.Len(t, cases, len(TypeReports), "every chat type is in the table")
	for i, tc := range cases {
		t.Run(string(tc.typ), func(t *testing.T) {
			conn := app.Connection{ID: int64(100 + i), Type: tc.typ}
			chat := domain.Chat{ID: int64(100 + i), ConnectionID: conn.ID, SourceChatID: "4242"}
			for _, b := range []struct {
				outbound string
				want     want
			}{
				{DeliverAndRead, tc.deliverAndRead},
				{Deliver, tc.deliver},
				{Accept, want{false, nil}},
			} {
				require.NoError(t, m.SetBehaviour(ctx, Behaviour{ConnectionID: conn.ID, Outbound: b.outbound}))
				sent, err := m.Send(ctx, conn, chat, outboundText(b.outbound))
				require.NoError(t, err)
				require.Equal(t, b.want.onAnswer, sent.Delivered, "%s: delivered with the answer", b.outbound)
				got := scheduledFor(t, db, sent.SourceMessageID)
				if len(b.want.scheduled) == 0 {
					require.Empty(t, got, "%s: receipts", b.outbound)
				} else {
					require.Equal(t, b.want.scheduled, got, "%s: receipts", b.outbound)
				}
			}
		})
	}
}
