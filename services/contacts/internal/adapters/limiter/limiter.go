// Package limiter is the contacts list rate limit on Redis: one request per
// second per company (spec 8), shared by every replica.
package limiter

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/ratelimit"
)

// Limiter implements app.Limiter.
type Limiter struct {
	rl    *ratelimit.Limiter
	limit ratelimit.Limit
	off   bool
}

// New limits lists to perSecond per company under keys with prefix; 0
// turns the limit off (benchmarks, local load tests).
func New(rdb redis.UniversalClient, prefix string, perSecond int) *Limiter {
	return &Limiter{rl: ratelimit.New(rdb, prefix), limit: ratelimit.PerSecond(perSecond), off: perSecond <= 0}
}

// AllowList counts one contacts list call of the company; past the limit
// it answers the 429 with its Retry-After.
func (l *Limiter) AllowList(ctx context.Context, company int64) error {
	if l.off {
		return nil
	}
	res, err := l.rl.Allow(ctx, "contacts.list:"+strconv.FormatInt(company, 10), l.limit)
	if err != nil {
		return err
	}
	return res.Err()
}
