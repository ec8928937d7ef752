package localcache_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/localcache"
	"switchboard.dev/pkg/localcache/localcachetest"
	"switchboard.dev/pkg/redisx"
	"switchboard.dev/pkg/redisx/redistest"
)

// counter is a load that counts its calls and answers the count.
type counter struct{ n int }

func (c *counter) load(context.Context) (int, error) {
	c.n++
	return c.n, nil
}

// running starts c's Run and waits until its subscription is confirmed.
func running(t *testing.T, c *localcache.Cache[int], rdb redis.UniversalClient) {
	t.Helper()
	localcachetest.Running(t, c, rdb)
}

func TestGetKeepsUntilItsKeyIsAnnounced(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	c := localcache.New[int]("test", channel, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))

	// Not running: nothing is answered from memory.
	a := &counter{}
	for range 2 {
		_, err := c.Get(ctx, "a", a.load)
		require.NoError(t, err)
	}
	require.Equal(t, 2, a.n)

	running(t, c, rdb)
	b := &counter{}
	for range 3 {
		v, err := c.Get(ctx, "a", a.load)
		require.NoError(t, err)
		require.Equal(t, 3, v)
		v, err = c.Get(ctx, "b", b.load)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}

	// An announcement of a drops a, and only a.
	gen := c.Generation()
	require.NoError(t, localcache.Announce(ctx, rdb, channel, "a"))
	require.Eventually(t, func() bool { return c.Generation() > gen }, 2*time.Second, time.Millisecond)
	v, err := c.Get(ctx, "a", a.load)
	require.NoError(t, err)
	require.Equal(t, 4, v)
	v, err = c.Get(ctx, "b", b.load)
	require.NoError(t, err)
	require.Equal(t, 1, v)

	// Another channel's announcements do not reach it.
	gen = c.Generation()
	require.NoError(t, localcache.Announce(ctx, rdb, prefix+"other", "b"))
	v, err = c.Get(ctx, "b", b.load)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.Equal(t, gen, c.Generation())
}

func TestGetKeepsNoError(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	c := localcache.New[int]("test", prefix+"changes", 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, rdb)

	boom := errors.New("boom")
	calls := 0
	fail := func(context.Context) (int, error) {
		calls++
		return 0, boom
	}
	for range 2 {
		_, err := c.Get(ctx, "k", fail)
		require.ErrorIs(t, err, boom)
	}
	require.Equal(t, 2, calls)
	a := &counter{}
	v, err := c.Get(ctx, "k", a.load)
	require.NoError(t, err)
	require.Equal(t, 1, v)
}

func TestTTLEnds(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	c := localcache.New[int]("test", prefix+"changes", 100, 50*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, rdb)
	a := &counter{}
	_, err := c.Get(ctx, "k", a.load)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := c.Get(ctx, "k", a.load)
		return err == nil && v > 1
	}, 2*time.Second, 10*time.Millisecond, "an entry outlived its TTL")
}

// TestRunEndsWithItsContext: a stopping process is not held by a read
// waiting for its Ping deadline (an hour here): Run returns once its
// context ends. (It used to wait the Ping out: 5 s at every service's
// stop.)
func TestRunEndsWithItsContext(t *testing.T) {
	rdb, prefix := redistest.New(t)
	c := localcache.New[int]("test", prefix+"changes", 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Ping = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, rdb)
	}()
	require.Eventually(t, c.Live, 5*time.Second, 5*time.Millisecond, "subscription never confirmed")
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waits for its subscription's read after its context ended")
	}
}

// TestAnnounceReturnsOnceEveryCacheForgot: when Announce returns, every
// Cache listening on the channel has already dropped the key, so the very
// next Get anywhere loads afresh (no waiting for the message to arrive:
// that was the gap a key revoked through one service and used at once
// through another could slip through). Two caches, many rounds, no
// Eventually.
func TestAnnounceReturnsOnceEveryCacheForgot(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	caches := []*localcache.Cache[int]{
		localcache.New[int]("one", channel, 100, time.Minute, log),
		localcache.New[int]("two", channel, 100, time.Minute, log),
	}
	for _, c := range caches {
		running(t, c, rdb)
	}
	loads := make([]*counter, len(caches))
	for i := range loads {
		loads[i] = &counter{}
	}
	for round := 1; round <= 200; round++ {
		for i, c := range caches {
			v, err := c.Get(ctx, "k", loads[i].load)
			require.NoError(t, err)
			require.Equal(t, round, v, "cache %d, round %d: loaded afresh", i, round)
			v, err = c.Get(ctx, "k", loads[i].load)
			require.NoError(t, err)
			require.Equal(t, round, v, "cache %d, round %d: kept", i, round)
		}
		require.NoError(t, localcache.Announce(ctx, rdb, channel, "k"))
	}
}

// TestAnnounceWaitsForEveryReceiver: a subscriber that never confirms (a
// stalled process) makes Announce wait its timeout and say so, with the
// announcement sent all the same.
func TestAnnounceWaitsForEveryReceiver(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	ps := rdb.Subscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	err = localcache.Announce(ctx, rdb, channel, "k")
	require.ErrorIs(t, err, localcache.ErrUnconfirmed)
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "k", localcache.Key(msg.Payload))

	// Nobody listening: nothing to wait for.
	require.NoError(t, localcache.Announce(ctx, rdb, prefix+"nobody", "k"))
}

