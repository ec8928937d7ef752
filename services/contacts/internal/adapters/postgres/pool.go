package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/services/contacts/internal/domain"
)

// OpenPool opens the repository's pool with shared's settings (its DSN,
// size, timeouts and connection set-up), each connection warmed before
// its first use (warm) and every one of them opened ahead of need.
//
// A new server process (a PostgreSQL backend: one per connection) runs its
// first search 5-10 ms slower than the next (1-2 ms): it parses and
// prepares each statement (pgx keeps them per connection), makes the
// generic plans of the key search, and loads the catalog entries of the
// tables, indexes and pg_trgm's functions and operators it touches. Each
// connection pays it once, and connections come and go: pgxpool replaces
// each after an hour and closes those idle for half an hour. So the
// connections are warmed when they are opened (AfterConnect), and opened
// by the pool's health check rather than by a request (MinConns up to
// MaxConns): no request waits for a connection being opened or warmed,
// nor pays a cold backend (docs/contacts-search.md, "Eleventh pass").
func OpenPool(ctx context.Context, shared *pgxpool.Pool) (*pgxpool.Pool, error) {
	cfg := shared.Config()
	setUp := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if setUp != nil {
			if err := setUp(ctx, c); err != nil {
				return err
			}
		}
		return warm(ctx, c)
	}
	cfg.MinConns = cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("contacts pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("contacts pool: %w", err)
	}
	return pool, nil
}

// warmCompany is no company's id (ids start at 1): warm's lists find
// nothing and write nothing.
const warmCompany = -1

// warmTexts take every path of a list (listOn): no query, a pattern
// without a trigram, a text searched by its name keys, and one with a
// digit (the trigram index).
var warmTexts = []string{"", "ab", "warm up", "warm 0"}

// warmCheck answers trigramCheck without asking the database: warm's
// searches find no key, so the shape test has nothing to judge.
var warmCheck = func() *trigramCheck {
	var c trigramCheck
	c.known.Store(true)
	return &c
}()

// warm runs every list statement once on a new connection, in each order,
// as a request would (so pgx prepares the same statements and PostgreSQL
// keeps the same generic plans), and the custom-plan search statement
// after a key search's settings, which warmCompany's searches (no keys)
// do not reach. Offset 1 past no match takes the counting statements too.
func warm(ctx context.Context, c *pgx.Conn) error {
	for o := range orderBy {
		for _, q := range warmTexts {
			if _, _, err := listOn(ctx, c, warmCheck, warmCompany, domain.Filter{Order: o, Search: q, Limit: 1, Offset: 1}); err != nil {
				return fmt.Errorf("warm %q: %w", q, err)
			}
		}
		b := plannedBatch(customPlans)
		b.Queue(bitmapScansOn)
		b.Queue(searchQueries[o], warmCompany, false, []int64{}, likePattern("warm up"), "warm up", []string{}, 1, 0)
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("warm: %w", err)
		}
	}
	return nil
}
