package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/localcache"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// Source resolves a key hash to its principal. It returns UnknownKey()
// for an unknown key. The identity service implements it
// in-process; every other service reaches identity over gRPC (see Remote).
type Source interface {
	Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error)
}

// Cache keeps principals in Redis for a short while, shared by every
// replica of every service, so a request costs one Redis read instead of a
// call to identity. A key reset revokes at once: Revoke writes a tombstone
// that fills are not allowed to overwrite (SET NX), so a fill racing with the
// reset cannot bring the old key back.
type Cache struct {
	rdb    redis.UniversalClient
	source Source
	ttl    time.Duration
}

const revoked = "revoked"

// NewCache caches source's answers for ttl.
func NewCache(rdb redis.UniversalClient, source Source, ttl time.Duration) *Cache {
	return &Cache{rdb: rdb, source: source, ttl: ttl}
}

func cacheKey(keyHash string) string { return "sb:auth:key:" + keyHash }

// Authenticate answers from the cache, or from the source on a miss.
func (c *Cache) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	raw, err := c.rdb.Get(ctx, cacheKey(keyHash)).Bytes()
	switch {
	case err == nil && string(raw) == revoked:
		return nil, UnknownKey()
	case err == nil:
		p := &identityv1.Principal{}
		if uerr := proto.Unmarshal(raw, p); uerr == nil {
			return p, nil
		}
	case !errors.Is(err, redis.Nil):
		return nil, fmt.Errorf("auth cache: %w", err)
	}
	p, err := c.source.Authenticate(ctx, keyHash)
	if err != nil {
		return nil, err
	}
	if raw, err := proto.Marshal(p); err == nil {
		// Best effort: a failed fill only costs the next request a lookup.
		_ = c.rdb.SetNX(ctx, cacheKey(keyHash), raw, c.ttl).Err()
	}
	return p, nil
}

// Revoke makes a key unusable at once across all services. The tombstone
// outlives any cached principal; the announcement on RevokedChannel, in the
// same transaction, makes every process's Local forget it, and Revoke
// returns once each listening Local has (localcache.AnnounceWith). One
// that did not confirm in time is stalled or stopping: it forgets the key
// when it reads the announcement, so that is not the caller's failure.
func Revoke(ctx context.Context, rdb redis.UniversalClient, keyHash string, ttl time.Duration) error {
	err := localcache.AnnounceWith(ctx, rdb, RevokedChannel, func(p redis.Pipeliner) {
		p.Set(ctx, cacheKey(keyHash), revoked, 2*ttl)
	}, keyHash)
	if err != nil && !errors.Is(err, localcache.ErrUnconfirmed) {
		return fmt.Errorf("revoke key: %w", err)
	}
	return nil
}

// Restore lets a key that Revoke refused work again (an API integration
// enabled after it was disabled): the tombstone goes, and the next request
// asks the source. Processes' Local copies hold nothing for a revoked key.
func Restore(ctx context.Context, rdb redis.UniversalClient, keyHash string) error {
	if err := rdb.Del(ctx, cacheKey(keyHash)).Err(); err != nil {
		return fmt.Errorf("restore key: %w", err)
	}
	return nil
}
