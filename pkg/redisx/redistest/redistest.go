// Package redistest connects tests to the real Redis that `make test`
// starts.
//
// Tests of many packages run at once in separate processes against one
// server, and Redis has only 16 numbered databases, so tests do not get a
// database each: each gets a unique key prefix instead, and must put it in
// front of every key it uses (the code under test takes the prefix as a
// constructor argument, as ratelimit.New does). The prefix's keys are
// deleted when the test ends.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/redisx"
)

// EnvAddr names the variable holding the test Redis address (host:port).
// deploy/local/test.sh sets it.
const EnvAddr = "SWITCHBOARD_TEST_REDIS_ADDR"

// New returns a client on the test Redis and the test's own key prefix
// ("test:<random hex>:"). The client is closed and every key containing
// the prefix deleted when the test ends.
func New(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Fatalf("redistest: %s is not set. Integration tests need the Redis server that "+
			"`make test` starts: run `make test`, or start one with "+
			"`deploy/local/infra.sh start DIR PGPORT REDISPORT` and export %s=<its REDIS_ADDR>", EnvAddr, EnvAddr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb, err := redisx.Open(ctx, addr)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	prefix := "test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Libraries may put their own prefix in front (redis_rate writes
		// "rate:<key>"), so match the prefix anywhere. It is hex and colons
		// only: nothing to escape in the pattern.
		iter := rdb.Scan(ctx, 0, "*"+prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("redistest: scan %s: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("redistest: delete %s keys: %v", prefix, err)
			}
		}
	})
	return rdb, prefix
}
