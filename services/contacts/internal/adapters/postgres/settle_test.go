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
// across the name and the address), PostgreSQL answers a text before the
// `@` that is the base followed by a run of digits exactly as it answers
// the base followed by one `0` (keySearchBases' second test), whatever
// the run's length; the base alone is its own first test. memoBases
// leaves out a base whose last two characters are not ASCII, and a shape
// with a digit before its end. The test also requires that bases settle
// pairs (the memo is worth having) and that the run dropped instead of
// made one `0` changes answers (the check can fail: the base's last
// trigram, `ov ` for `…petrov`, is one a query can have).
func TestSearchBaseAnswersAsItsTexts(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	rng := rand.New(rand.NewPCG(44, 1))
	first := []string{"ivan", "maria", "ekaterina", "jo", "anna", "al", "иван", "мария", "li"}
	last := []string{"petrov", "makarov", "popova", "smith", "ng", "mo", "попов", "ivanov", "orlov"}
	seps := []string{".", "_", "", "-", "."}
	var shapes []string
	for range 300 {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		local := []string{f + seps[rng.IntN(len(seps))] + l, l, f + l, string([]rune(f)[:1]) + l, l + "." + f}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			local += "0"
		}
		shapes = append(shapes, f+" "+l+" "+local+"@mail.ru")
	}
	var bases []string
	for _, shape := range shapes {
		if b, ok := shapeBase(shape); ok && !slices.Contains(bases, b) {
			bases = append(bases, b)
		}
	}
	require.Greater(t, len(bases), 50)
	// What shapeBase must leave out: no address, a non-ASCII end, a digit
	// inside.
	for _, shape := range []string{"ivan popov", "иван попов иван.попов0@mail.ru", "ivan popov ivan.попов@mail.ru",
		"ivan popov ivan0popov0@mail.ru", "@mail.ru"} {
		_, ok := shapeBase(shape)
		require.False(t, ok, shape)
	}
	b, ok := shapeBase("ivan popov i.popov0@mail.ru 0")
	require.True(t, ok)
	require.Equal(t, "ivan popov i.popov", b)

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
	runs := []string{"0", "7", "42", "123456", "05", "999999999"}

	// The pairs whose base is settled (both tests) must match with every
	// run; and each run must answer as the base and one `0`.
	count := func(run string) (differ, settled int64) {
		atThreshold(t, ctx, db, `SELECT
				count(*) FILTER (WHERE (b || r.r) %> q.q IS DISTINCT FROM (b || $3) %> q.q),
				count(*) FILTER (WHERE b %> q.q AND (b || '0') %> q.q)
			FROM unnest($1::text[]) AS b, unnest($2::text[]) AS q(q), unnest($4::text[]) AS r(r)`,
			[]any{bases, queries, run, runs}, &differ, &settled)
		return differ, settled
	}
	differ, settled := count("0")
	require.Zero(t, differ, "texts before the @ answering otherwise than their base and one 0")
	require.Positive(t, settled, "no base settled a pair")
	dropped, _ := count("")
	require.Positive(t, dropped, "the run dropped changed no answer: the check cannot fail")
	t.Logf("%d bases × %d queries × %d runs: no difference; %d settled; with the run dropped, %d answers differ",
		len(bases), len(queries), len(runs), settled, dropped)
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
		rs := []rune(strings.ToLower(names[rng.IntN(len(names))]))
		for {
			i := 1 + rng.IntN(len(rs)-1)
			if rs[i] != ' ' && rs[i-1] != ' ' {
				rs[i] = 'x'
				break
			}
		}
		q := string(rs)
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
		require.NoError(t, tx.QueryRow(ctx, searchKeys, company, q, likePattern(q), keySearchMaxTested).
			Scan(&sure, &keys, &matched, &tested, &shapeKeys, &shapes))
		set := keyCandidates(q, keys, matched, tested, shapeKeys, shapes)
		if !byKeys(sure, len(set.keys), set.tested) || set.tested == 0 {
			require.NoError(t, tx.Rollback(ctx))
			continue
		}
		bases := memoBases(set.keys, set.matched, shapeKeys, shapes)
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
