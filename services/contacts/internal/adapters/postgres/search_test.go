package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// legacyWhere and legacyOrder are the `query` list as it was before the
// search was made fast (docs/contacts-search.md): one OR of the substring
// and the fuzzy match, planned freely. The recall test holds the new
// statements to its answers.
const legacyWhere = `
	FROM contacts c
	WHERE c.company_id = $1
	  AND ($2::bool OR NOT c.is_group)
	  AND (cardinality($3::bigint[]) = 0 OR EXISTS (
	        SELECT 1 FROM contact_tags t WHERE t.contact_id = c.id AND t.tag_id = ANY($3::bigint[])))
	  AND ($4::text = '' OR c.search LIKE $5::text OR $4::text <% c.search)`

var legacyOrder = map[domain.Order]string{
	domain.OrderIDAsc:       ` ORDER BY c.id ASC`,
	domain.OrderIDDesc:      ` ORDER BY c.id DESC`,
	domain.OrderNameAsc:     ` ORDER BY lower(c.name) ASC, c.id ASC`,
	domain.OrderNameDesc:    ` ORDER BY lower(c.name) DESC, c.id DESC`,
	domain.OrderCreatedAsc:  ` ORDER BY c.created_at ASC, c.id ASC`,
	domain.OrderCreatedDesc: ` ORDER BY c.created_at DESC, c.id DESC`,
}

