package auth

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/localcache"
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
// Local drops the key when the message arrives. localcache makes it fail
// closed: while its subscription is lost (a revocation may have gone by
// unheard) it answers from the shared Cache, and a lookup that raced with
// a revocation does not keep its answer, so a principal read just before a
// reset cannot outlive it here.
type Local struct {
	next Source
	c    *localcache.Cache[*identityv1.Principal]
}

// LocalSize bounds the principals kept per process.
const LocalSize = 10000

// NewLocal keeps next's answers for ttl (shorter than the shared cache's,
// since it is a copy of it). Run must run for Local to answer from
// memory; until then every lookup goes to next.
func NewLocal(next Source, ttl time.Duration, log *slog.Logger) *Local {
	return &Local{
		next: next,
		c:    localcache.New[*identityv1.Principal]("principals", RevokedChannel, LocalSize, ttl, log),
	}
}

// Authenticate implements Source.
func (l *Local) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	return l.c.Get(ctx, keyHash, func(ctx context.Context) (*identityv1.Principal, error) {
		return l.next.Authenticate(ctx, keyHash)
	})
}

// Run listens for revocations on RevokedChannel until ctx ends,
// resubscribing whenever the subscription is lost.
func (l *Local) Run(ctx context.Context, rdb redis.UniversalClient) { l.c.Run(ctx, rdb) }
