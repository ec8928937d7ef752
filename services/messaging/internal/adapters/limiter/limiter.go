// Package limiter is the inbox rate limit on Redis: one request per second
// per company (spec 8, "contact and chat lists"), shared by every replica.
package limiter

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/ratelimit"
	"switchboard.dev/services/messaging/internal/app"
)

// Limiter implements app.InboxLimiter.
type Limiter struct {
	rl    *ratelimit.Limiter
	limit ratelimit.Limit
	off   bool
}

var _ app.InboxLimiter = (*Limiter)(nil)

// New limits inbox reads to perSecond per company under keys with prefix;
// 0 turns the limit off (benchmarks, local load tests).
func New(rdb redis.UniversalClient, prefix string, perSecond int) *Limiter {
	return &Limiter{rl: ratelimit.New(rdb, prefix), limit: ratelimit.PerSecond(perSecond), off: perSecond <= 0}
}

// AllowInbox counts one inbox call of the company; past the limit it
// answers the 429 with its Retry-After.
func (l *Limiter) AllowInbox(ctx context.Context, company int64) error {
	if l.off {
		return nil
	}
	res, err := l.rl.Allow(ctx, "messaging.inbox:"+strconv.FormatInt(company, 10), l.limit)
	if err != nil {
		return err
	}
	return res.Err()
}