// legacyList answers f the old way: the page's ids and the count.
func legacyList(t *testing.T, ctx context.Context, db pgx.Tx, company int64, f domain.Filter) ([]int64, int64) {
	t.Helper()
	tags := f.Tags
	if tags == nil {
		tags = []int64{}
	}
	args := []any{company, f.WithGroups, tags, f.Search, likePattern(f.Search)}
	var total int64
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*)`+legacyWhere, args...).Scan(&total))
	rows, err := db.Query(ctx, `SELECT c.id`+legacyWhere+legacyOrder[f.Order]+` LIMIT $6 OFFSET $7`, append(args, f.Limit, f.Offset)...)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	if ids == nil {
		ids = []int64{}
	}
	return ids, total
}

// TestSearchRecall: every `query` list answers exactly what the old
// statement answered (the same contacts, count and order, so no match is
// lost), over 1,500 contacts like the benchmark's and queries of every
// kind: typos of full names, parts of names, phone digits, email parts,
// patterns too short for trigrams, LIKE wildcards, with each order, tags,
// group contacts and pages. Another company's look-alikes must never show.
func TestSearchRecall(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company, other = int64(7), int64(8)

	first := []string{"Ivan", "Alexander", "Dmitry", "Sergey", "Pavel", "Anna", "Maria", "Elena", "Olga", "Tatiana",
		"John", "Michael", "Sarah", "Laura", "Sophie", "Иван", "Дмитрий", "Анна", "Мария", "Наталья"}
	last := []string{"Ivanov", "Smirnov", "Kuznetsov", "Popov", "Petrov", "Pavlov", "Morozov", "Alekseev", "Nikitin", "Zaitsev",
		"Smith", "Johnson", "Williams", "Wilson", "Jones", "Иванов", "Смирнов", "Кузнецов", "Попов", "Фёдоров"}
	rng := rand.New(rand.NewPCG(12, 3000))
	var names, phones, emails []string
	var tagID int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO tags (company_id, name) VALUES ($1, 'vip') RETURNING id`, company).Scan(&tagID))
	var rows [][]any
	for i := range 1500 {
		fn, ln := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		name := fn + " " + ln
		ph := []domain.Phone{{Type: "mobile", Phone: fmt.Sprintf("+79%09d", (int64(i)*387_420_489+123_456_789)%1_000_000_000)}}
		var em []domain.Email
		if i%2 == 0 {
			em = append(em, domain.Email{Type: "work", Email: fmt.Sprintf("%s.%s%d@example.com", strings.ToLower(fn), strings.ToLower(ln), i)})
		}
		comp := company
		if i%10 == 0 {
			comp = other
		}
		rows = append(rows, []any{int64(i + 1), comp, name, i%50 == 0, domain.SearchText(name, ph, em)})
		names, phones = append(names, name), append(phones, ph[0].Phone)
		if len(em) > 0 {
			emails = append(emails, em[0].Email)
		}
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"id", "company_id", "name", "is_group", "search"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)
	_, err = db.Exec(ctx, `INSERT INTO contact_tags SELECT id, $1 FROM contacts WHERE company_id = $2 AND id % 3 = 0`, tagID, company)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE contacts SET created_at = now() - (id % 97) * interval '1 hour'`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `ANALYZE contacts, contact_tags`)
	require.NoError(t, err)

	queries := []string{"ivan smirnov", "смирн", "pav", "pavl", "ivan", "smi", "ivx", "79", "7", "a", "xz", "a b", "%", "_", "example",
		"anna.petrov", "john smyth", "сергей", "zzzzzz", "-", "...",
		// The shape test's edges (keyCandidates): typos of a first name
		// whose last name's keys all pass the trigram count, runs across
		// the name and the email, short and repeated words, Cyrillic.
		"maxia popov", "ivxn popov", "olxa smith", "pavxl johnson", "popov maria", "ivanov ivan", "smith.jo",
		"ivan ivan", "ann mo", "jones ex", "иxан попов", "мария кузнецxв", "попов мария", "anna anna",
		// A tested key's contacts that match only through the email's
		// domain, past the `@` before which keySearchFrom tests first
		// (`ivan popov ivan.popov12@example.com`: `popov12@example`).
		"popov exampl", "smith exampl", "nikitin exampl",
		// Substrings inside a word, whose only trigrams every match has
		// are the sure ones: one of them is always read, never assumed
		// (searchKeys).
		"xampl", "mirno", "ихайл"}
	for range 10 {
		n := names[rng.IntN(len(names))]
		l := []rune(strings.Fields(n)[1])
		d := strings.TrimPrefix(phones[rng.IntN(len(phones))], "+7")
		e := emails[rng.IntN(len(emails))]
		queries = append(queries, withTypo(rng, n), strings.ToUpper(n), string(l[:len(l)-2]), d[1:4]+" "+d[4:6]+"-"+d[6:8], d[3:9], e[2:12])
	}

	// The trigrams searchKeys may count as present in every key
	// (commonTrigrams) change what a search reads, never what it answers:
	// every list is also read with those in half the company's keys
	// (wrong for the other half), and with every trigram of every query.
	half, every := New(db), New(db)
	var halfList, everyList []string
	require.NoError(t, db.QueryRow(ctx, `SELECT array_agg(trigram) FROM contact_key_trigrams WHERE company_id = $1
		GROUP BY trigram HAVING count(*) * 2 >= (SELECT count(*) FROM contact_name_keys WHERE company_id = $1)`, company).Scan(&halfList))
	searched := make([]string, len(queries))
	for i, q := range queries {
		searched[i] = domain.SearchQuery(q)
	}
	// The trigrams inside a query's words first, so that they are the
	// first assumed (the sure ones: searchKeys).
	require.NoError(t, db.QueryRow(ctx, `SELECT array_agg(t ORDER BY inner_ DESC, t) FROM (
		SELECT t, bool_or(t = ANY(show_trgm('x' || q || 'x'))) AS inner_ FROM unnest($1::text[]) q, unnest(show_trgm(q)) t GROUP BY t) s`,
		searched).Scan(&everyList))
	require.NotEmpty(t, halfList)
	half.common.set(company, halfList, nil)
	every.common.set(company, everyList, nil)
	// And with the company's keys counted in memory (keyIndexes).
	memory := New(db)
	loadKeys(t, ctx, memory, company)
	repos := []*Repo{r, half, every, memory}

	filters := []domain.Filter{
		{Limit: 100},
		{Limit: 100, Order: domain.OrderIDDesc},
		{Limit: 7, Order: domain.OrderNameAsc},
		{Limit: 7, Order: domain.OrderNameDesc, WithGroups: true},
		{Limit: 20, Order: domain.OrderCreatedAsc, Offset: 15},
		{Limit: 20, Order: domain.OrderCreatedDesc, Tags: []int64{tagID}},
		{Limit: 5, Offset: 100_000},
	}
	var fuzzyOnly, likeOnly, keyOnly, wholeOnly int
	var dropped, keptTested int64
	paths := map[string]int{}
	for _, q := range queries {
		path, d, k := searchKeyPath(t, ctx, db, company, domain.SearchQuery(q))
		paths[path]++
		dropped, keptTested = dropped+d, keptTested+k
		for _, f := range filters {
			f.Search = domain.SearchQuery(q)
			var want []int64
			var wantTotal int64
			require.NoError(t, pgxTx(ctx, db, func(tx pgx.Tx) {
				want, wantTotal = legacyList(t, ctx, tx, company, f)
			}))
			for i, r := range repos {
				got, total, err := r.ListContacts(ctx, company, f)
				require.NoError(t, err)
				gotIDs := []int64{}
				for _, c := range got {
					gotIDs = append(gotIDs, c.ID)
					require.Equal(t, company, c.CompanyID, "query %q", q)
				}
				require.Equal(t, want, gotIDs, "query %q, filter %+v, repository %d", q, f, i)
				require.Equal(t, wantTotal, total, "query %q, filter %+v, repository %d", q, f, i)
			}
		}
		// Which arm found what: the test must cover each. byKey: by the
		// name key (word_similarity on the name alone), not by substring;
		// searchOnly: by word_similarity on the whole search text only.
		var fuzzy, like, byKey, searchOnly int
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE search NOT LIKE $2 AND word_similarity($1, search) >= 0.6),
			count(*) FILTER (WHERE search LIKE $2 AND word_similarity($1, search) < 0.6),
			count(*) FILTER (WHERE search NOT LIKE $2 AND word_similarity($1, name_key) >= 0.6),
			count(*) FILTER (WHERE search NOT LIKE $2 AND word_similarity($1, name_key) < 0.6 AND word_similarity($1, search) >= 0.6)
			FROM contacts WHERE company_id = $3`,
			domain.SearchQuery(q), likePattern(domain.SearchQuery(q)), company).Scan(&fuzzy, &like, &byKey, &searchOnly))
		fuzzyOnly += fuzzy
		likeOnly += like
		keyOnly += byKey
		wholeOnly += searchOnly
	}
	require.Positive(t, fuzzyOnly, "no query found a contact by word_similarity alone")
	require.Positive(t, likeOnly, "no query found a contact by substring alone")
	require.Positive(t, keyOnly, "no query found a contact by its name key")
	require.Positive(t, wholeOnly, "no query found a contact by word_similarity on its whole search text only")
	var keys, missing int
	require.NoError(t, db.QueryRow(ctx, `SELECT (SELECT count(*) FROM contact_name_keys),
		(SELECT count(*) FROM contacts c WHERE NOT EXISTS (
			SELECT 1 FROM contact_name_keys k WHERE k.company_id = c.company_id AND k.name_key = c.name_key))`).Scan(&keys, &missing))
	require.Positive(t, keys, "COPY left contact_name_keys empty")
	require.Zero(t, missing, "contacts whose name key is not in contact_name_keys")
	// Every path was taken: through the name keys, through the trigram
	// index after the keys (too many to test), the trigram index for a
	// text with a digit, and the short patterns.
	for _, p := range []string{"keys", "keys, then trigrams", "trigrams", "short"} {
		require.Positive(t, paths[p], "no query took the path %q: %v", p, paths)
	}
	require.Zero(t, missingKeyTrigrams(t, ctx, db), "trigrams of contacts missing from contact_key_trigrams")
	// The shape test (keyCandidates) left keys out, and kept others to
	// test whose contacts were then tested one by one.
	require.Positive(t, dropped, "the shape test left no key out")
	require.Positive(t, keptTested, "the shape test kept no key to test")
	require.Zero(t, missingKeyShapes(t, ctx, db), "shapes of contacts missing from contact_key_shapes")
}

