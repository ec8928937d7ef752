// Package redisx opens the Redis client every service shares. Redis holds
// short-lived state only (messenger login sessions, rate-limit counters),
// so the whole configuration is one address.
package redisx

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is the Redis part of a service's configuration, filled with
// caarlos0/env like postgres.Config.
type Config struct {
	// Addr is host:port, or a redis:// / rediss:// URL when a password,
	// TLS or a database number is needed.
	Addr string `env:"REDIS_ADDR,required"`
}

// Open opens the client described by c. See [Open].
func (c Config) Open(ctx context.Context) (*redis.Client, error) { return Open(ctx, c.Addr) }

// Open connects to Redis at addr (host:port or a redis:// URL) and pings it,
// so a wrong address fails at start rather than on the first request.
//
// Timeouts are short on purpose: Redis answers in well under a millisecond,
// and a request stuck behind an unreachable Redis is worse than a quick
// error the caller can handle (the rate limiter, for one, may let the
// request through).
func Open(ctx context.Context, addr string) (*redis.Client, error) {
	var opts *redis.Options
	if strings.HasPrefix(addr, "redis://") || strings.HasPrefix(addr, "rediss://") {
		var err error
		if opts, err = redis.ParseURL(addr); err != nil {
			return nil, fmt.Errorf("redisx: parse %q: %w", addr, err)
		}
	} else {
		opts = &redis.Options{Addr: addr}
	}
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = time.Second
	opts.WriteTimeout = time.Second
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redisx: ping %s: %w", opts.Addr, err)
	}
	return rdb, nil
}
