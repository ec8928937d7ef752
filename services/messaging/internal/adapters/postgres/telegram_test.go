package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/migrations"
)

// TestPollLease: one owner at a time; the offset moves only under the
// lease and never back; a released or lapsed lease passes to the next.
func TestPollLease(t *testing.T) {
	ctx := context.Background()
	polls := New(pgtest.New(t, migrations.FS)).Polls()

	next, ok, err := polls.Acquire(ctx, 1, 7, "b1", "a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, next)
	_, ok, err = polls.Acquire(ctx, 1, 7, "b1", "b", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "b took a running lease")
	leases, err := polls.Held(ctx)
	require.NoError(t, err)
	require.Equal(t, map[int64]bool{1: true}, leases)

	held, err := polls.Commit(ctx, 1, "a", 1005)
	require.NoError(t, err)
	require.True(t, held)
	held, err = polls.Commit(ctx, 1, "a", 1001) // never back
	require.NoError(t, err)
	require.True(t, held)
	held, err = polls.Commit(ctx, 1, "b", 2000)
	require.NoError(t, err)
	require.False(t, held, "b moved a's offset")

	// Released: b takes over at a's offset, and a can no longer act.
	require.NoError(t, polls.Release(ctx, 1, "a"))
	leases, err = polls.Held(ctx)
	require.NoError(t, err)
	require.Empty(t, leases)
	next, ok, err = polls.Acquire(ctx, 1, 7, "b1", "b", 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1005), next)
	held, err = polls.Renew(ctx, 1, "a", time.Minute)
	require.NoError(t, err)
	require.False(t, held)
	held, err = polls.Commit(ctx, 1, "a", 3000)
	require.NoError(t, err)
	require.False(t, held)

	// b renews, then stops renewing: once the lease lapses c takes over.
	held, err = polls.Renew(ctx, 1, "b", 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, held)
	_, ok, err = polls.Acquire(ctx, 1, 7, "b1", "c", time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	time.Sleep(400 * time.Millisecond)
	next, ok, err = polls.Acquire(ctx, 1, 7, "b1", "c", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1005), next)

	// The connection given another bot's token: that bot starts from 0
	// (Telegram's update ids are per bot), then keeps its own offset.
	require.NoError(t, polls.Release(ctx, 1, "c"))
	next, ok, err = polls.Acquire(ctx, 1, 7, "b2", "c", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, next)
	held, err = polls.Commit(ctx, 1, "c", 7)
	require.NoError(t, err)
	require.True(t, held)
	next, ok, err = polls.Acquire(ctx, 1, 7, "b2", "c", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(7), next)

	// Other connections are apart.
	_, ok, err = polls.Acquire(ctx, 2, 7, "b1", "b", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
}

// TestPollLeaseRace: many replicas taking one free lease at once: one
// gets it.
func TestPollLeaseRace(t *testing.T) {
	ctx := context.Background()
	polls := New(pgtest.New(t, migrations.FS)).Polls()
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  int
		errs []error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, ok, err := polls.Acquire(ctx, 9, 7, "b1", string(rune('a'+i)), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				won++
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Empty(t, errs)
	require.Equal(t, 1, won)
}