// missingKeyShapes counts the contacts whose shape contact_key_shapes does
// not hold for their company and name key.
func missingKeyShapes(t *testing.T, ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM contacts c WHERE NOT EXISTS (SELECT 1 FROM contact_key_shapes k
		WHERE k.company_id = c.company_id AND k.name_key = c.name_key AND k.shape = contact_search_shape(c.search))`).Scan(&n))
	return n
}

// searchPath tells which way ListContacts reads the search q (searchContacts).
func searchPath(t *testing.T, ctx context.Context, db *pgxpool.Pool, company int64, q string) string {
	t.Helper()
	path, _, _ := searchKeyPath(t, ctx, db, company, q)
	return path
}

// searchKeyPath is searchPath, and for a key search how many keys to test
// the shape test left out (keyCandidates) and how many it kept.
func searchKeyPath(t *testing.T, ctx context.Context, db *pgxpool.Pool, company int64, q string) (string, int64, int64) {
	t.Helper()
	switch {
	case !hasTrigram(q):
		return "short", 0, 0
	case hasDigit(q):
		return "trigrams", 0, 0
	}
	var sure bool
	var keys, shapeKeys, shapes []string
	var matched []bool
	var tested int64
	b := &pgx.Batch{}
	b.Queue(keyPlanner, searchThreshold)
	b.Queue(searchKeys, company, q, likePattern(q), keySearchMaxTested, []string{}).QueryRow(func(row pgx.Row) error {
		return row.Scan(&sure, &keys, &matched, &tested, &shapeKeys, &shapes)
	})
	require.NoError(t, db.SendBatch(ctx, b).Close())
	before := tested
	set := keyCandidates(newShapeQuery(q), keys, matched, tested, shapeKeys, shapes)
	keys, tested = set.keys, set.tested
	if byKeys(sure, len(keys), tested) {
		return "keys", before - tested, tested
	}
	return "keys, then trigrams", before - tested, tested
}

// missingKeyTrigrams counts the trigrams (digits made spaces) of contacts
// that contact_key_trigrams does not hold for their company and name key.
func missingKeyTrigrams(t *testing.T, ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM contacts c,
		LATERAL unnest(show_trgm(regexp_replace(c.search, '[0-9]', ' ', 'g'))) AS g(trigram)
		WHERE NOT EXISTS (SELECT 1 FROM contact_key_trigrams k
			WHERE k.company_id = c.company_id AND k.trigram = g.trigram AND k.name_key = c.name_key)`).Scan(&n))
	return n
}

