package auth

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/redisx/redistest"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// gatedIdentity answers like fakeIdentity, but a lookup waits for gate
// when one is set, so a test can hold it while a revocation goes by.
type gatedIdentity struct {
	*fakeIdentity
	entered, gate chan struct{}
}

func (g *gatedIdentity) Authenticate(ctx context.Context, hash string) (*identityv1.Principal, error) {
	if g.gate != nil {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.fakeIdentity.Authenticate(ctx, hash)
}

// replica is one process's chain: Local in front of the shared Cache.
func replica(t *testing.T, rdb redis.UniversalClient, src Source) *Local {
	t.Helper()
	l := NewLocal(NewCache(rdb, src, time.Minute), time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.c.Ping = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, rdb)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	require.Eventually(t, l.c.Live, 5*time.Second, 5*time.Millisecond, "subscription never confirmed")
	return l
}

func TestLocalServesFromMemoryAndRevokesEverywhere(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	hash := HashKey("sb_test_" + t.Name() + time.Now().String())
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{hash: principal()}}
	a, b := replica(t, rdb, src), replica(t, rdb, src)

	for _, l := range []*Local{a, b, a, b} {
		p, err := l.Authenticate(ctx, hash)
		require.NoError(t, err)
		require.EqualValues(t, 7, p.GetCompanyId())
	}
	// From memory: the shared cache's entry gone, both still answer
	// without asking the store again.
	require.NoError(t, rdb.Del(ctx, cacheKey(hash)).Err())
	for _, l := range []*Local{a, b} {
		_, err := l.Authenticate(ctx, hash)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, src.calls.Load())

	// A reset: both replicas refuse the key as soon as the announcement
	// arrives (in practice well under a millisecond on loopback).
	src.mu.Lock()
	delete(src.keys, hash)
	src.mu.Unlock()
	require.NoError(t, Revoke(ctx, rdb, hash, time.Minute))
	for _, l := range []*Local{a, b} {
		require.Eventually(t, func() bool {
			_, err := l.Authenticate(ctx, hash)
			return err != nil && code(t, err) == 401
		}, 2*time.Second, time.Millisecond)
	}
}

// TestLocalFillRacingRevocation: a lookup that read the principal before a
// reset, and finishes after its announcement, answers its own caller but
// does not keep the principal.
func TestLocalFillRacingRevocation(t *testing.T) {
	rdb, _ := redistest.New(t)
	ctx := context.Background()
	hash := HashKey("sb_test_" + t.Name() + time.Now().String())
	src := &gatedIdentity{fakeIdentity: &fakeIdentity{keys: map[string]*identityv1.Principal{hash: principal()}}, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	l := replica(t, rdb, src)

	answered := make(chan error, 1)
	go func() {
		_, err := l.Authenticate(ctx, hash)
		answered <- err
	}()
	// The lookup is under way (waiting in the store); the reset goes by.
	<-src.entered
	gen := l.c.Generation()
	require.NoError(t, Revoke(ctx, rdb, hash, time.Minute))
	require.Eventually(t, func() bool { return l.c.Generation() > gen }, 2*time.Second, time.Millisecond, "announcement not heard")
	src.gate <- struct{}{}
	require.NoError(t, <-answered)

	src.gate = nil
	_, err := l.Authenticate(ctx, hash)
	require.EqualValues(t, 401, code(t, err), "the racing lookup's principal was kept")
}

// TestLocalFailsClosed: while the subscription is down, nothing is
// answered from memory (a revocation may be missed meanwhile); once it is
// back, memory serves again.
func TestLocalFailsClosed(t *testing.T) {
	shared, _ := redistest.New(t)
	ctx := context.Background()
	// This replica's own client, named, so the test can cut its
	// connections and nobody else's.
	name := fmt.Sprintf("sb-test-%d", time.Now().UnixNano())
	rdb := redis.NewClient(&redis.Options{Addr: shared.Options().Addr, ClientName: name})
	t.Cleanup(func() { _ = rdb.Close() })
	hash := HashKey("sb_test_" + t.Name() + time.Now().String())
	src := &fakeIdentity{keys: map[string]*identityv1.Principal{hash: principal()}}
	l := replica(t, rdb, src)
	_, err := l.Authenticate(ctx, hash)
	require.NoError(t, err)

	// Cut the subscription's connection.
	list, err := shared.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " cmd=subscribe") {
			id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
			require.NoError(t, shared.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
			killed++
		}
	}
	require.Equal(t, 1, killed, "the subscription's connection not found in CLIENT LIST:\n%s", list)
	require.Eventually(t, func() bool { return !l.c.Live() }, 5*time.Second, time.Millisecond, "loss not noticed")
	// A revocation whose announcement nobody heard: only the tombstone.
	require.NoError(t, shared.Set(ctx, cacheKey(hash), revoked, time.Minute).Err())
	_, err = l.Authenticate(ctx, hash)
	require.EqualValues(t, 401, code(t, err), "answered from memory while the channel was down")

	// Back: subscribed again, and memory serves (the store is asked once
	// more, then not again).
	require.Eventually(t, l.c.Live, 10*time.Second, 5*time.Millisecond, "never resubscribed")
	require.NoError(t, shared.Del(ctx, cacheKey(hash)).Err())
	calls := src.calls.Load()
	for range 3 {
		_, err = l.Authenticate(ctx, hash)
		require.NoError(t, err)
	}
	require.Equal(t, calls+1, src.calls.Load())
}
