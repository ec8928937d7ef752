package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// The trigrams made in Go (trigramsOf) are pg_trgm's for every character
// the shape test judges (shapeRune): words split, lower-cased, padded and
// hashed as PostgreSQL does, checked against show_trgm for each such
// character alone, inside a Latin and a Cyrillic word, tripled, and
// between separators. A character on which they disagree must be left
// out of shapeRune, or a key could be dropped whose contact matches.
func TestTrigramsAsPostgreSQL(t *testing.T) {
	db := pgtest.New(t, migrations.FS)
	bad, err := trigramDisagreements(context.Background(), db)
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Greater(t, len(trigramProbes()), 4000)
}

// The shape test is a necessary condition of a match: for every query and
// search text that PostgreSQL matches (`search LIKE '%q%' OR q <% search`
// at the threshold), the text's shape (contact_search_shape) may match in
// Go. Texts like contacts' (names, emails with numbers, phones), and
// queries at the condition's edges: typos of full names and of emails,
// runs across the name and the email, short words, Cyrillic, repeated
// words, parts of words. The test also requires that shapes are turned
// away often (the test is worth having) and, with the threshold made
// stricter, that a match is lost (the check can fail).
func TestShapeTestNeverLosesAMatch(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	rng := rand.New(rand.NewPCG(32, 9))
	first := []string{"ivan", "maria", "maxim", "anna", "jon", "john", "al", "ya", "иван", "мария", "олег", "анна", "elena", "li"}
	last := []string{"popov", "ivanov", "smirnov", "johnson", "jones", "mo", "ng", "попов", "иванов", "смирнов", "petrov", "ivanova"}
	domains := []string{"mail.ru", "gmail.com", "example.com", "ya.ru", "почта.рф"}
	var texts []string
	for i := range 400 {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		name := f + " " + l
		if i%7 == 0 {
			name = f + " " + f + " " + l // a repeated word
		}
		if i%11 == 0 {
			name = l + " " + f
		}
		if i%13 == 0 {
			name += fmt.Sprintf(" %d%s", rng.IntN(100), []string{"", "b", "ab"}[rng.IntN(3)])
		}
		var emails []domain.Email
		for range rng.IntN(3) {
			a, b := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
			local := []string{a + "." + b, b + "." + a, a + b, a, f + "." + l}[rng.IntN(5)]
			num := fmt.Sprint(rng.IntN([]int{10, 100, 100000}[rng.IntN(3)]))
			switch rng.IntN(4) { // numbers after, inside and before words
			case 0, 1:
				local += num
			case 2:
				local = a + num + b
			}
			if rng.IntN(5) == 0 {
				local = num + local
			}
			emails = append(emails, domain.Email{Email: local + "@" + domains[rng.IntN(len(domains))]})
		}
		phones := []domain.Phone{{Phone: fmt.Sprintf("+79%09d", rng.IntN(1_000_000_000))}}
		texts = append(texts, domain.SearchText(name, phones, emails))
	}
	typo := func(s string) string {
		rs := []rune(s)
		i := rng.IntN(len(rs))
		if rs[i] == ' ' || rs[i] == '.' || rs[i] == '@' {
			return s
		}
		rs[i] = []rune("xйo")[rng.IntN(3)]
		return string(rs)
	}
	var queries []string
	for range 1500 {
		words := strings.FieldsFunc(texts[rng.IntN(len(texts))], func(r rune) bool { return !wordRune(r) || isASCIIDigit(r) })
		// A run of 1-3 words of a text (across the name and the email too),
		// maybe cut, maybe with a typo.
		i := rng.IntN(len(words))
		q := strings.Join(words[i:min(len(words), i+1+rng.IntN(3))], []string{" ", ".", " "}[rng.IntN(3)])
		switch rng.IntN(4) {
		case 0:
			q = typo(q)
		case 1:
			q = typo(typo(q))
		case 2:
			if rs := []rune(q); len(rs) > 4 {
				q = string(rs[rng.IntN(2) : len(rs)-rng.IntN(3)])
			}
		}
		if hasTrigram(q) && !hasDigit(q) {
			queries = append(queries, q)
		}
	}
	queries = append(queries, "maxxm popov", "ivan ivan", "popov ivan", "ivan.popov", "mail ivan", "jon", "li ng", "ng li", "иван попxв",
		"мария иванова", "al mo", "ya ru", "popov mail", "popov maria", "ivanov ivan")

	type pair struct {
		q, text, shape string
		match          bool
	}
	check := func(threshold string, num, den int) (matches, lost, turnedAway int) {
		tx, err := db.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		_, err = tx.Exec(ctx, `SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)`, threshold)
		require.NoError(t, err)
		var qs, ts []string
		for _, q := range queries {
			for _, text := range texts {
				qs, ts = append(qs, q), append(ts, text)
			}
		}
		rows, err := tx.Query(ctx, `SELECT q, s, contact_search_shape(s), s LIKE '%' || replace(replace(replace(q, '\', '\\'), '%', '\%'), '_', '\_') || '%' OR q <% s
			FROM unnest($1::text[], $2::text[]) AS u(q, s)`, qs, ts)
		require.NoError(t, err)
		var pairs []pair
		for rows.Next() {
			var p pair
			require.NoError(t, rows.Scan(&p.q, &p.text, &p.shape, &p.match))
			pairs = append(pairs, p)
		}
		require.NoError(t, rows.Err())
		var scratch shapeScratch
		sqs := map[string]shapeQuery{}
		for _, p := range pairs {
			sq, ok := sqs[p.q]
			if !ok {
				sq = newShapeQuery(p.q)
				sqs[p.q] = sq
			}
			if !mayMatchAt(sq, p.shape, &scratch, num, den) {
				turnedAway++
				if p.match {
					lost++
					if lost <= 5 {
						t.Logf("lost at %d/%d: %q in %q (shape %q)", num, den, p.q, p.text, p.shape)
					}
				}
			}
			if p.match {
				matches++
			}
		}
		return matches, lost, turnedAway
	}
	matches, lost, turnedAway := check(searchThreshold, shapeThresholdNum, shapeThresholdDen)
	t.Logf("%d queries × %d texts: %d matches, %d shapes turned away", len(queries), len(texts), matches, turnedAway)
	require.Positive(t, matches)
	require.Zero(t, lost, "matches the shape test turned away")
	require.Greater(t, turnedAway, (len(queries)*len(texts)-matches)/2, "the shape test turned away few of the texts that do not match")
	// Made stricter than word_similarity (0.7 in Go, 0.6 in PostgreSQL),
	// it loses matches: the check sees it.
	_, lost, _ = check(searchThreshold, 7, 10)
	require.Positive(t, lost, "a stricter shape test lost no match: the check cannot fail")
}