// pgxTx runs fn in a transaction with custom plans, as ListContacts did.
func pgxTx(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(pgx.Tx)) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return err
	}
	fn(tx)
	return nil
}

func TestHasTrigram(t *testing.T) {
	for s, want := range map[string]bool{"": false, "79": false, "a b": false, "a.bc": false, "abc": true, "ёжи": true, "x 123": true, "%%%": false} {
		require.Equal(t, want, hasTrigram(s), s)
	}
}

// A renamed contact's new name key reaches contact_name_keys (the update
// trigger), and a typo of the new name finds it.
func TestNameKeysFollowRenames(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(9)
	var id int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO contacts (company_id, name, search) VALUES ($1, 'Zed Quill', $2) RETURNING id`,
		company, domain.SearchText("Zed Quill", nil, nil)).Scan(&id))
	_, err := db.Exec(ctx, `UPDATE contacts SET name = 'Yaroslava Nosova', search = $2 WHERE id = $1`,
		id, domain.SearchText("Yaroslava Nosova", nil, nil))
	require.NoError(t, err)
	var keys []string
	require.NoError(t, db.QueryRow(ctx, `SELECT array_agg(name_key ORDER BY name_key) FROM contact_name_keys WHERE company_id = $1`, company).Scan(&keys))
	require.Equal(t, []string{"yaroslava nosova", "zed quill"}, keys, "the old key stays, the new one is added")
	got, total, err := r.ListContacts(ctx, company, domain.Filter{Search: domain.SearchQuery("yaroslava nosvoa"), Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	require.Len(t, got, 1)
	require.Equal(t, id, got[0].ID)
}

// Contact writes keep the search index's pending list short
// (migrations/0005): every search reads the whole list, whatever it looks
// for, and with the default 4 MB limit it grew by a page every ~11
// contacts written until a vacuum (364 pages after 4,000, a phone digits
// search 25 times slower). 1,000 contacts created one by one, as the
// service creates them, must never leave more than the 256 kB limit
// (32 pages) and a page of slack pending; without the migration the list
// reached 99 pages. A search answers the same with the list pending or
// merged.
func TestSearchPendingListBounded(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	_, err := db.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`)
	require.NoError(t, err)
	r := New(db)
	const company, n = int64(11), 1000
	pending, most := 0, 0
	for i := range n {
		first, last := []string{"Ivan", "Anna", "John", "Olga"}[i%4], []string{"Petrov", "Smith", "Morozova"}[i%3]
		_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: first + " " + last,
			Phones: []domain.Phone{{Type: "mobile", Phone: fmt.Sprintf("+7916%07d", i)}},
			Emails: []domain.Email{{Type: "work", Email: fmt.Sprintf("%s.%s%d@example.com", strings.ToLower(first), strings.ToLower(last), i)}}})
		require.NoError(t, err)
		require.NoError(t, db.QueryRow(ctx, `SELECT pending_pages FROM pgstatginindex('contacts_search')`).Scan(&pending))
		most = max(most, pending)
	}
	require.LessOrEqual(t, most, 33, "pages pending in contacts_search")
	// The same answers with the pending list merged into the index.
	search := func() ([]int64, int64) {
		got, total, err := r.ListContacts(ctx, company, domain.Filter{Search: domain.SearchQuery(fmt.Sprintf("916%07d", n-1)), Limit: 100})
		require.NoError(t, err)
		ids := make([]int64, len(got))
		for i, c := range got {
			ids[i] = c.ID
		}
		return ids, total
	}
	ids, total := search()
	require.NotEmpty(t, ids)
	_, err = db.Exec(ctx, `SELECT gin_clean_pending_list('contacts_search')`)
	require.NoError(t, err)
	require.NoError(t, db.QueryRow(ctx, `SELECT pending_pages FROM pgstatginindex('contacts_search')`).Scan(&pending))
	require.Zero(t, pending)
	merged, mergedTotal := search()
	require.Equal(t, merged, ids)
	require.Equal(t, mergedTotal, total)
}

