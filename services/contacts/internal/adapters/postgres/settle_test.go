package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// TestSearchBaseAnswersAsItsTexts: for every base memoBases takes, and
// queries without a digit at the edges of a match (typos, parts, runs
// across the name and the address, Latin and Cyrillic), PostgreSQL
// answers a text before the `@` that is the base followed by a run of
// digits exactly as it answers the base followed by one `0`
// (keySearchBases' second test), whatever the run's length; the base
// alone is its own first test. A base ending in ASCII is taken for every
// query; one ending otherwise for the queries none of whose trigrams its
// run can make (runMissesQuery). shapeBase leaves out a shape without an
// address or with a digit before its end. The test also requires that
// bases settle pairs (the memo is worth having) and that the run dropped
// instead of made one `0` changes answers (the check can fail: the
// base's last trigram, `ov ` for `…petrov`, is one a query can have).
func TestSearchBaseAnswersAsItsTexts(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	rng := rand.New(rand.NewPCG(44, 1))
	first := []string{"ivan", "maria", "ekaterina", "jo", "anna", "al", "иван", "мария", "li", "ёж"}
	last := []string{"petrov", "makarov", "popova", "smith", "ng", "mo", "попов", "ivanov", "orlov", "фёдоров", "я"}
	seps := []string{".", "_", "", "-", "."}
	var shapes []string
	for range 300 {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		local := []string{f + seps[rng.IntN(len(seps))] + l, l, f + l, string([]rune(f)[:1]) + l, l + "." + f, l + "."}[rng.IntN(6)]
		if rng.IntN(2) == 0 {
			local += "0"
		}
		shapes = append(shapes, f+" "+l+" "+local+"@mail.ru")
	}
	var bases []string
	nonASCII := 0
	for _, shape := range shapes {
		if b, ascii, ok := shapeBase(shape); ok && !slices.Contains(bases, b) {
			bases = append(bases, b)
			if !ascii {
				nonASCII++
			}
		}
	}
	require.Greater(t, len(bases), 50)
	require.Greater(t, nonASCII, 10)
	// What shapeBase leaves out: no address, a digit inside; and which
	// ends it calls ASCII.
	for _, shape := range []string{"ivan popov", "ivan popov ivan0popov0@mail.ru", "@mail.ru"} {
		_, _, ok := shapeBase(shape)
		require.False(t, ok, shape)
	}
	for shape, want := range map[string]bool{"ivan popov i.popov0@mail.ru 0": true, "иван попов иван.попов0@mail.ru": false,
		"ivan popov ivan.попоv@mail.ru": false, "ivan popov ivan.попов.@mail.ru": false, "я@mail.ru": false, "j@mail.ru": true} {
		_, ascii, ok := shapeBase(shape)
		require.True(t, ok, shape)
		require.Equal(t, want, ascii, shape)
	}

	var queries []string
	for len(queries) < 300 {
		words := strings.FieldsFunc(bases[rng.IntN(len(bases))], func(r rune) bool { return r == ' ' || r == '.' || r == '_' || r == '-' })
		i := rng.IntN(len(words))
		q := []rune(strings.Join(words[i:min(len(words), i+1+rng.IntN(3))], " "))
		switch rng.IntN(3) {
		case 0:
			q = q[:max(2, len(q)-1-rng.IntN(2))]
		case 1:
			q[rng.IntN(len(q))] = 'x'
		}
		if !hasDigit(string(q)) {
			queries = append(queries, string(q))
		}
	}
	// The pairs memoBases would take: every base of an ASCII end, the
	// others where their run makes none of the query's trigrams.
	var pairBases, pairQueries []string
	for _, q := range queries {
		sq := newShapeQuery(q)
		for _, b := range bases {
			_, ascii, _ := shapeBase(b + "@x")
			if ascii || sq.runMissesQuery(b) {
				pairBases, pairQueries = append(pairBases, b), append(pairQueries, q)
			}
		}
	}
	require.Greater(t, len(pairBases), len(queries)*(len(bases)-nonASCII))
	runs := []string{"0", "7", "42", "123456", "05", "999999999"}

	// Each run must answer as the base and one `0`; the pairs whose base
	// is settled (both tests) then match with every run.
	count := func(run string) (differ, settled int64) {
		atThreshold(t, ctx, db, `SELECT
				count(*) FILTER (WHERE (p.b || r.r) %> p.q IS DISTINCT FROM (p.b || $3) %> p.q),
				count(*) FILTER (WHERE p.b %> p.q AND (p.b || '0') %> p.q)
			FROM unnest($1::text[], $2::text[]) AS p(b, q), unnest($4::text[]) AS r(r)`,
			[]any{pairBases, pairQueries, run, runs}, &differ, &settled)
		return differ, settled
	}
	differ, settled := count("0")
	require.Zero(t, differ, "texts before the @ answering otherwise than their base and one 0")
	require.Positive(t, settled, "no base settled a pair")
	dropped, _ := count("")
	require.Positive(t, dropped, "the run dropped changed no answer: the check cannot fail")
	t.Logf("%d bases (%d not ending in ASCII) × %d queries: %d pairs taken × %d runs, no difference; %d settled; with the run dropped, %d answers differ",
		len(bases), nonASCII, len(queries), len(pairBases), len(runs), settled, dropped)
}

