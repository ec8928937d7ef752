package app_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/app"
)

// TestKeyExpiry: the idempotency keys past their window are deleted at
// once and on each later round, the rest stay and still answer, and the
// task ends with its context.
func TestKeyExpiry(t *testing.T) {
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	f := newSender(t, &snMessenger{send: func(int32) (string, error) { return "src", nil }}, now)
	first := map[string]app.SendResult{}
	for _, k := range []string{"k1", "k2"} {
		res, err := f.send(t, k, &app.Idempotency{Key: k, Hash: []byte("h")})
		require.NoError(t, err)
		first[k] = res
	}
	// k1 was recorded a day and an hour ago.
	_, err := f.db.Exec(context.Background(), `UPDATE send_idempotency SET created_at = created_at - interval '25 hours' WHERE key = 'k1'`)
	require.NoError(t, err)
	keys := func() int { return f.count(t, `SELECT count(*) FROM send_idempotency`) }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.s.RunKeyExpiry(ctx, slog.New(slog.DiscardHandler), 5*time.Millisecond) }()
	require.Eventually(t, func() bool { return keys() == 1 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // several rounds
	require.Equal(t, 1, keys(), "a key within its window stays")
	res, err := f.send(t, "k2", &app.Idempotency{Key: "k2", Hash: []byte("h")})
	require.NoError(t, err)
	require.Equal(t, []byte(first["k2"].Message.ID), res.Replay, "and answers its first answer")

	// A day later k2 is past its window too.
	mu.Lock()
	clock = clock.Add(app.IdempotencyWindow + time.Minute)
	mu.Unlock()
	require.Eventually(t, func() bool { return keys() == 0 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}