// TestAnnounceConfirmedAcrossDatabases: pub/sub is one namespace for the
// whole server, so a Cache whose client selected another database hears
// the announcement, and its confirmation must reach the announcer all the
// same (test stacks share one Redis on different databases).
func TestAnnounceConfirmedAcrossDatabases(t *testing.T) {
	_, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	other, err := redisx.Open(ctx, "redis://"+os.Getenv(redistest.EnvAddr)+"/4")
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	c := localcache.New[int]("test", channel, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, other)
	announcer, err := redisx.Open(ctx, os.Getenv(redistest.EnvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { _ = announcer.Close() })
	a := &counter{}
	for round := 1; round <= 20; round++ {
		v, err := c.Get(ctx, "k", a.load)
		require.NoError(t, err)
		require.Equal(t, round, v)
		require.NoError(t, localcache.Announce(ctx, announcer, channel, "k"))
	}
}

// A cache on several channels forgets a key announced on any of them, and
// Announce waits for its confirmation whichever channel carried it.
func TestAlsoOnForgetsByEveryChannel(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	first, second := prefix+"connections", prefix+"subscriptions"
	c := localcache.New[int]("test", first, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil))).
		AlsoOn(second)
	running(t, c, rdb)

	a := &counter{}
	get := func() int {
		v, err := c.Get(ctx, "7", a.load)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, 1, get())
	require.Equal(t, 1, get())
	for i, ch := range []string{second, first, second} {
		// Announce returns once the cache dropped the key: no waiting here.
		require.NoError(t, localcache.Announce(ctx, rdb, ch, "7"))
		require.Equal(t, i+2, get(), "announced on %s", ch)
		require.Equal(t, i+2, get())
	}
	// A third channel is not heard.
	require.NoError(t, localcache.Announce(ctx, rdb, prefix+"other", "7"))
	require.Equal(t, 4, get())
}

// manyLoad is a GetMany load that records the keys of each call and
// answers each key with its call's number.
type manyLoad struct {
	calls [][]string
	// during, when set, runs inside the call (before it answers).
	during func()
}

func (l *manyLoad) load(_ context.Context, missing []string) (map[string]int, error) {
	l.calls = append(l.calls, slices.Clone(missing))
	if l.during != nil {
		l.during()
	}
	out := make(map[string]int, len(missing))
	for _, k := range missing {
		out[k] = len(l.calls)
	}
	return out, nil
}

// GetMany asks its load once for every key it does not hold (each once,
// in the order given) and keeps the answers until their keys are
// announced.
func TestGetManyLoadsWhatItLacksInOneCall(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	c := localcache.New[int]("test", channel, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, rdb)
	l := &manyLoad{}

	got, err := c.GetMany(ctx, []string{"b", "a", "b", "c"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, got)
	require.Equal(t, [][]string{{"b", "a", "c"}}, l.calls)

	got, err = c.GetMany(ctx, []string{"a", "c"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "c": 1}, got)
	require.Len(t, l.calls, 1, "every key was held: no load")

	// An announcement of a drops a alone: the next call loads a and d.
	require.NoError(t, localcache.Announce(ctx, rdb, channel, "a"))
	got, err = c.GetMany(ctx, []string{"a", "b", "d"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 1, "d": 2}, got)
	require.Equal(t, []string{"a", "d"}, l.calls[1])

	// Get and GetMany share the entries.
	v, err := c.Get(ctx, "d", (&counter{n: 40}).load)
	require.NoError(t, err)
	require.Equal(t, 2, v)
}

// Fail closed: a cache whose Run is not (or no longer) subscribed answers
// nothing from memory; every key is loaded each time.
func TestGetManyFailsClosed(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	c := localcache.New[int]("test", prefix+"changes", 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l := &manyLoad{}
	for range 2 {
		_, err := c.GetMany(ctx, []string{"a", "b"}, l.load)
		require.NoError(t, err)
	}
	require.Len(t, l.calls, 2, "not running: every call loads")

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(runCtx, rdb)
	}()
	require.Eventually(t, c.Live, 5*time.Second, 5*time.Millisecond, "subscription never confirmed")
	for range 2 {
		_, err := c.GetMany(ctx, []string{"a", "b"}, l.load)
		require.NoError(t, err)
	}
	require.Len(t, l.calls, 3, "running: loaded once, then kept")

	// The subscription gone (Run ended), nothing is answered from memory.
	cancel()
	<-done
	require.False(t, c.Live())
	got, err := c.GetMany(ctx, []string{"a", "b"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 4, "b": 4}, got)
}

// A load during which one of its keys is announced keeps nothing: what it
// read may predate the change (the caller gets it, as Get's does).
func TestGetManyLoadRacingAnAnnouncementKeepsNothing(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	channel := prefix + "changes"
	c := localcache.New[int]("test", channel, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, rdb)
	l := &manyLoad{}
	l.during = func() {
		l.during = nil
		// Announce returns once the cache has dropped the key.
		require.NoError(t, localcache.Announce(ctx, rdb, channel, "a"))
	}
	got, err := c.GetMany(ctx, []string{"a", "b"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "b": 1}, got, "the racing call answers what it read")
	got, err = c.GetMany(ctx, []string{"a", "b"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 2}, got, "the racing load's answers were kept")
	got, err = c.GetMany(ctx, []string{"a", "b"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 2, "b": 2}, got)
}

// A failed load keeps nothing and its error is returned as is; a load that
// leaves out a key it was asked is an error too.
func TestGetManyKeepsNoErrorNorAnIncompleteAnswer(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	c := localcache.New[int]("test", prefix+"changes", 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	running(t, c, rdb)
	boom := errors.New("boom")
	_, err := c.GetMany(ctx, []string{"a"}, func(context.Context, []string) (map[string]int, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	_, err = c.GetMany(ctx, []string{"a", "b"}, func(context.Context, []string) (map[string]int, error) {
		return map[string]int{"a": 7}, nil
	})
	require.ErrorContains(t, err, `no value for "b"`)
	l := &manyLoad{}
	got, err := c.GetMany(ctx, []string{"a", "b"}, l.load)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "b": 1}, got, "an answer of a failed load was kept")
}
