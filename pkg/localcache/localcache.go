// Package localcache keeps answers in process memory and forgets them when
// their owner announces a change over Redis pub/sub, so a hot read costs no
// network round trip and a change is still seen at once on every replica.
//
// It fails closed: it answers from memory only while its subscription is
// confirmed live, and forgets everything when the subscription is lost (a
// change may have gone by unheard), loading every answer afresh until it is
// subscribed again. A load that raced with an announcement does not store
// its answer (see Cache.gen), so a value read just before a change cannot
// outlive the change here.
//
// The owner announces after its change is durable (Announce). A process
// that dies between the two leaves other replicas' copies stale until the
// TTL ends, so the TTL bounds how stale a copy can ever be.
package localcache

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/redis/go-redis/v9"
)

// Cache is one kind of answer, by key, invalidated by the keys announced on
// its channel.
type Cache[V any] struct {
	channel string
	what    string // for logs
	entries *expirable.LRU[string, V]
	log     *slog.Logger
	live    atomic.Bool
	// gen counts invalidations (an announcement heard, the subscription
	// lost or regained). A load stores its answer only if gen did not move
	// while it ran; mu makes that check and the store one step against an
	// invalidation's count and removal.
	mu  sync.Mutex
	gen atomic.Uint64
	// Ping is how long the subscription may stay silent before it is
	// checked; a check unanswered within another Ping marks it lost.
	// Set it before Run.
	Ping time.Duration
}

// New keeps at most size answers, each for at most ttl, invalidated by the
// keys announced on channel. what names the cache in logs. Run must run
// for the cache to answer from memory; until then every Get loads.
func New[V any](what, channel string, size int, ttl time.Duration, log *slog.Logger) *Cache[V] {
	return &Cache[V]{
		channel: channel,
		what:    what,
		entries: expirable.NewLRU[string, V](size, nil, ttl),
		log:     log,
		Ping:    5 * time.Second,
	}
}

// Get answers key from memory, or from load (and keeps the answer, unless
// an invalidation went by while load ran). A load's error is returned as is
// and nothing is kept.
func (c *Cache[V]) Get(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	if c.live.Load() {
		if v, ok := c.entries.Get(key); ok {
			return v, nil
		}
	}
	gen := c.gen.Load()
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.live.Load() && c.gen.Load() == gen {
		c.entries.Add(key, v)
	}
	c.mu.Unlock()
	return v, nil
}

// Live reports whether the subscription is confirmed, that is, whether Get
// may answer from memory.
func (c *Cache[V]) Live() bool { return c.live.Load() }

// Generation counts the invalidations so far; tests use it to know an
// announcement was heard.
func (c *Cache[V]) Generation() uint64 { return c.gen.Load() }

// Announce tells every Cache on channel to forget keys, in one round trip.
// The caller's change must already be durable: a load that starts after
// the announcement must see it. Since the change is stored, the
// announcement goes out even when ctx has ended (the caller gone away),
// bounded by a timeout of its own; an error means copies elsewhere stay
// stale until their TTL ends.
func Announce(ctx context.Context, rdb redis.UniversalClient, channel string, keys ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Publish(ctx, channel, k)
		}
		return nil
	})
	return err
}

const announceTimeout = 2 * time.Second

// Run listens for announcements until ctx ends, resubscribing (with a
// growing pause, up to 5 s) whenever the subscription is lost.
func (c *Cache[V]) Run(ctx context.Context, rdb redis.UniversalClient) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if c.listen(ctx, rdb) {
			backoff = 100 * time.Millisecond
		}
		c.down()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen serves one subscription until it fails; it reports whether the
// subscription was ever confirmed.
func (c *Cache[V]) listen(ctx context.Context, rdb redis.UniversalClient) (confirmed bool) {
	ps := rdb.Subscribe(ctx, c.channel)
	defer ps.Close()
	// A read waits for its Ping deadline whatever ctx says: closing the
	// subscription ends it at once, so a stopping process does not wait.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, c.Ping)
		var ne net.Error
		switch {
		case ctx.Err() != nil:
			return confirmed
		case err != nil && errors.As(err, &ne) && ne.Timeout() && !pinged:
			// Silence: ask, and expect the answer within another Ping.
			if err := ps.Ping(ctx); err != nil {
				c.lost(err)
				return confirmed
			}
			pinged = true
			continue
		case err != nil:
			c.lost(err)
			return confirmed
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == c.channel {
				c.invalidate(func() {
					c.entries.Purge()
					c.live.Store(true)
				})
				confirmed = true
			}
		case *redis.Message:
			c.invalidate(func() { c.entries.Remove(m.Payload) })
		}
	}
}

func (c *Cache[V]) lost(err error) {
	c.log.Warn("localcache: invalidation channel lost; loading every answer until it is back",
		"cache", c.what, "channel", c.channel, "err", err)
}

// down stops answering from memory and forgets what it held.
func (c *Cache[V]) down() {
	c.invalidate(func() {
		c.live.Store(false)
		c.entries.Purge()
	})
}

func (c *Cache[V]) invalidate(drop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	drop()
}