// A search's planner settings (searchPlanner, keyPlanner) come at the
// head of each batch and must hold for the batch's statements, then end
// with it (the trigram search's implicit transaction, the key search's
// REPEATABLE READ one). Shown on a pool of one connection: in a planned
// batch the trigram search is the bitmap scan of its indexes (without the
// settings the planner walks the primary key here), the key search
// index-only scans of its two indexes, after a search the connection's
// settings are the server's again, and each statement was planned as its
// batch says (generic or custom).
func TestSearchSettingsLastTheirBatch(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDSN(t, migrations.FS)
	cfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.MaxConns = 1
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	r := New(db)
	const company = int64(3)
	for _, name := range []string{"Anna Petrova", "Annabel Lee", "Boris Orlov"} {
		_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: name})
		require.NoError(t, err)
	}
	// Enough others, analyzed, that the planner left alone would walk the
	// primary key or read the table rather than use the trigram index.
	_, err = db.Exec(ctx, `INSERT INTO contacts (company_id, name, search)
		SELECT $1, 'Contact ' || i, 'contact ' || i FROM generate_series(1, 3000) i`, company)
	require.NoError(t, err)
	// And other companies', so that a generic plan takes a company for a
	// small share of the contacts (and would read it through
	// contacts_company_id if it could).
	_, err = db.Exec(ctx, `INSERT INTO contacts (company_id, name, search)
		SELECT 100 + i % 2000, 'Other ' || i, 'other ' || i FROM generate_series(1, 4000) i`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `ANALYZE contacts, contact_name_keys`)
	require.NoError(t, err)
	settings := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) string {
		var s string
		require.NoError(t, q.QueryRow(ctx, `SELECT concat_ws(' ', current_setting('enable_seqscan'), current_setting('enable_indexscan'),
			current_setting('enable_nestloop'), current_setting('enable_bitmapscan'), current_setting('plan_cache_mode'),
			current_setting('jit'), current_setting('max_parallel_workers_per_gather'), current_setting('transaction_isolation'))`).Scan(&s))
		return s
	}
	server := settings(db)
	require.NotContains(t, server, "off", "the server's own settings")

	// In the batch, after its first statement, the settings hold (the
	// batch's other statements run under them), whatever the plan.
	var inBatch string
	b := plannedBatch(customPlans)
	b.Queue(`SELECT concat_ws(' ', current_setting('enable_seqscan'), current_setting('enable_indexscan'), current_setting('enable_nestloop'))`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&inBatch) })
	require.NoError(t, db.SendBatch(ctx, b).Close())
	require.Equal(t, "off off on", inBatch, "the search's settings did not hold through its batch")
	b = plannedBatch(genericPlans)
	b.Queue(`SELECT concat_ws(' ', current_setting('enable_seqscan'), current_setting('enable_indexscan'),
		current_setting('enable_nestloop'), current_setting('plan_cache_mode'))`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&inBatch) })
	require.NoError(t, db.SendBatch(ctx, b).Close())
	require.Equal(t, "off off off force_generic_plan", inBatch, "a generic batch's settings did not hold through it")

	// genericPlan is the plan a generic batch gives stmt, prepared as
	// signature and explained for execute.
	genericPlan := func(signature, stmt, execute string) string {
		var plan string
		b := plannedBatch(genericPlans)
		b.Queue(`PREPARE ` + signature + ` AS ` + stmt)
		b.Queue(`EXPLAIN (COSTS OFF) EXECUTE ` + execute).Query(func(rows pgx.Rows) error {
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plan = strings.Join(lines, "\n")
			return err
		})
		b.Queue(`DEALLOCATE ` + strings.SplitN(signature, "(", 2)[0])
		require.NoError(t, db.SendBatch(ctx, b).Close())
		return plan
	}

	var plan string
	b = plannedBatch(customPlans)
	b.Queue(`EXPLAIN (COSTS OFF) `+searchQueries[domain.OrderIDAsc], company, false, []int64{}, likePattern("anna"), "anna", []string{}, 100, 0).
		Query(func(rows pgx.Rows) error {
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plan = strings.Join(lines, "\n")
			return err
		})
	require.NoError(t, db.SendBatch(ctx, b).Close())
	require.Contains(t, plan, "Bitmap Heap Scan on contacts c", plan)
	require.NotContains(t, plan, "Seq Scan", plan)

	// The generic plan of the name keys is the bitmap scan of their
	// trigram index, not a walk of all the company's keys.
	plan = genericPlan(`keys(bigint, text)`, searchNameKeys, `keys(3, 'anna')`)
	require.Contains(t, plan, "Bitmap Index Scan on contact_name_keys_search", plan)
	require.Contains(t, plan, "$2", "a generic plan: "+plan)

	// So is the generic plan of the search, and no company index in it.
	plan = genericPlan(`page(bigint, bool, bigint[], text, text, text[], int, int)`, genericSearchQueries[domain.OrderIDAsc],
		`page(3, false, '{}', '%anna%', 'anna', '{"anna petrova"}', 100, 0)`)
	require.Contains(t, plan, "BitmapOr", plan)
	require.Contains(t, plan, "$5", "a generic plan: "+plan)
	require.NotContains(t, plan, "contacts_company", plan)
	require.NotContains(t, plan, "Nested Loop", "the details by one scan, hashed: "+plan)
	require.Contains(t, plan, "Hash Cond", "the details by one scan, hashed: "+plan)

	// A key search (searchKeys, then keySearchQueries in the same
	// transaction): the keys an index-only scan of contact_key_trigrams,
	// the contacts one of contacts_search_keys per key, no sequential or
	// bitmap scan of contacts, generic plans.
	keyPlan := func(stmt string, args ...any) string {
		var plan string
		b := &pgx.Batch{}
		b.Queue(keyPlanner, searchThreshold)
		b.Queue(`EXPLAIN (COSTS OFF) `+stmt, args...).Query(func(rows pgx.Rows) error {
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plan = strings.Join(lines, "\n")
			return err
		})
		require.NoError(t, db.SendBatch(ctx, b).Close())
		return plan
	}
	plan = keyPlan(searchKeys, company, "anna", likePattern("anna"), keySearchMaxTested, []string{})
	require.Contains(t, plan, "Index Only Scan using contact_key_trigrams_pkey", plan)
	require.Contains(t, plan, "Index Only Scan using contact_key_shapes_pkey", plan)
	plan = keyPlan(keySearchQueries[domain.OrderNameAsc], company, false, []int64{}, likePattern("anna"), "anna",
		[]string{"anna petrova", "annabel lee"}, []bool{true, true}, 100, 0, []string{}, []int32{1, 1}, []int32{0, 0}, []string{})
	require.Contains(t, plan, "Index Only Scan using contacts_search_keys on contacts c", plan)
	require.NotContains(t, plan, "Seq Scan", plan)
	require.NotContains(t, plan, "Bitmap", plan)

	// Letters only: through the keys, in one transaction. With a digit,
	// through the trigram index: few keys the generic plan; "contact 1"
	// has 3,000 keys and the tag filter its subquery: custom plans.
	for _, f := range []domain.Filter{
		{Search: domain.SearchQuery("anna")},
		{Search: domain.SearchQuery("boris orlxv")},
		{Search: domain.SearchQuery("contact")},
		{Search: domain.SearchQuery("anna"), Tags: []int64{999}},
		{Search: domain.SearchQuery("anna 1")},
		{Search: domain.SearchQuery("contact 1")},
		{Search: domain.SearchQuery("anna 1"), Tags: []int64{999}},
	} {
		f.Order, f.Limit = domain.OrderIDAsc, 10
		got, total, err := r.ListContacts(ctx, company, f)
		require.NoError(t, err)
		require.Len(t, got, min(int(total), 10), f.Search)
		if f.Tags == nil {
			require.NotZero(t, total, f.Search)
		}
	}
	require.Equal(t, server, settings(db), "the search's settings ended with its batch")

	// Each batch's plan_cache_mode held for its statement: the name keys
	// were read with the one generic plan, the page of few keys with the
	// other, the pages of many keys or tags planned for their values (the
	// keys a constant, so hashed).
	plans := func(stmt string) (generic, custom int64) {
		require.NoError(t, db.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, stmt).
			Scan(&generic, &custom))
		return generic, custom
	}
	generic, custom := plans(searchKeys)
	require.Equal(t, [2]int64{4, 0}, [2]int64{generic, custom}, "searchKeys: generic and custom plans")
	generic, custom = plans(keySearchQueries[domain.OrderIDAsc])
	require.Equal(t, [2]int64{4, 0}, [2]int64{generic, custom}, "the search by keys: generic and custom plans")
	generic, custom = plans(searchNameKeys)
	require.Equal(t, [2]int64{3, 0}, [2]int64{generic, custom}, "searchNameKeys: generic and custom plans")
	generic, custom = plans(genericSearchQueries[domain.OrderIDAsc])
	require.Equal(t, [2]int64{1, 0}, [2]int64{generic, custom}, "the search of few keys: generic and custom plans")
	generic, custom = plans(searchQueries[domain.OrderIDAsc])
	require.Equal(t, [2]int64{0, 2}, [2]int64{generic, custom}, "the search of many keys or tags: generic and custom plans")
}