// mayMatchAt is shapeQuery.mayMatch at the threshold num/den.
func mayMatchAt(q shapeQuery, shape string, s *shapeScratch, num, den int) bool {
	if num == shapeThresholdNum && den == shapeThresholdDen {
		return q.mayMatch(shape, s)
	}
	if !q.ok || strings.Contains(shape, q.text) {
		return true
	}
	seq, ok := q.shapeTrigrams(nil, shape, &s.notes)
	if !ok {
		return true
	}
	return q.runReachesAt(seq, s, num, den)
}

// The shape test's threshold is the search's (searchThreshold).
func TestShapeThresholdIsTheSearchThreshold(t *testing.T) {
	want, err := strconv.ParseFloat(searchThreshold, 64)
	require.NoError(t, err)
	require.InDelta(t, want, float64(shapeThresholdNum)/float64(shapeThresholdDen), 1e-12)
}

// TestStandInsLeftWhereAHashCouldBeThem: a shape's stand-in ("ab0" for the
// text's "abD", shapeDigitTrigram) is weighed only where no hashed trigram
// of the shape or of the query could be it. A Cyrillic word is found one
// of whose trigrams pg_trgm hashes into the three bytes of a Latin pair
// and a digit, and PostgreSQL agrees that the word and that pair with the
// digit share a trigram. Beside that word, in the shape or in the query,
// the stand-in is left out; without it, it is weighed.
func TestStandInsLeftWhereAHashCouldBeThem(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	cyrillic := []rune("абвгдежзийклмнопрстуфхцчшщъыьэюя")
	isLatin := func(b byte) bool { return b >= 'a' && b <= 'z' }
	var word, pair string
	var digit byte
search:
	for _, x := range cyrillic {
		for _, y := range cyrillic {
			for _, z := range cyrillic {
				for _, tr := range []trigram{compactTrigram(' ', x, y), compactTrigram(x, y, z), compactTrigram(y, z, ' ')} {
					a, b, c := byte(tr>>16), byte(tr>>8), byte(tr)
					if isLatin(a) && isLatin(b) && c >= '0' && c <= '9' {
						word, pair, digit = string([]rune{x, y, z}), string([]byte{a, b}), c
						break search
					}
				}
			}
		}
	}
	require.NotEmpty(t, word, "no Cyrillic word of three letters hashes into a Latin pair and a digit")
	var shared bool
	require.NoError(t, db.QueryRow(ctx, `SELECT EXISTS (
			SELECT 1 FROM unnest(show_trgm($1)) AS q(t) JOIN unnest(show_trgm($2)) AS r(t) USING (t))`,
		word, pair+string(digit)).Scan(&shared))
	require.True(t, shared, "PostgreSQL's trigrams of %q and of %q share none", word, pair+string(digit))
	t.Logf("%q has a trigram of %q", word, pair+string(digit))

	standIn := compactTrigram(rune(pair[0]), rune(pair[1]), '0')
	weighed := func(query, shape string) bool {
		q := newShapeQuery(query)
		seq, ok := q.shapeTrigrams(nil, shape, &trigramNotes{})
		require.True(t, ok)
		return slices.Contains(seq, standIn)
	}
	plain := "ivan popov " + pair + "0@mail.ru"
	require.True(t, weighed("ivan popov", plain), plain)
	require.True(t, weighed("ivan popov", "иван "+plain), "a Cyrillic word whose hashes cannot be the stand-in")
	require.False(t, weighed("ivan popov", word+" "+plain), "beside %q in the shape", word)
	require.False(t, weighed("ivan "+word, plain), "beside %q in the query", word)
}
