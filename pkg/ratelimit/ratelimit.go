// Package ratelimit limits how often one key (an API key, a company, a
// company plus an endpoint) may do something, across every replica: the
// state lives in Redis, updated by one atomic Lua script per call.
//
// The algorithm is GCRA (generic cell rate algorithm, via
// github.com/go-redis/redis_rate): per key it stores a single timestamp, the
// "theoretical arrival time", which makes it exact (no window edges letting
// twice the rate through), cheap (one small key with a TTL of about one
// period), and able to say precisely when the next call will be allowed —
// the Retry-After the API returns with a 429.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/apierr"
)

// Limit is Rate events per Period, with up to Burst of them at once.
type Limit struct {
	Rate   int
	Period time.Duration
	// Burst is how many calls may come back to back after a quiet spell.
	// Zero means Rate: "1 per second" then allows one call, then one more
	// each second.
	Burst int
}

// PerSecond is n events per second (burst n), e.g. PerSecond(1) for the
// spec's one-request-per-second list endpoints.
func PerSecond(n int) Limit { return Limit{Rate: n, Period: time.Second} }

// PerMinute is n events per minute (burst n).
func PerMinute(n int) Limit { return Limit{Rate: n, Period: time.Minute} }

func (l Limit) String() string {
	return fmt.Sprintf("%d per %s (burst %d)", l.Rate, l.Period, l.burst())
}

func (l Limit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Rate
}

// Limiter checks limits for keys. It is safe for concurrent use; one per
// process is enough.
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
}

// New returns a limiter storing its state in rdb under keys
// "rate:" + prefix + key. The prefix keeps services (and parallel tests)
// apart on a shared Redis; end it with a separator, e.g. "contacts:".
func New(rdb redis.UniversalClient, prefix string) *Limiter {
	return &Limiter{rl: redis_rate.NewLimiter(rdb), prefix: prefix}
}

// Result is the verdict on one call.
type Result struct {
	// Allowed is true when the call may go ahead; it has been counted.
	Allowed bool
	// RetryAfter is how long until a call for this key will be allowed;
	// zero when Allowed.
	RetryAfter time.Duration
	// Remaining is how many more calls could be allowed right now.
	Remaining int
}

// Allow counts one call for key against limit, unless that would break the
// limit: a refused call is not counted, so a client that keeps retrying
// too fast is still let through as soon as the period allows.
//
// An error means Redis could not be asked; whether to let the call through
// then is the caller's choice.
func (l *Limiter) Allow(ctx context.Context, key string, limit Limit) (Result, error) {
	if limit.Rate <= 0 || limit.Period <= 0 || limit.Burst < 0 {
		return Result{}, fmt.Errorf("ratelimit: invalid limit %+v", limit)
	}
	if key == "" {
		return Result{}, errors.New("ratelimit: empty key")
	}
	res, err := l.rl.Allow(ctx, l.prefix+key, redis_rate.Limit{
		Rate:   limit.Rate,
		Burst:  limit.burst(),
		Period: limit.Period,
	})
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: %w", err)
	}
	out := Result{Allowed: res.Allowed > 0, Remaining: res.Remaining}
	if !out.Allowed {
		// redis_rate reports -1 for "no wait"; a refusal always waits.
		out.RetryAfter = max(res.RetryAfter, 0)
	}
	return out, nil
}

// Err is nil for an allowed call, and otherwise the API's 429 with its
// Retry-After (whole seconds, rounded up), ready to return from a handler or
// interceptor.
func (r Result) Err() error {
	if r.Allowed {
		return nil
	}
	return apierr.RateLimited(RetryAfterSeconds(r.RetryAfter))
}

// RetryAfterSeconds turns a wait into the whole seconds of an HTTP
// Retry-After header: rounded up, because a client that comes back after a
// rounded-down wait is refused again, and at least 1, because "0" invites an
// immediate retry.
func RetryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		return 1
	}
	secs := int((d + time.Second - 1) / time.Second)
	return max(secs, 1)
}
