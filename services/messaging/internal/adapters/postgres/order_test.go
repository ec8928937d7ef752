package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

// TestReceiptWaitsForItsChat: a receipt's event is numbered after every
// event of its chat that committed first. A person's message held the
// chat's row while a receipt of the chat's outbound message committed
// beside it: the receipt's event had taken the later seq but committed
// first, so the relay sent the two to webhooks in the order opposite to
// messaging's own (TestWebhookDeliveryMessages saw it). The receipt now
// waits for the chat's row, as every writer of the chat's events does.
func TestReceiptWaitsForItsChat(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 7, 70, domain.Telegram, "4242")
	m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chatID, ConnectionID: 70,
		Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
	_, err := r.SaveOutbound(ctx, m, app.SaveOpts{})
	require.NoError(t, err)

	// A writer of the chat's events holds the chat, as SaveInbound does.
	holder, err := r.db.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck // committed below
	var holderPID int
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID))
	_, err = holder.Exec(ctx, `SELECT id FROM chats WHERE id = $1 FOR UPDATE`, chatID)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- r.ApplyReceipt(ctx, app.Receipt{MessageID: m.ID, Status: app.Delivered}, time.Time{}) }()
	// The receipt must come to wait on the holder's lock.
	for waiting := false; !waiting; {
		select {
		case err := <-done:
			require.NoError(t, err)
			t.Fatal("the receipt committed while its chat's row was held")
		case <-time.After(10 * time.Millisecond):
		}
		require.NoError(t, r.db.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid))`, holderPID).Scan(&waiting))
	}
	var holderSeq int64
	require.NoError(t, holder.QueryRow(ctx, `INSERT INTO outbox (topic, company_id, event_type, payload)
		VALUES ('webhooks', 7, 'messages.create', '{}') RETURNING seq`).Scan(&holderSeq))
	require.NoError(t, holder.Commit(ctx))
	require.NoError(t, <-done)

	var receiptSeq int64
	require.NoError(t, r.db.QueryRow(ctx, `SELECT seq FROM outbox WHERE payload->'event'->>'message_id' = $1`, m.ID).Scan(&receiptSeq))
	require.Greater(t, receiptSeq, holderSeq, "the receipt's event is numbered after the event committed before it")
}
