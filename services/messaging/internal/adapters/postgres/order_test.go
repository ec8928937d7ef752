package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
// waits for the chat's event lock, as every writer of the chat's events
// does.
func TestReceiptWaitsForItsChat(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 7, 70, domain.Telegram, "4242")
	m := savedText(t, r, chatID)

	// A writer of the chat's events holds the chat, as SaveInbound does.
	holder, holderPID := begin(t, r)
	_, err := lockChatEvents(ctx, holder, 7, chatID)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- r.ApplyReceipt(ctx, app.Receipt{MessageID: m.ID, Status: app.Delivered}, time.Time{}) }()
	// The receipt must come to wait on the holder's lock.
	if err, ended := waitBlocked(t, r, holderPID, done); ended {
		require.NoError(t, err)
		t.Fatal("the receipt committed while its chat's events were held")
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

// begin opens a transaction that the test commits or leaves to roll back,
// and answers its backend's pid.
func begin(t *testing.T, r *Repo) (pgx.Tx, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := r.db.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck // a no-op once committed
	var pid int
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	return tx, pid
}

// waitBlocked waits until a session is blocked by holder's locks (ended
// false) or done answers first (ended true, with its error). No clock
// decides: a call that would wait for holder comes to wait, or it ends.
func waitBlocked(t *testing.T, r *Repo, holderPID int, done <-chan error) (err error, ended bool) {
	t.Helper()
	for {
		select {
		case err := <-done:
			return err, true
		case <-time.After(10 * time.Millisecond):
		}
		var waiting bool
		require.NoError(t, r.db.QueryRow(context.Background(), `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid))`, holderPID).Scan(&waiting))
		if waiting {
			return nil, false
		}
	}
}

// TestGroupsDoNotWaitForAcceptedSends: accepting a send updates its chat's
// row and queues no event, so a group of records or receipts of the chat,
// which queues events, does not wait for it (the two used to meet on the
// chat's row: in BenchmarkSendMessages accepted sends spent about as long
// waiting for groups' row locks as running), and an accept does not wait
// for a group.
func TestGroupsDoNotWaitForAcceptedSends(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 7, 70, domain.Telegram, "4242")
	save := func() domain.Message { return savedText(t, r, chatID) }
	first, second := save(), save()

	// An accept in progress holds the chat's row (SaveOutbound's update,
	// held here by an open transaction).
	holder, holderPID := begin(t, r)
	_, err := holder.Exec(ctx, `UPDATE chats SET unanswered_count = 0, last_message_at = clock_timestamp() WHERE id = $1`, chatID)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- r.SendsDone(ctx, []app.SentOutcome{{MessageID: first.ID, SourceMessageID: "s1", Delivered: true}})
	}()
	err, ended := waitBlocked(t, r, holderPID, done)
	require.True(t, ended, "the record of a send waited for an accept of its chat")
	require.NoError(t, err)
	go func() { done <- r.ApplyReceipt(ctx, app.Receipt{MessageID: first.ID, Status: app.Read}, time.Time{}) }()
	err, ended = waitBlocked(t, r, holderPID, done)
	require.True(t, ended, "a receipt waited for an accept of its chat")
	require.NoError(t, err)
	require.NoError(t, holder.Rollback(ctx))

	// And the other way: a group holding the chat's events does not hold
	// up an accept.
	group, groupPID := begin(t, r)
	_, _, err = lockGroup(ctx, group, `m.id = ANY($1::uuid[])`, []string{second.ID})
	require.NoError(t, err)
	b := &pgx.Batch{}
	lockChats(b, map[int64]domain.Chat{chatID: {ID: chatID}})
	require.NoError(t, group.SendBatch(ctx, b).Close())
	go func() { done <- func() error { save(); return nil }() }()
	err, ended = waitBlocked(t, r, groupPID, done)
	require.True(t, ended, "an accept waited for a group of its chat")
	require.NoError(t, err)
}

// TestGroupWaitsForABinding: a contact bound to a chat holds the chat's
// event lock until it commits, so a group recording meanwhile waits and
// then queues its events with the new contact, never the old one after it.
func TestGroupWaitsForABinding(t *testing.T) {
	ctx := context.Background()
	r := New(pgtest.New(t, migrations.FS))
	chatID := testChat(t, r, 7, 70, domain.Telegram, "4242")
	m := savedText(t, r, chatID)

	binder, binderPID := begin(t, r)
	require.NoError(t, bindChat(ctx, binder, chatID, 55))
	done := make(chan error, 1)
	go func() {
		done <- r.SendsDone(ctx, []app.SentOutcome{{MessageID: m.ID, SourceMessageID: "s1", Delivered: true}})
	}()
	if err, ended := waitBlocked(t, r, binderPID, done); ended {
		require.NoError(t, err)
		t.Fatal("a send's record committed while its chat's contact was being bound")
	}
	require.NoError(t, binder.Commit(ctx))
	require.NoError(t, <-done)
	var contact *int64
	require.NoError(t, r.db.QueryRow(ctx, `SELECT (payload->'event'->>'contact_id')::bigint FROM outbox
		WHERE payload->'event'->>'message_id' = $1`, m.ID).Scan(&contact))
	require.NotNil(t, contact)
	require.EqualValues(t, 55, *contact)
}

// savedText stores an accepted text send to chat (company 7, connection 70).
func savedText(t *testing.T, r *Repo, chat int64) domain.Message {
	t.Helper()
	m := domain.Message{ID: uuid.NewString(), CompanyID: 7, ChatID: chat, ConnectionID: 70,
		Direction: domain.Outbound, Type: domain.Text, Content: map[string]any{"text": "hi"}}
	_, err := r.SaveOutbound(context.Background(), m, app.SaveOpts{})
	require.NoError(t, err)
	return m
}