// TestRunMissesQueryFindsAHash: a base ending in two Cyrillic letters,
// whose run's trigrams pg_trgm hashes, and a query without a digit that
// has one of those hashes among its own trigrams (found by trying the
// bases' last two letters against three-letter Latin words): runMissesQuery
// refuses the pair, and PostgreSQL agrees that the query and the base
// with that run share a trigram the base alone does not have. With
// another query it takes the base.
func TestRunMissesQueryFindsAHash(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	// Latin words' trigrams are their own three bytes, which a hash can
	// equal (hashes of the same layout of bytes hardly collide: the CRC
	// is linear).
	cyrillic, latin := []rune("абвгдежзийклмнопрстуфхцчшщъыьэюя"), []rune("abcdefghijklmnopqrstuvwxyz")
	words := map[trigram]string{}
	for _, a := range latin {
		for _, b := range latin {
			for _, c := range latin {
				words[compactTrigram(a, b, c)] = string([]rune{a, b, c})
			}
		}
	}
	var base, word, run string
search:
	for _, x := range cyrillic {
		for _, y := range cyrillic {
			for d := '0'; d <= '9'; d++ {
				for e, tail := range map[trigram]string{compactTrigram(x, y, d): string(d), compactTrigram(y, d, ' '): string(d)} {
					if w, hit := words[e]; hit {
						base, word, run = "ivan "+string([]rune{x, y}), w, tail
						break search
					}
				}
				for e := '0'; e <= '9'; e++ {
					if w, hit := words[compactTrigram(y, d, e)]; hit {
						base, word, run = "ivan "+string([]rune{x, y}), w, string([]rune{d, e})
						break search
					}
				}
			}
		}
	}
	require.NotEmpty(t, word, "no three-letter word shares a hash with a run's trigrams")
	require.False(t, newShapeQuery("ivan "+word).runMissesQuery(base), "%q after %q", run, base)
	require.True(t, newShapeQuery("ivan popov").runMissesQuery(base))
	var shared bool
	require.NoError(t, db.QueryRow(ctx, `SELECT EXISTS (
			SELECT 1 FROM unnest(show_trgm($1)) AS q(t) JOIN unnest(show_trgm($2)) AS r(t) USING (t)
			WHERE t NOT IN (SELECT unnest(show_trgm($3))))`, "ivan "+word, base+run, base).Scan(&shared))
	require.True(t, shared, "PostgreSQL's trigrams of %q and of %q share none", "ivan "+word, base+run)
	t.Logf("%q shares a trigram with %q", "ivan "+word, base+run)
}

