package sandbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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

// TestSendsTogetherAsOneByOne: sends that come while a group is being
// stored are stored together, in one statement, and each gets what it
// would have got alone: its behaviour's answer (a refusal with the
// connection's error, a delivery on the answer where the type gives one),
// its copy received unless refused, and only the receipts its type and
// behaviour let through.
func TestSendsTogetherAsOneByOne(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	m := New(db)
	errType, errText := "blocked", "the person blocked you"
	behaviours := []string{"", DeliverAndRead, Deliver, Accept, Fail}
	type sendCase struct {
		conn     app.Connection
		outbound string // "" has no behaviour set: deliver_and_read
		msg      domain.Message
	}
	var cases []sendCase
	for typ := range TypeReports {
		for _, b := range behaviours {
			conn := app.Connection{ID: int64(1000 + len(cases)), Type: typ}
			if b != "" {
				bh := Behaviour{ConnectionID: conn.ID, Outbound: b}
				if b == Fail && len(cases)%2 == 0 {
					bh.ErrorType, bh.ErrorText = &errType, &errText
				}
				require.NoError(t, m.SetBehaviour(ctx, bh))
			}
			msg := outboundText(p("to %d", conn.ID))
			if len(cases)%3 == 0 {
				msg.Markup = map[string]any{"inline_keyboard": []any{[]any{map[string]any{"text": "Yes", "callback_data": "y"}}}}
			}
			cases = append(cases, sendCase{conn, b, msg})
		}
	}

	// The first sends, one for each group that may be stored at once, are
	// held in the database (the outbox table locked) until every other
	// send waits behind them in memory.
	lock, err := db.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx) //nolint:errcheck // committed below
	var lockPID int
	require.NoError(t, lock.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&lockPID))
	_, err = lock.Exec(ctx, `LOCK TABLE sandbox_outbox IN SHARE MODE`)
	require.NoError(t, err)
	plugged := make(chan error, storeFlushes)
	for i := range storeFlushes {
		go func() {
			conn := app.Connection{ID: int64(900 + i), Type: domain.Telegram}
			_, err := m.Send(ctx, conn, domain.Chat{ID: conn.ID, ConnectionID: conn.ID, SourceChatID: "plug"}, outboundText("plug"))
			plugged <- err
		}()
	}
	for blocked := 0; blocked < storeFlushes; {
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid))`, lockPID).Scan(&blocked))
	}
	type result struct {
		sent app.Sent
		err  error
	}
	results := make([]result, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chat := domain.Chat{ID: tc.conn.ID, ConnectionID: tc.conn.ID, SourceChatID: p("chat-%d", i)}
			results[i].sent, results[i].err = m.Send(ctx, tc.conn, chat, tc.msg)
		}()
	}
	for queued := 0; queued < len(cases); {
		time.Sleep(5 * time.Millisecond)
		m.mu.Lock()
		queued = len(m.queue)
		m.mu.Unlock()
	}
	require.NoError(t, lock.Commit(ctx))
	for range storeFlushes {
		require.NoError(t, <-plugged)
	}
	wg.Wait()

	for i, tc := range cases {
		r, reports := results[i], TypeReports[tc.conn.Type]
		outbound := tc.outbound
		if outbound == "" {
			outbound = DeliverAndRead
		}
		received, err := m.Outbox(ctx, tc.conn.ID)
		require.NoError(t, err)
		if outbound == Fail {
			var refused *app.SendError
			require.ErrorAs(t, r.err, &refused, "%v %s", tc.conn.Type, outbound)
			want := app.SendError{Type: domain.ErrGeneric, Text: "the messenger refused the message"}
			if i%2 == 0 {
				want = app.SendError{Type: errType, Text: errText}
			}
			require.Equal(t, want, *refused)
			require.Empty(t, received, "a refused message is not received")
			continue
		}
		require.NoError(t, r.err)
		var markup map[string]any
		if tc.msg.Markup != nil {
			markup = tc.msg.Markup
		}
		require.Equal(t, []Received{{MessageID: tc.msg.ID, SourceMessageID: r.sent.SourceMessageID, SourceChatID: p("chat-%d", i),
			MessageType: "text", Content: tc.msg.Content, Markup: markup}}, received, "%v %s", tc.conn.Type, outbound)
		delivers := outbound == Deliver || outbound == DeliverAndRead
		require.Equal(t, reports.DeliveredOnAnswer && delivers, r.sent.Delivered, "%v %s: delivered with the answer", tc.conn.Type, outbound)
		var want []string
		if reports.Delivered && delivers {
			want = append(want, "delivered")
		}
		if reports.Read && outbound == DeliverAndRead {
			want = append(want, "read")
		}
		got := scheduledFor(t, db, r.sent.SourceMessageID)
		if len(want) == 0 {
			require.Empty(t, got, "%v %s: receipts", tc.conn.Type, outbound)
		} else {
			require.Equal(t, want, got, "%v %s: receipts", tc.conn.Type, outbound)
		}
	}
	// One statement (one transaction's now()) stored all but the plugs.
	var stamps int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(DISTINCT created_at) FROM sandbox_outbox WHERE connection_id >= 1000`).Scan(&stamps))
	require.Equal(t, 1, stamps, "the sends that waited were stored together")
}

func p(format string, args ...any) string { return fmt.Sprintf(format, args...) }
