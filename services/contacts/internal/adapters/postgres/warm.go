package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/contacts/internal/domain"
)

// warmCompany is no company's id (ids start at 1): Warm's lists find
// nothing and write nothing.
const warmCompany = -1

// warmTexts take every path of a list (listOn): no query, a pattern
// without a trigram, a text searched by its name keys, and one with a
// digit (the trigram index).
var warmTexts = []string{"", "ab", "warm up", "warm 0"}

// warmCheck answers trigramCheck without asking the database: Warm's
// searches find no key, so the shape test has nothing to judge.
var warmCheck = func() *trigramCheck {
	var c trigramCheck
	c.known.Store(true)
	return &c
}()

// Warm readies a new connection of the service's pool before its first
// use (main.go hands it to the service template, which also opens every
// connection ahead of need: postgres.OpenWarm).
//
// A new server process (a PostgreSQL backend: one per connection) runs its
// first search 5-10 ms slower than the next (1-2 ms): it parses and
// prepares each statement (pgx keeps them per connection), makes the
// generic plans of the key search, and loads the catalog entries of the
// tables, indexes and pg_trgm's functions and operators it touches. Each
// connection pays it once, and connections come and go: pgxpool replaces
// each after an hour. So each connection runs every list statement once
// when it is opened, and no request pays a cold backend
// (docs/contacts-search.md, "Eleventh pass").
//
// It runs every list statement once on a new connection, in each order,
// as a request would (so pgx prepares the same statements and PostgreSQL
// keeps the same generic plans), and the custom-plan search statement
// after a key search's settings and the statements of a key search from
// memory, which warmCompany's searches (no keys, no copy) do not reach. Offset 1 past no match takes the counting statements too.
func Warm(ctx context.Context, c *pgx.Conn) error {
	for o := range orderBy {
		for _, q := range warmTexts {
			if _, _, err := listOn(ctx, c, warmCheck, nil, nil, warmCompany, domain.Filter{Order: o, Search: q, Limit: 1, Offset: 1}); err != nil {
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
	// A key search from a copy in memory (keysInMemory), which
	// warmCompany has none of, under its settings.
	b := &pgx.Batch{}
	b.Queue(keyPlanner, searchThreshold)
	b.Queue(keyCatchUp, warmCompany, int64(0))
	b.Queue(keysOf, warmCompany, "warm up", likePattern("warm up"), keySearchMaxTested, []string{})
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("warm: %w", err)
	}
	return nil
}
