package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/ratelimit"
	"switchboard.dev/pkg/redisx/redistest"
)

func newLimiter(t *testing.T) *ratelimit.Limiter {
	rdb, prefix := redistest.New(t)
	return ratelimit.New(rdb, prefix)
}

func TestOnePerSecond(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := context.Background()
	limit := ratelimit.PerSecond(1)

	res, err := l.Allow(ctx, "company-1", limit)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	assert.Zero(t, res.RetryAfter)
	assert.NoError(t, res.Err())

	res, err = l.Allow(ctx, "company-1", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	assert.Greater(t, res.RetryAfter, 900*time.Millisecond)
	assert.LessOrEqual(t, res.RetryAfter, time.Second)
	assert.Equal(t, 1, ratelimit.RetryAfterSeconds(res.RetryAfter))

	e, ok := apierr.FromError(res.Err())
	require.True(t, ok)
	assert.Equal(t, 429, e.Status)
	assert.Equal(t, 1, e.RetryAfter)

	time.Sleep(res.RetryAfter + 20*time.Millisecond)
	res, err = l.Allow(ctx, "company-1", limit)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "allowed again after the period")
}

func TestParallelCallersGetOne(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := context.Background()
	var allowed atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := l.Allow(ctx, "list-contacts", ratelimit.PerSecond(1))
			assert.NoError(t, err)
			if res.Allowed {
				allowed.Add(1)
			} else {
				assert.Equal(t, 1, ratelimit.RetryAfterSeconds(res.RetryAfter))
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.EqualValues(t, 1, allowed.Load())
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c"} {
		res, err := l.Allow(ctx, key, ratelimit.PerSecond(1))
		require.NoError(t, err)
		assert.True(t, res.Allowed, key)
	}
	res, err := l.Allow(ctx, "a", ratelimit.PerSecond(1))
	require.NoError(t, err)
	assert.False(t, res.Allowed)
}

// Two limiters with different prefixes on one Redis do not share counts.
func TestPrefixesAreIndependent(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	a := ratelimit.New(rdb, prefix+"svc-a:")
	b := ratelimit.New(rdb, prefix+"svc-b:")
	ctx := context.Background()
	for _, l := range []*ratelimit.Limiter{a, b} {
		res, err := l.Allow(ctx, "k", ratelimit.PerMinute(1))
		require.NoError(t, err)
		assert.True(t, res.Allowed)
	}
}

func TestBurstAndRemaining(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 10, Period: time.Minute, Burst: 3}
	var got []int
	for range 3 {
		res, err := l.Allow(ctx, "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		got = append(got, res.Remaining)
	}
	assert.Equal(t, []int{2, 1, 0}, got)
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	// One token every 6 s.
	assert.Equal(t, 6, ratelimit.RetryAfterSeconds(res.RetryAfter))
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	l := newLimiter(t)
	ctx := context.Background()
	for _, limit := range []ratelimit.Limit{{}, {Rate: 1}, {Period: time.Second}, {Rate: 1, Period: time.Second, Burst: -1}} {
		_, err := l.Allow(ctx, "k", limit)
		assert.Error(t, err, "%+v", limit)
	}
	_, err := l.Allow(ctx, "", ratelimit.PerSecond(1))
	assert.Error(t, err)
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{
		-1:                      1,
		0:                       1,
		time.Nanosecond:         1,
		999 * time.Millisecond:  1,
		time.Second:             1,
		time.Second + 1:         2,
		1500 * time.Millisecond: 2,
		59*time.Second + 1:      60,
	} {
		assert.Equal(t, want, ratelimit.RetryAfterSeconds(d), d.String())
	}
	assert.NoError(t, ratelimit.Result{Allowed: true}.Err())
	e, ok := apierr.FromError(ratelimit.Result{RetryAfter: 2500 * time.Millisecond}.Err())
	require.True(t, ok)
	assert.Equal(t, 3, e.RetryAfter)
}
