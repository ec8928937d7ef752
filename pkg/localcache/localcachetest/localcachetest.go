// Package localcachetest runs a pkg/localcache Cache for a test.
package localcachetest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/localcache"
)

// Running runs c on rdb until the test ends, checking its subscription
// every 200 ms, and returns once c answers from memory (every channel
// subscribed).
func Running[V any](t testing.TB, c *localcache.Cache[V], rdb redis.UniversalClient) {
	t.Helper()
	c.Ping = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, rdb)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	require.Eventually(t, c.Live, 5*time.Second, 5*time.Millisecond, "subscription never confirmed")
}
