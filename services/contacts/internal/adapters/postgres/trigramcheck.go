package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// trigramCheck tells whether the database makes trigrams as trigramsOf
// does, which the shape test (extent.go) relies on: pg_trgm splits words
// and lower-cases by the database's character type (LC_CTYPE), so a
// database created with another one (a `C` character type takes no
// Cyrillic letter for a letter) makes other trigrams of the same text, and
// a key the shape test drops could hold a contact that matches. The check
// asks the database once per process, then the shape test runs only if
// every probe agreed; until it has answered, and after it disagreed,
// every key to test is tested contact by contact, as before the shape
// test.
type trigramCheck struct {
	mu    sync.Mutex
	known atomic.Bool
	same  atomic.Bool
}

// agree asks the database on its first call and remembers the answer; a
// failed question is asked again by the next call.
func (c *trigramCheck) agree(ctx context.Context, db querier) (bool, error) {
	if c.known.Load() {
		return c.same.Load(), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known.Load() {
		return c.same.Load(), nil
	}
	bad, err := trigramDisagreements(ctx, db)
	if err != nil {
		return false, err
	}
	c.same.Store(len(bad) == 0)
	c.known.Store(true)
	return len(bad) == 0, nil
}

// CheckTrigrams asks the database whether it makes trigrams as the shape
// test does (trigramCheck), so the first search does not pay for the
// question; false turns the shape test off in this process.
func (r *Repo) CheckTrigrams(ctx context.Context) (bool, error) {
	return r.shapes.agree(ctx, r.db)
}

// trigramProbes are texts covering every character the shape test judges
// (shapeRune): alone, inside a Latin and a Cyrillic word, tripled, between
// separators, and next to a letter.
func trigramProbes() []string {
	var texts []string
	for r := rune(1); r < 0x600; r++ {
		if !shapeRune(r) {
			continue
		}
		c := string(r)
		texts = append(texts, c, "a"+c+"b", "ж"+c+"щ", c+c+c, "x."+c+c+" y", c+"z"+c)
	}
	return append(texts, "ivan popov ivan.popov5@mail.ru", "Фёдоров ёлка", "o'brien-smith", "  ", "a", "ab", "éèê ÀÉ")
}

// trigramDisagreements are the probes whose trigrams the database
// (show_trgm) and trigramsOf make differently, each with both sides.
func trigramDisagreements(ctx context.Context, db querier) ([]string, error) {
	texts := trigramProbes()
	rows, err := db.Query(ctx, `SELECT show_trgm(s) FROM unnest($1::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i`, texts)
	if err != nil {
		return nil, fmt.Errorf("check trigrams: %w", err)
	}
	wants, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return nil, fmt.Errorf("check trigrams: %w", err)
	}
	if len(wants) != len(texts) {
		return nil, fmt.Errorf("check trigrams: %d answers to %d texts", len(wants), len(texts))
	}
	var bad []string
	for i, want := range wants {
		slices.Sort(want)
		got, ok := trigramsOf(nil, texts[i])
		if g := showTrgm(got); !ok || !slices.Equal(want, g) {
			bad = append(bad, fmt.Sprintf("%q (%U): PostgreSQL %q, here %q", texts[i], []rune(texts[i]), want, g))
		}
	}
	return bad, nil
}

// showTrgm formats trigrams as pg_trgm's show_trgm does: the three
// characters when each is an ASCII letter, digit or space, else
// 0x and six hex digits; distinct and sorted as text.
func showTrgm(ts []trigram) []string {
	out := []string{}
	for _, t := range ts {
		b := []byte{byte(t >> 16), byte(t >> 8), byte(t)}
		printable := true
		for _, c := range b {
			if !(c == ' ' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				printable = false
			}
		}
		if printable {
			out = append(out, string(b))
		} else {
			out = append(out, fmt.Sprintf("0x%06x", uint32(t)))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