// searchKeys, as the service runs it (a generic plan, keyPlanner), reads
// each key to test's shapes by a descent of contact_key_shapes' primary key
// of its own. As a join, with companies of thousands of shapes the generic
// plan expected hundreds of keys and merged them with every shape of the
// company in key order (5,000-12,000 rows, 0.5-1.4 ms a search in the
// benchmark, docs/contacts-search.md "Tenth pass"); this data makes that
// plan (the test fails with the join).
func TestKeyShapesReadPerKey(t *testing.T) {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, pgtest.NewDSN(t, migrations.FS))
	require.NoError(t, err)
	t.Cleanup(db.Close)
	_, err = db.Exec(ctx, `INSERT INTO contacts (company_id, name, search)
		SELECT 1 + i % 2, 'Anna Name' || i, 'anna name' || i || ' anna.name' || i || '@mail' || (i % 7) || '.ru'
		FROM generate_series(1, 8000) i`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `VACUUM ANALYZE contacts, contact_key_trigrams, contact_key_shapes`)
	require.NoError(t, err)
	var plan string
	b := &pgx.Batch{}
	b.Queue(keyPlanner, searchThreshold)
	b.Queue(`PREPARE keys(bigint, text, text, int, text[]) AS ` + searchKeys)
	b.Queue(`EXPLAIN (COSTS OFF) EXECUTE keys(1, 'anna namx', '%anna namx%', 100, '{}')`).Query(func(rows pgx.Rows) error {
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan = strings.Join(lines, "\n")
		return err
	})
	b.Queue(`DEALLOCATE keys`)
	require.NoError(t, db.SendBatch(ctx, b).Close())
	require.Contains(t, plan, "Index Only Scan using contact_key_shapes_pkey", plan)
	// company_id = $1: a generic plan.
	require.Contains(t, plan, "Index Cond: ((company_id = $1) AND (name_key = k.name_key))", plan)
	require.NotContains(t, plan, "Merge Join", plan)
	require.NotContains(t, plan, "Hash Join", plan)
}

