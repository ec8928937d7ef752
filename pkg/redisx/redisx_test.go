package redisx_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/redisx"
	"switchboard.dev/pkg/redisx/redistest"
)

func TestOpen(t *testing.T) {
	addr := os.Getenv(redistest.EnvAddr)
	if addr == "" {
		t.Fatalf("%s is not set: run `make test`", redistest.EnvAddr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, a := range []string{addr, "redis://" + addr + "/0"} {
		rdb, err := redisx.Open(ctx, a)
		require.NoError(t, err, a)
		require.NoError(t, rdb.Ping(ctx).Err())
		require.NoError(t, rdb.Close())
	}

	_, err := redisx.Open(ctx, "127.0.0.1:1")
	assert.Error(t, err)
	_, err = redisx.Config{Addr: "redis://%zz"}.Open(ctx)
	assert.Error(t, err)
}

func TestRedistestPrefixes(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("a", func(t *testing.T) {
		rdb, prefix := redistest.New(t)
		first = prefix
		require.NoError(t, rdb.Set(ctx, prefix+"k", "a", time.Minute).Err())
		require.NoError(t, rdb.Set(ctx, "lib:"+prefix+"k", "a", time.Minute).Err())
	})
	rdb, prefix := redistest.New(t)
	assert.NotEqual(t, first, prefix)
	// The first test's keys went with it, including ones a library prefixed.
	n, err := rdb.Exists(ctx, first+"k", "lib:"+first+"k").Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}
