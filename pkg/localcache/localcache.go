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
// The owner announces after its change is durable (Announce), and every
// listening Cache confirms that it dropped the keys before Announce
// returns, so the owner's answer is not sent before the replicas forget
// the old value. A process
// that dies between the two leaves other replicas' copies stale until the
// TTL ends, so the TTL bounds how stale a copy can ever be.
package localcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/redis/go-redis/v9"
)

// Cache is one kind of answer, by key, invalidated by the keys announced on
// its channel.
type Cache[V any] struct {
	// channels: the first is New's; AlsoOn adds others.
	channels []string
	what     string // for logs
	entries  *expirable.LRU[string, V]
	log      *slog.Logger
	live     atomic.Bool
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
		channels: []string{channel},
		what:     what,
		entries:  expirable.NewLRU[string, V](size, nil, ttl),
		log:      log,
		Ping:     5 * time.Second,
	}
}

// AlsoOn makes the cache forget the keys announced on channels too, for an
// answer made of several owners' data announced by the same key (a
// company's connections and its subscriptions, say). It answers from
// memory only once every channel is subscribed. Call it before Run.
func (c *Cache[V]) AlsoOn(channels ...string) *Cache[V] {
	c.channels = append(c.channels, channels...)
	return c
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

// GetMany is Get for several keys at once: it answers those it holds from
// memory and the others from one call of load with them (missing, in the
// order of keys, each once), which must answer a value for each of them.
// Each answer is kept unless an invalidation went by while load ran (then
// none is: the check covers the whole load, as Get's does one key's). A
// load's error is returned as is and nothing is kept; load is not called
// when every key is held. The answer has a value for every key.
func (c *Cache[V]) GetMany(ctx context.Context, keys []string, load func(ctx context.Context, missing []string) (map[string]V, error)) (map[string]V, error) {
	out := make(map[string]V, len(keys))
	var missing []string
	asked := make(map[string]bool, len(keys))
	live := c.live.Load()
	for _, k := range keys {
		if asked[k] {
			continue
		}
		asked[k] = true
		if live {
			if v, ok := c.entries.Get(k); ok {
				out[k] = v
				continue
			}
		}
		missing = append(missing, k)
	}
	if len(missing) == 0 {
		return out, nil
	}
	gen := c.gen.Load()
	loaded, err := load(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, k := range missing {
		if _, ok := loaded[k]; !ok {
			return nil, fmt.Errorf("localcache %s: the load answered no value for %q", c.what, k)
		}
	}
	c.mu.Lock()
	keep := c.live.Load() && c.gen.Load() == gen
	for _, k := range missing {
		out[k] = loaded[k]
		if keep {
			c.entries.Add(k, loaded[k])
		}
	}
	c.mu.Unlock()
	return out, nil
}

// Live reports whether the subscription is confirmed, that is, whether Get
// may answer from memory.
func (c *Cache[V]) Live() bool { return c.live.Load() }

// Generation counts the invalidations so far; tests use it to know an
// announcement was heard.
func (c *Cache[V]) Generation() uint64 { return c.gen.Load() }

// Announce tells every Cache on channel to forget keys, and returns once
// every Cache that heard it has forgotten them (see AnnounceWith).
func Announce(ctx context.Context, rdb redis.UniversalClient, channel string, keys ...string) error {
	return AnnounceWith(ctx, rdb, channel, nil, keys...)
}

// AnnounceWith runs with's commands (nil: none) and the announcements of
// keys on channel in one MULTI/EXEC, then waits until every subscriber
// that received them has dropped its copies: each Cache confirms an
// announcement after its removal by a PUBLISH on a channel named for this
// call, which the announcer listens on from before it announces, and
// PUBLISH tells how many subscribers received each key. So when it
// returns nil, no process that was listening still answers the old value,
// and a change is seen "at once" on every replica, not a moment later.
// (Confirmations go by pub/sub, not a list, because pub/sub is one
// namespace per server whatever database a client selected: a subscriber
// on another database of the same server, as test stacks sharing a Redis
// are, hears the announcement and must be able to answer it.)
//
// The caller's change must already be durable: a load that starts after
// the announcement must see it. Since the change is stored, the
// announcement goes out even when ctx has ended (the caller gone away),
// bounded by a timeout of its own. An error wrapping ErrUnconfirmed means
// the announcement went out but some subscriber did not confirm in time (a
// process stalled or stopping: it drops the keys when it reads them, and
// its silence soon marks its Cache down); any other error means copies
// elsewhere stay stale until their TTL ends.
func AnnounceWith(ctx context.Context, rdb redis.UniversalClient, channel string, with func(redis.Pipeliner), keys ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	id := ackPrefix + strconv.FormatUint(ackSeq.Add(1), 36) + "." + strconv.FormatInt(time.Now().UnixNano(), 36) +
		"." + strconv.FormatUint(rand.Uint64(), 36)
	acks := rdb.Subscribe(ctx, id)
	defer acks.Close()
	if _, err := acks.Receive(ctx); err != nil { // the subscription's confirmation
		return fmt.Errorf("localcache: listen for confirmations: %w", err)
	}
	var sent []*redis.IntCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if with != nil {
			with(p)
		}
		for _, k := range keys {
			sent = append(sent, p.Publish(ctx, channel, id+ackSep+k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	var want int64
	for _, c := range sent {
		want += c.Val()
	}
	for got := int64(0); got < want; {
		left := time.Until(deadlineOf(ctx))
		if left <= 0 {
			return fmt.Errorf("%w: %d of %d confirmations: %v", ErrUnconfirmed, got, want, context.DeadlineExceeded)
		}
		msg, err := acks.ReceiveTimeout(ctx, left)
		if err != nil {
			return fmt.Errorf("%w: %d of %d confirmations: %v", ErrUnconfirmed, got, want, err)
		}
		if _, ok := msg.(*redis.Message); ok {
			got++
		}
	}
	return nil
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// ErrUnconfirmed: an announcement went out, but not every subscriber
// confirmed it within the timeout.
var ErrUnconfirmed = errors.New("localcache: announcement not confirmed by every subscriber")

const (
	announceTimeout = 2 * time.Second
	// ackPrefix names the confirmation channels; ackSep separates the
	// channel's name from the key in a message (neither holds it).
	ackPrefix = "sb:localcache:ack:"
	ackSep    = "\x1f"
)

var ackSeq atomic.Uint64

// Key is the key an announcement's message names (the message also names
// where to confirm it); tests that listen on a channel themselves read
// messages with it.
func Key(payload string) string {
	_, key := splitMessage(payload)
	return key
}

func splitMessage(payload string) (ack, key string) {
	if i := strings.Index(payload, ackSep); i >= 0 && strings.HasPrefix(payload, ackPrefix) {
		return payload[:i], payload[i+len(ackSep):]
	}
	return "", payload
}

// confirm tells the announcer that this Cache has dropped the key. A
// failure only makes the announcer wait out its timeout.
func (c *Cache[V]) confirm(ctx context.Context, rdb redis.UniversalClient, ack string) {
	// The key is dropped: say so even while this process stops, or the
	// announcer waits its timeout out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	if err := rdb.Publish(ctx, ack, "1").Err(); err != nil {
		c.log.Warn("localcache: could not confirm an announcement", "cache", c.what, "err", err)
	}
}

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
	ps := rdb.Subscribe(ctx, c.channels...)
	defer ps.Close()
	// A read waits for its Ping deadline whatever ctx says: closing the
	// subscription ends it at once, so a stopping process does not wait.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	pinged := false
	// The channels whose subscription Redis has confirmed: the cache is
	// live once all are, since an announcement on one not yet subscribed
	// would go unheard.
	subscribed := map[string]bool{}
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
			if m.Kind == "subscribe" && slices.Contains(c.channels, m.Channel) && !subscribed[m.Channel] {
				subscribed[m.Channel] = true
				if len(subscribed) == len(c.channels) {
					c.invalidate(func() {
						c.entries.Purge()
						c.live.Store(true)
					})
					confirmed = true
				}
			}
		case *redis.Message:
			ack, key := splitMessage(m.Payload)
			c.invalidate(func() { c.entries.Remove(key) })
			if ack != "" {
				c.confirm(ctx, rdb, ack)
			}
		}
	}
}

func (c *Cache[V]) lost(err error) {
	c.log.Warn("localcache: invalidation channel lost; loading every answer until it is back",
		"cache", c.what, "channels", c.channels, "err", err)
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