// A key search reads its candidate keys and its page in one snapshot
// (searchContacts' REPEATABLE READ transaction). A writer renames, in one
// transaction each time, the one contact called "Zorro <n>" to a name that
// does not match and another contact to "Zorro <n+1>", a new name key, so
// that exactly one contact matches "zorro" in every committed state. Read
// in two snapshots, the keys could miss the new key that the page then
// sees, and a search answer none. Every search must find exactly one, and
// the new key's trigrams must come with the rename (the update trigger).
func TestKeySearchOneSnapshot(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(11)
	var ids [2]int64
	for i, name := range []string{"Zorro 0", "Quentin Blake"} {
		c, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: name})
		require.NoError(t, err)
		ids[i] = c.ID
	}
	for i := range 50 {
		_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: fmt.Sprintf("Other Person %c", 'a'+i%26)})
		require.NoError(t, err)
	}
	// Every other search counts the keys in memory (keyIndexes): the copy
	// is brought up to date in the search's snapshot.
	memory := New(db)
	loadKeys(t, ctx, memory, company)
	done := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		var err error
		defer func() { writerErr <- err }()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			from, to := ids[(n+1)%2], ids[n%2]
			_, err = db.Exec(ctx, `UPDATE contacts SET name = CASE WHEN id = $2 THEN $3 ELSE $4 END,
				search = lower(CASE WHEN id = $2 THEN $3 ELSE $4 END) WHERE id IN ($1, $2)`,
				from, to, fmt.Sprintf("Zorro %d", n), fmt.Sprintf("Quentin Blake%c", 'a'+n%26))
			if err != nil {
				return
			}
		}
	}()
	for i := range 100 {
		got, total, err := []*Repo{r, memory}[i%2].ListContacts(ctx, company, domain.Filter{Search: "zorro", Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, total, "search %d", i)
		require.Len(t, got, 1, "search %d", i)
	}
	close(done)
	require.NoError(t, <-writerErr)
	require.Equal(t, "keys", searchPath(t, ctx, db, company, "zorro"))
	require.Zero(t, missingKeyTrigrams(t, ctx, db))
}

// A key's shapes are read in the search's snapshot and written in the
// contact write's transaction, so the shape test never leaves out the key
// of a contact whose text has just come to match. Contacts of their own
// name keys ("<letters> Popov") each start with an address that keeps
// them from matching "popov maria" (their key passes the trigram count,
// `mail` giving `  m` and ` ma`, but no run of their text reaches the
// threshold, `ov1` and `v1 ` standing between `popov` and `mail`: the
// shape test leaves the key out). A writer gives the address maria@mail.ru
// to the next of them and takes it from the last, in one transaction each
// time: exactly one contact matches, through the run `popov maria`, and
// only the shape its write added lets its key through. Every search must
// find exactly one. With the search's transaction READ COMMITTED instead
// of REPEATABLE READ the keys and the page are read in two snapshots, and
// a search finds none.
func TestKeySearchShapesOneSnapshot(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company, n = int64(12), 95
	ids := make([]int64, n)
	for i := range n {
		name := fmt.Sprintf("%c%c%c Popov", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26)
		email := fmt.Sprintf("zz.popov%d@mail.ru", i+1)
		if i == 0 {
			email = "maria@mail.ru"
		}
		c, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: name, Emails: []domain.Email{{Type: "work", Email: email}}})
		require.NoError(t, err)
		ids[i] = c.ID
	}
	q := domain.SearchQuery("popov maria")
	path, dropped, _ := searchKeyPath(t, ctx, db, company, q)
	require.Equal(t, "keys", path)
	require.EqualValues(t, n-1, dropped, "the keys of the contacts that do not match are left out")
	memory := New(db)
	loadKeys(t, ctx, memory, company)

	done := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		var err error
		defer func() { writerErr <- err }()
		for i := 1; i < n; i++ {
			select {
			case <-done:
				return
			default:
			}
			_, err = db.Exec(ctx, `UPDATE contacts SET search = lower(name) || ' ' || CASE WHEN id = $1 THEN 'maria@mail.ru' ELSE 'zz.popov0@mail.ru' END
				WHERE id IN ($1, $2)`, ids[i], ids[i-1])
			if err != nil {
				return
			}
		}
	}()
	for i := range 200 {
		got, total, err := []*Repo{r, memory}[i%2].ListContacts(ctx, company, domain.Filter{Search: q, Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, total, "search %d", i)
		require.Len(t, got, 1, "search %d", i)
	}
	close(done)
	require.NoError(t, <-writerErr)
	require.Zero(t, missingKeyShapes(t, ctx, db))
}

