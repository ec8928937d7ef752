package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// queueSend is a send that asks for its queue number (as v1 sends do),
// recording the number in its idempotency answer.
func (f snFixture) queueSend(t *testing.T, chat int64, idem *app.Idempotency) (app.SendResult, error) {
	t.Helper()
	return f.s.Send(context.Background(), app.SendCmd{CompanyID: snCompany, ChatID: chat, Type: domain.Text,
		Content: map[string]any{"text": "hi"}, OwnerUserID: 1, OwnerName: "Owner", Idempotency: idem, Queue: true,
		Encode: func(s app.Saved) ([]byte, error) { return []byte{byte(s.QueueNumber)}, nil }})
}

// TestQueueNumber: 1 + the connection's sends accepted earlier and not yet
// taken by the messenger, over all its chats; a send taken (sent or
// failed) leaves the queue; a replay answers the first number; sends in
// parallel each count what committed before them, never themselves.
func TestQueueNumber(t *testing.T) {
	m := &snMessenger{send: func(n int32) (string, error) { return fmt.Sprint("src-", n), nil }}
	f := newSender(t, m, nil)
	other, err := f.repo.FindOrCreateChat(context.Background(), domain.Chat{CompanyID: snCompany, ConnectionID: snConn,
		ConnectionType: domain.Telegram, SourceChatID: "200", Name: "Bob"},
		func(context.Context, domain.Chat, bool) (int64, bool, error) { return 2, true, nil })
	require.NoError(t, err)

	for i, chat := range []int64{f.chat.ID, other.Chat.ID, f.chat.ID} {
		res, err := f.queueSend(t, chat, nil)
		require.NoError(t, err)
		require.EqualValues(t, i+1, res.QueueNumber)
	}
	// Another connection's queue is its own.
	_, err = f.db.Exec(context.Background(), `UPDATE messages SET connection_id = 71 WHERE id IN (SELECT message_id FROM outbound_sends LIMIT 1)`)
	require.NoError(t, err)
	res, err := f.queueSend(t, f.chat.ID, &app.Idempotency{Key: "k1", Hash: []byte("h")})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.QueueNumber)
	_, err = f.db.Exec(context.Background(), `UPDATE messages SET connection_id = $1`, snConn)
	require.NoError(t, err)

	// Taken by the messenger: the queue is empty again.
	f.runSender(t)
	require.Eventually(t, func() bool { return f.count(t, `SELECT count(*) FROM outbound_sends`) == 0 }, 10*time.Second, 5*time.Millisecond)
	res, err = f.queueSend(t, f.chat.ID, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.QueueNumber)
	// The replay of k1 answers its first number.
	res, err = f.queueSend(t, f.chat.ID, &app.Idempotency{Key: "k1", Hash: []byte("h")})
	require.NoError(t, err)
	require.Equal(t, []byte{3}, res.Replay)
}

// TestQueueNumberParallel: sends in parallel on a connection whose
// messenger takes nothing: every number is between 1 and the sends before
// it plus one, and the last committed send counts all others.
func TestQueueNumberParallel(t *testing.T) {
	f := newSender(t, &snMessenger{send: func(int32) (string, error) { return "src", nil }}, nil)
	const n = 12
	var wg sync.WaitGroup
	nums := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			res, err := f.queueSend(t, f.chat.ID, nil)
			if err != nil {
				t.Error(err)
				return
			}
			nums[i] = res.QueueNumber
		})
	}
	wg.Wait()
	for _, q := range nums {
		require.True(t, q >= 1 && q <= n, "queue number %d of %d sends", q, n)
	}
	// The sends of one chat are serialised by its lock: each saw all the
	// ones that committed before it.
	require.ElementsMatch(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, nums)
	res, err := f.queueSend(t, f.chat.ID, nil)
	require.NoError(t, err)
	require.EqualValues(t, n+1, res.QueueNumber)
}