// TestKeySearchSettlesByBasesAndShapes: a key search settles the contacts
// of its keys to test by their bases (memoBases, keySearchBases) and
// turns away those whose shape cannot match (keyCandidates' cannot), so
// it calls word_similarity far fewer times than testing each contact, and
// answers the same page and count. Contacts like the benchmark's: names
// repeat, addresses are the name and a number at one of five domains.
// Counted by PostgreSQL itself (track_functions, in the transaction).
// Without the bases and the shapes the calls are as many as before, and
// the test fails.
func TestKeySearchSettlesByBasesAndShapes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company = int64(5)
	first := []string{"Ivan", "Maxim", "Maria", "Mikhail", "Ekaterina", "Elena", "Emily", "Pavel", "Tatiana", "Иван"}
	last := []string{"Novikov", "Makarov", "Morozov", "Pavlov", "Lebedev", "Orlov", "Semenov", "Popov", "Fedorov", "Попов"}
	domains := []string{"gmail.com", "yandex.ru", "mail.ru", "outlook.com", "example.com"}
	rng := rand.New(rand.NewPCG(44, 2))
	var rows [][]any
	var names []string
	for i := range 3000 {
		fn, ln := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		name := fn + " " + ln
		var em []domain.Email
		if rng.IntN(2) == 0 {
			em = append(em, domain.Email{Email: strings.ToLower(fn+"."+ln) + fmt.Sprint(i) + "@" + domains[rng.IntN(len(domains))]})
		}
		ph := []domain.Phone{{Phone: fmt.Sprintf("+79%09d", (int64(i)*387_420_489+123_456_789)%1_000_000_000)}}
		rows = append(rows, []any{company, name, domain.SearchText(name, ph, em)})
		names = append(names, name)
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"company_id", "name", "search"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)
	_, err = db.Exec(ctx, `ANALYZE contacts, contact_name_keys, contact_key_trigrams, contact_key_shapes`)
	require.NoError(t, err)

	calls := func(tx pgx.Tx) int64 {
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
			WHERE funcname = 'word_similarity_commutator_op'`).Scan(&n))
		return n
	}
	var searched, with, without, settledBases, cannot int64
	for range 150 {
		q := withTypo(rng, strings.ToLower(names[rng.IntN(len(names))]))
		tx, err := db.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, keyPlanner, searchThreshold)
		require.NoError(t, err)
		var sure bool
		var keys, shapeKeys, shapes []string
		var matched []bool
		var tested int64
		require.NoError(t, tx.QueryRow(ctx, searchKeys, company, q, likePattern(q), keySearchMaxTested, []string{}).
			Scan(&sure, &keys, &matched, &tested, &shapeKeys, &shapes))
		sq := newShapeQuery(q)
		set := keyCandidates(sq, keys, matched, tested, shapeKeys, shapes)
		if !byKeys(sure, len(set.keys), set.tested) || set.tested == 0 {
			require.NoError(t, tx.Rollback(ctx))
			continue
		}
		bases := memoBases(&sq, set.keys, set.matched, shapeKeys, shapes)
		page := func(bases []string, lo, hi []int32, cannot []string) ([]int64, int64, int64) {
			before := calls(tx)
			rows, err := tx.Query(ctx, keySearchQueries[domain.OrderIDAsc], company, false, []int64{}, likePattern(q), q,
				set.keys, set.matched, 100, 0, bases, lo, hi, cannot)
			require.NoError(t, err)
			var total int64
			got, err := pgx.CollectRows(rows, scanPageContact(&total))
			require.NoError(t, err)
			ids := make([]int64, len(got))
			for i, c := range got {
				ids[i] = c.ID
			}
			return ids, total, calls(tx) - before
		}
		lo, hi := noShapes(len(set.keys))
		idsWith, totalWith, callsWith := page(bases, set.lo, set.hi, set.cannot)
		idsWithout, totalWithout, callsWithout := page([]string{}, lo, hi, []string{})
		require.Equal(t, idsWithout, idsWith, q)
		require.Equal(t, totalWithout, totalWith, q)
		require.NoError(t, tx.Rollback(ctx))
		searched++
		with, without = with+callsWith, without+callsWithout
		settledBases += int64(len(bases))
		cannot += int64(len(set.cannot))
	}
	require.GreaterOrEqual(t, searched, int64(20), "typos searched by keys with keys to test")
	require.Positive(t, settledBases)
	require.Positive(t, cannot)
	require.Less(t, with*3, without, "word_similarity calls with the bases and the shapes against without")
	t.Logf("%d key searches with keys to test: %d word_similarity calls, %d without the bases (%d) and the shapes (%d)",
		searched, with, without, settledBases, cannot)
}

// atThreshold scans the one row of sql in a transaction of its own with
// the search's word_similarity threshold pinned, as every search runs.
func atThreshold(t *testing.T, ctx context.Context, db *pgxpool.Pool, sql string, args []any, dest ...any) {
	t.Helper()
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)`, searchThreshold)
	require.NoError(t, err)
	require.NoError(t, tx.QueryRow(ctx, sql, args...).Scan(dest...))
}