// TestSearchBeforeAtNeverAddsAMatch holds keySearchFrom's first test to
// PostgreSQL: a text's part before its first `@` (searchBeforeAt) ends
// before a character that is not a word's, so its trigrams are the first
// of the text's, and whatever word_similarity reaches on it, it reaches on
// the whole text. Over texts like contacts' (local parts ending in
// letters, digits or a cut word, Latin and Cyrillic, phones after) and
// queries of runs of their words, cut or with a typo, no pair matches on
// the prefix and not on the whole text, and the prefix settles some. The
// same prefix cut one character earlier, inside the word before the `@`,
// does add matches (`popo` in `popov`): the check can fail.
func TestSearchBeforeAtNeverAddsAMatch(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	rng := rand.New(rand.NewPCG(32, 10))
	first := []string{"ivan", "maria", "popo", "anna", "иван", "jo", "ekaterina", "мария"}
	last := []string{"popov", "popova", "smith", "petrov", "ivanov", "попов", "mo", "smirnova"}
	domains := []string{"mail.ru", "example.com", "gmail.com", "почта.рф", "popov.org"}
	var texts []string
	for range 400 {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		locals := []string{f + "." + l, f + "." + l + fmt.Sprint(rng.IntN(100)), l, f + "_" + string([]rune(l)[:len([]rune(l))-1]),
			fmt.Sprint(rng.IntN(100)) + l, f + l}
		text := f + " " + l + " " + locals[rng.IntN(len(locals))] + "@" + domains[rng.IntN(len(domains))]
		if rng.IntN(2) == 0 {
			text += fmt.Sprintf(" 79%09d", rng.IntN(1_000_000_000))
		}
		texts = append(texts, text)
	}
	var queries []string
	for len(queries) < 400 {
		words := strings.FieldsFunc(texts[rng.IntN(len(texts))], func(r rune) bool {
			return r == ' ' || r == '.' || r == '@' || r == '_' || (r >= '0' && r <= '9')
		})
		i := rng.IntN(len(words))
		run := words[i:min(len(words), i+1+rng.IntN(2))]
		q := []rune(strings.Join(run, " "))
		switch rng.IntN(3) {
		case 0: // cut
			q = q[:max(2, len(q)-1-rng.IntN(2))]
		case 1: // a typo
			q[rng.IntN(len(q))] = 'x'
		}
		queries = append(queries, string(q))
	}
	count := func(prefix string) (added, settled int64) {
		atThreshold(t, ctx, db, `SELECT count(*) FILTER (WHERE pre AND NOT whole), count(*) FILTER (WHERE pre)
			FROM (SELECT `+prefix+` %> q.q AS pre, c.search %> q.q AS whole
			      FROM unnest($1::text[]) AS c(search), unnest($2::text[]) AS q(q)
			      WHERE strpos(c.search, '@') > 1) x`, []any{texts, queries}, &added, &settled)
		return added, settled
	}
	added, settled := count(searchBeforeAt)
	require.Zero(t, added, "pairs matching on the text before the @ and not on the whole text")
	require.Positive(t, settled, "the text before the @ settled no pair")
	earlier := strings.Replace(searchBeforeAt, "'@') - 1)", "'@') - 2)", 1)
	require.NotEqual(t, searchBeforeAt, earlier)
	wrong, _ := count(earlier)
	require.Positive(t, wrong, "a prefix cut inside a word added no match: the check cannot fail")
	t.Logf("%d texts × %d queries: %d pairs settled on the text before the @; cut a character earlier, %d matches added",
		len(texts), len(queries), settled, wrong)
}
