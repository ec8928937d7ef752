package auth

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

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// RevokedChannel is the Redis channel Revoke announces a revoked key hash
// on, so that every process's Local forgets it at once.
const RevokedChannel = "sb:auth:revoked"

// Local keeps principals in process memory in front of the shared Cache,
// so a request with a known key costs no network round trip at all.
//
// A key reset must still revoke at once on every replica. Revoke writes
// the tombstone, then publishes the key hash on RevokedChannel; every
// Local drops the key when the message arrives. Local fails closed: it
// answers from memory only while its subscription is confirmed live, and
// forgets everything when it is lost (a revocation may have gone by
// unheard), answering from the shared Cache until it is subscribed again.
// A lookup that raced with a revocation does not store its answer (see
// gen), so a principal read just before a reset cannot outlive it here.
type Local struct {
	next  Source
	cache *expirable.LRU[string, *identityv1.Principal]
	log   *slog.Logger
	live  atomic.Bool
	// gen counts invalidations (a revocation heard, the subscription lost
	// or regained). A lookup stores its answer only if gen did not move
	// while it ran; mu makes that check and the store one step against
	// an invalidation's count and removal.
	mu  sync.Mutex
	gen atomic.Uint64
	// ping is how long the subscription may stay silent before it is
	// checked; a check unanswered within another ping marks it lost.
	ping time.Duration
}

// LocalSize bounds the principals kept per process.
const LocalSize = 10000

// NewLocal keeps next's answers for ttl (shorter than the shared cache's,
// since it is a copy of it). Run must run for Local to answer from
// memory; until then every lookup goes to next.
func NewLocal(next Source, ttl time.Duration, log *slog.Logger) *Local {
	return &Local{
		next:  next,
		cache: expirable.NewLRU[string, *identityv1.Principal](LocalSize, nil, ttl),
		log:   log,
		ping:  5 * time.Second,
	}
}

// Authenticate implements Source.
func (l *Local) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	if l.live.Load() {
		if p, ok := l.cache.Get(keyHash); ok {
			return p, nil
		}
	}
	gen := l.gen.Load()
	p, err := l.next.Authenticate(ctx, keyHash)
	if err != nil {
		return nil, err
	}
	// Store only what no invalidation overtook.
	l.mu.Lock()
	if l.live.Load() && l.gen.Load() == gen {
		l.cache.Add(keyHash, p)
	}
	l.mu.Unlock()
	return p, nil
}

// Run listens for revocations on RevokedChannel until ctx ends,
// resubscribing (with a growing pause, up to 5 s) whenever the
// subscription is lost.
func (l *Local) Run(ctx context.Context, rdb redis.UniversalClient) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if l.listen(ctx, rdb) {
			backoff = 100 * time.Millisecond
		}
		l.down()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen serves one subscription until it fails; it reports whether the
// subscription was ever confirmed.
func (l *Local) listen(ctx context.Context, rdb redis.UniversalClient) (confirmed bool) {
	ps := rdb.Subscribe(ctx, RevokedChannel)
	defer ps.Close()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, l.ping)
		var ne net.Error
		switch {
		case ctx.Err() != nil:
			return confirmed
		case err != nil && errors.As(err, &ne) && ne.Timeout() && !pinged:
			// Silence: ask, and expect the answer within another ping.
			if err := ps.Ping(ctx); err != nil {
				l.log.Warn("auth: revocation channel lost; answering from the shared cache", "err", err)
				return confirmed
			}
			pinged = true
			continue
		case err != nil:
			l.log.Warn("auth: revocation channel lost; answering from the shared cache", "err", err)
			return confirmed
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == RevokedChannel {
				l.invalidate(func() {
					l.cache.Purge()
					l.live.Store(true)
				})
				confirmed = true
			}
		case *redis.Message:
			l.invalidate(func() { l.cache.Remove(m.Payload) })
		}
	}
}

// down stops answering from memory and forgets what it held.
func (l *Local) down() {
	l.invalidate(func() {
		l.live.Store(false)
		l.cache.Purge()
	})
}

func (l *Local) invalidate(drop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen.Add(1)
	drop()
}
