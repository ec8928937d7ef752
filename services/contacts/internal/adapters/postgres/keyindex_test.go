package postgres

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// loadKeys loads company's copy of its name keys into r's memory, as
// LoadKeyIndexes does when a search asks.
func loadKeys(t *testing.T, ctx context.Context, r *Repo, company int64) *keyIndex {
	t.Helper()
	ix, err := loadKeyIndex(ctx, r.db, company, r.keys.budget, 0)
	require.NoError(t, err)
	r.keys.set(company, ix, 0)
	require.Same(t, ix, r.keys.get(company))
	return ix
}

// keysBoth finds q's keys both ways, each in its own transaction: from
// the copy in memory (keysInMemory) and by searchKeys with no trigram
// assumed. Each comes sorted by key, its shapes by key and shape.
func keysBoth(t *testing.T, ctx context.Context, r *Repo, company int64, q string) (memory, database keysFound) {
	t.Helper()
	kq, ok := newKeyQuery(q)
	require.True(t, ok, q)
	ix := r.keys.get(company)
	require.NotNil(t, ix, "company %d's keys are in memory", company)
	find := func(keys func(querier) (keysFound, error)) keysFound {
		conn, err := r.db.Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		// The functions begin the transaction in their first batch.
		k, err := keys(conn)
		require.NoError(t, err, q)
		_, err = conn.Exec(ctx, keyTxEnd)
		require.NoError(t, err)
		sortKeys(&k)
		return k
	}
	memory = find(func(c querier) (keysFound, error) { return keysInMemory(ctx, c, r.keys, ix, &kq, company, q) })
	database = find(func(c querier) (keysFound, error) { return keysInDatabase(ctx, c, company, q, []string{}, true) })
	return memory, database
}

// sortKeys orders a keysFound's keys (with their flags) and its shapes.
func sortKeys(k *keysFound) {
	type pair struct {
		key string
		m   bool
	}
	ps := make([]pair, len(k.keys))
	for i := range k.keys {
		ps[i] = pair{k.keys[i], k.matched[i]}
	}
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
	for i := range ps {
		k.keys[i], k.matched[i] = ps[i].key, ps[i].m
	}
	shapes := make([]string, len(k.shapes))
	for i := range k.shapes {
		shapes[i] = k.shapeKeys[i] + "\x00" + k.shapes[i]
	}
	slices.Sort(shapes)
	for i, s := range shapes {
		k.shapeKeys[i], k.shapes[i], _ = strings.Cut(s, "\x00")
	}
}

// TestKeysInMemoryAnswerAsSearchKeys: the keys counted in memory, read
// with their own tests and shapes (keysInMemory), are searchKeys' for
// every text, Latin and Cyrillic, typos, parts and words every key has,
// and stay so after writes the copy has not seen: new names, new
// addresses of old names (more trigrams for a key), written through the
// repository and by COPY. The first search after the writes finds a key
// the copy did not have among its candidates, which costs the second
// round trip; without it, or without counting again, the answers differ.
func TestKeysInMemoryAnswerAsSearchKeys(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company, other = int64(31), int64(32)
	first := []string{"Ivan", "Maria", "Elena", "Pavel", "Olga", "Anna", "Maxim", "Dmitry", "Tatiana", "Иван", "Мария", "Наталья"}
	last := []string{"Novikov", "Popov", "Orlov", "Smith", "Volkov", "Pavlov", "Lebedev", "Sokolov", "Фёдоров", "Попов"}
	names := commonContacts(t, ctx, db, company, first, last, 2000, 31)
	commonContacts(t, ctx, db, other, append(first, "Quentin"), append(last, "Zabriskie"), 300, 32)
	r := New(db)
	ix := loadKeys(t, ctx, r, company)
	rng := rand.New(rand.NewPCG(31, 1))
	queries := []string{"ivan popov", "maxim", "pavl", "novik", "ova", "mail", "gmail", "com", "ivan popov mail", "мария попов",
		"наталья", "фёдор", "quentin zabriskie", "maxxm lebedev", "marxa фёдоров"}
	for range 40 {
		n := names[rng.IntN(len(names))]
		l := []rune(strings.Fields(n)[1])
		queries = append(queries, domain.SearchQuery(withTypo(rng, n)), strings.ToLower(string(l[:len(l)-2])))
	}
	compare := func(stage string) {
		for _, q := range queries {
			if kq, ok := newKeyQuery(q); !ok || kq.sures == 0 {
				continue
			}
			memory, database := keysBoth(t, ctx, r, company, q)
			require.Equal(t, database, memory, "%s: %q", stage, q)
		}
	}
	compare("loaded")
	rows := ix.rows

	// Writes the copy has not seen: a new name (one the other company
	// has), and old names at a new domain.
	for i := range 20 {
		_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Quentin Zabriskie",
			Emails: []domain.Email{{Type: "work", Email: fmt.Sprintf("q.zabriskie%d@proton.me", i)}}})
		require.NoError(t, err)
	}
	var copied [][]any
	for i := range 200 {
		n := names[rng.IntN(len(names))]
		em := []domain.Email{{Email: fmt.Sprintf("%s%d@proton.me", strings.ReplaceAll(strings.ToLower(n), " ", "."), i)}}
		copied = append(copied, []any{company, n, domain.SearchText(n, nil, em)})
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"company_id", "name", "search"}, pgx.CopyFromRows(copied))
	require.NoError(t, err)
	kq, _ := newKeyQuery("quentin zabriskie")
	before, _ := ix.candidates(&kq)
	require.Empty(t, before, "the copy has not seen the new name yet")
	queries = append([]string{"quentin zabriskie", "quentin zabriskxe", "proton"}, queries...)
	compare("after writes")
	require.Greater(t, ix.rows, rows, "the searches brought the copy up to date")
	fresh, err := loadKeyIndex(ctx, db, company, keyIndexBudget, 0)
	require.NoError(t, err)
	require.Equal(t, fresh.rows, ix.rows, "the copy holds what a new load does")
}

// TestKeyIndexMarkWaitsForOpenWrites: a copy's mark is the xmin of the
// snapshot it was read in, so the rows of a write still open when the copy
// was loaded, or when a search brought it up to date, while a later write
// committed, are read once it commits. With the newest row's transaction
// (plus one) as the mark, of the load (keyLoadMark) or of a search
// (keyCatchUp), a search after that commit misses the contact: a key that
// is not a candidate has no contact read.
func TestKeyIndexMarkWaitsForOpenWrites(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(41)
	for i := range 30 {
		_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: fmt.Sprintf("Other Person %c", 'a'+i%26)})
		require.NoError(t, err)
	}
	insert := func(q interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}, name string) {
		_, err := q.Exec(ctx, `INSERT INTO contacts (company_id, name, search) VALUES ($1, $2, $3)`, company, name, domain.SearchText(name, nil, nil))
		require.NoError(t, err)
	}
	found := func() int64 {
		t.Helper()
		require.Equal(t, "keys", searchPath(t, ctx, db, company, "quixote"))
		_, total, err := r.ListContacts(ctx, company, domain.Filter{Search: "quixote", Limit: 10})
		require.NoError(t, err)
		return total
	}
	alpha, err := db.Begin(ctx)
	require.NoError(t, err)
	defer alpha.Rollback(ctx)
	insert(alpha, "Quixote Alpha")
	// A write committed after it, which the load sees.
	insert(db, "Other Person Delta")
	loadKeys(t, ctx, r, company)

	beta, err := db.Begin(ctx)
	require.NoError(t, err)
	defer beta.Rollback(ctx)
	insert(beta, "Quixote Beta")
	insert(db, "Quixote Gamma")
	require.EqualValues(t, 1, found(), "the committed write")
	require.NoError(t, alpha.Commit(ctx))
	require.EqualValues(t, 2, found(), "the write open while the copy was loaded")
	require.NoError(t, beta.Commit(ctx))
	require.EqualValues(t, 3, found(), "the write open while a later one was read")
}

// TestKeyIndexSeesAnotherReplicasWrites: two replicas, each with its copy
// of a company's keys; every contact one writes, with a name new to the
// company, the other finds in its next search, exact and with a typo. No
// announcement is made: the search reads what was added (keyCatchUp).
func TestKeyIndexSeesAnotherReplicasWrites(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	one, two := New(db), New(db)
	const company = int64(51)
	commonContacts(t, ctx, db, company, []string{"Ivan", "Maria", "Pavel"}, []string{"Popov", "Orlov", "Smith"}, 300, 51)
	loadKeys(t, ctx, one, company)
	loadKeys(t, ctx, two, company)
	lasts := []string{"Abernathy", "Blackwood", "Castellanos", "Delacroix", "Eastwood", "Fairweather", "Gallagher", "Hawthorne",
		"Ingersoll", "Jablonski", "Kowalczyk", "Lindqvist", "Montgomery", "Nakamura", "Oyelaran", "Pemberton"}
	for i, last := range lasts {
		writer, reader := one, two
		if i%2 == 1 {
			writer, reader = two, one
		}
		_, err := writer.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Zinaida " + last})
		require.NoError(t, err)
		for _, q := range []string{"zinaida " + strings.ToLower(last), "zinaxda " + strings.ToLower(last), strings.ToLower(last[:6])} {
			got, total, err := reader.ListContacts(ctx, company, domain.Filter{Search: q, Limit: 10})
			require.NoError(t, err)
			require.EqualValues(t, 1, total, "contact %d, %q", i, q)
			require.Len(t, got, 1)
		}
	}
}

// TestKeyIndexDroppedWhenItCannotTakeARow: a row the copy cannot read (a
// trigram not as show_trgm writes one) drops the copy, and the search
// reads its keys from the database in the same transaction: it answers as
// ever, and the company is loaded again later.
func TestKeyIndexDroppedWhenItCannotTakeARow(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(61)
	_, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Zorro Blanco"})
	require.NoError(t, err)
	ix := loadKeys(t, ctx, r, company)
	_, err = db.Exec(ctx, `INSERT INTO contact_key_trigrams (company_id, trigram, name_key) VALUES ($1, 'zzzz', 'zorro negro')`, company)
	require.NoError(t, err)
	_, err = r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Zorro Negro"})
	require.NoError(t, err)
	_, total, err := r.ListContacts(ctx, company, domain.Filter{Search: "zorro negro", Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	require.Nil(t, r.keys.get(company), "the copy is dropped")
	r.keys.mu.Lock()
	require.Zero(t, r.keys.rows, "its rows counted out")
	r.keys.mu.Unlock()
	require.NotZero(t, ix.rows)
}

// TestKeyIndexesKeepTheirBudget: a company is asked for once until its load
// ends; a refused one is not asked for again before its retry; past the
// budget the copies searched least recently go, never the one that grew;
// rows merged into a copy already dropped are not counted, nor counted out
// when it drops between a merge and its count; a copy grown past half the
// budget goes.
func TestKeyIndexesKeepTheirBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	x := newKeyIndexes(100)
	x.now = func() time.Time { return now }
	asked := func() []int64 { return drainAsked(x.wanted) }
	rows := func() int64 {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.rows
	}
	require.Nil(t, x.get(1))
	require.Nil(t, x.get(1))
	require.Equal(t, []int64{1}, asked(), "asked once while loading")
	c1, c2, c3 := &keyIndex{rows: 40}, &keyIndex{rows: 40}, &keyIndex{rows: 40}
	x.set(1, c1, 0)
	x.set(2, c2, 0)
	require.Same(t, c1, x.get(1))
	require.Same(t, c2, x.get(2))
	x.set(3, c3, 0)
	require.EqualValues(t, 80, rows())
	require.Same(t, c2, x.get(2), "the company searched least recently went")
	require.Same(t, c3, x.get(3))
	require.Nil(t, x.get(1))
	require.Equal(t, []int64{1}, asked())
	c4 := &keyIndex{rows: 15}
	x.set(4, c4, 0)
	require.EqualValues(t, 95, rows())
	c3.rows += 10
	x.grew(3, c3, 10)
	require.EqualValues(t, 65, rows(), "the other copy searched least recently went, not the one that grew")
	require.Nil(t, x.get(2))
	require.Same(t, c4, x.get(4))
	c2.rows += 5
	x.grew(2, c2, 5)
	require.EqualValues(t, 65, rows(), "rows of a dropped copy are not counted")

	x.set(1, nil, keyIndexRetry)
	x.set(2, nil, keyIndexFailRetry)
	asked()
	require.Nil(t, x.get(1))
	require.Nil(t, x.get(2))
	require.Empty(t, asked(), "not before the retry")
	now = now.Add(keyIndexFailRetry)
	require.Nil(t, x.get(1))
	require.Nil(t, x.get(2))
	require.Equal(t, []int64{2}, asked())
	now = now.Add(keyIndexRetry)
	require.Nil(t, x.get(1))
	require.Equal(t, []int64{1}, asked())
	c3.rows++
	x.grew(3, c3, 1)
	require.Nil(t, x.get(3), "a copy grown past half the budget is dropped")
	require.EqualValues(t, 15, rows())
	// A copy dropped between a merge and its grew counts out what it
	// counted in.
	c5 := &keyIndex{rows: 10}
	x.set(5, c5, 0)
	c5.rows += 7
	x.forget(5, c5)
	x.grew(5, c5, 7)
	require.EqualValues(t, 15, rows())
	x.forget(4, c4)
	require.Zero(t, rows())
}

// TestLoadKeyIndexesServesSearches: the loader loads what searches ask for,
// after which they count keys in memory and answer as the old statement;
// a company too big for half the budget is refused and searched as before.
func TestLoadKeyIndexesServesSearches(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company, big = int64(71), int64(72)
	commonContacts(t, ctx, db, company, []string{"Ivan", "Maria", "Elena", "Pavel"}, []string{"Novikov", "Popov", "Orlov", "Smith"}, 500, 71)
	commonContacts(t, ctx, db, big, []string{"Ivan", "Maria", "Elena", "Pavel", "Oleg", "Anna"}, []string{"Novikov", "Popov", "Orlov", "Smith", "Volkov", "Titov"}, 1500, 72)
	r := New(db)
	var rows, bigRows int64
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE company_id = $1), count(*) FILTER (WHERE company_id = $2)
		FROM contact_key_trigrams`, company, big).Scan(&rows, &bigRows))
	r.keys.budget = 2 * rows
	require.Greater(t, bigRows, rows)
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.LoadKeyIndexes(loop, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	search := func(c int64, q string) {
		t.Helper()
		got, total, err := r.ListContacts(ctx, c, domain.Filter{Search: q, Limit: 100})
		require.NoError(t, err)
		var want []int64
		var wantTotal int64
		require.NoError(t, pgxTx(ctx, db, func(tx pgx.Tx) {
			want, wantTotal = legacyList(t, ctx, tx, c, domain.Filter{Search: q, Limit: 100})
		}))
		ids := []int64{}
		for _, c := range got {
			ids = append(ids, c.ID)
		}
		require.Equal(t, want, ids, q)
		require.Equal(t, wantTotal, total, q)
	}
	search(company, "marxa popov")
	require.Eventually(t, func() bool { return r.keys.get(company) != nil }, 30*time.Second, 5*time.Millisecond)
	for _, q := range []string{"marxa popov", "ivan", "novik", "elexa orlov"} {
		search(company, q)
	}
	search(big, "marxa popov")
	require.Eventually(t, func() bool {
		r.keys.mu.Lock()
		defer r.keys.mu.Unlock()
		b := r.keys.companies[big]
		return b != nil && !b.asked && !b.loaded
	}, 30*time.Second, 5*time.Millisecond, "the big company's load ended")
	require.Nil(t, r.keys.get(big), "refused")
	search(big, "marxa popov")
	stop()
	require.NoError(t, <-done)
}

// TestKeyIndexConcurrentSearches: searches of one copy run at once while a
// writer adds names new to the company; every search for a name written
// before it began finds it, whichever search merged the rows.
func TestKeyIndexConcurrentSearches(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	const company = int64(81)
	commonContacts(t, ctx, db, company, []string{"Ivan", "Maria", "Pavel"}, []string{"Popov", "Orlov", "Smith"}, 300, 81)
	loadKeys(t, ctx, r, company)
	words := []string{"Abernathy", "Blackwood", "Castellanos", "Delacroix", "Eastwood", "Fairweather", "Gallagher", "Hawthorne",
		"Ingersoll", "Jablonski", "Kowalczyk", "Lindqvist", "Montgomery", "Nakamura", "Oyelaran", "Pemberton", "Quarrington",
		"Rasmussen", "Szymanski", "Thistlewood", "Underhill", "Vanderbilt", "Whitlock", "Yarborough"}
	var written atomic.Int64
	errs := make(chan error, 5)
	go func() {
		for i, w := range words {
			if _, err := r.CreateContact(ctx, domain.Contact{CompanyID: company, Name: "Zinaida " + w}); err != nil {
				errs <- err
				return
			}
			written.Store(int64(i + 1))
		}
		errs <- nil
	}()
	for s := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(s), 81))
			// At least 30 searches each, and on until the writer is done.
			for i := 0; i < 30 || written.Load() < int64(len(words)); i++ {
				n := written.Load()
				for n == 0 {
					time.Sleep(time.Millisecond)
					n = written.Load()
				}
				w := words[rng.IntN(int(n))]
				_, total, err := r.ListContacts(ctx, company, domain.Filter{Search: "zinaxda " + strings.ToLower(w), Limit: 10})
				if err == nil && total != 1 {
					err = fmt.Errorf("%q: %d contacts", w, total)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 5 {
		require.NoError(t, <-errs)
	}
}

// TestKeyLoadReadsEveryChunk: a company of many chunks' rows (keyLoadRows
// each) is loaded whole, each posting once, resting between chunks
// (keyLoadPace) or not; ending the load's context ends a paced load.
func TestKeyLoadReadsEveryChunk(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company = int64(91)
	var first, last []string
	for i := range 40 {
		first = append(first, "F"+string(rune('a'+i%26))+string(rune('a'+i/26))+"name")
		last = append(last, "L"+string(rune('a'+i%26))+string(rune('a'+i/26))+"ov")
	}
	commonContacts(t, ctx, db, company, first, last, 3000, 91)
	commonContacts(t, ctx, db, company+1, first, last, 300, 92)
	var want int64
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM contact_key_trigrams WHERE company_id = $1`, company).Scan(&want))
	require.Greater(t, want, int64(3*keyLoadRows), "rows for several chunks")
	for _, pace := range []float64{0, 0.5} {
		ix, err := loadKeyIndex(ctx, db, company, keyIndexBudget, pace)
		require.NoError(t, err)
		require.Equal(t, want, ix.rows)
		var got int64
		for g, ids := range ix.post {
			require.True(t, slices.IsSorted(ids))
			require.Equal(t, len(ids), len(slices.Compact(slices.Clone(ids))), "%s posted twice", showTrgm([]trigram{g}))
			got += int64(len(ids))
		}
		require.Equal(t, want, got)
		var missing int64
		keys, tris := []string{}, []string{}
		for g, ids := range ix.post {
			for _, id := range ids {
				keys, tris = append(keys, ix.keys[id]), append(tris, showTrgm([]trigram{g})[0])
			}
		}
		require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM contact_key_trigrams k WHERE k.company_id = $1 AND NOT EXISTS (
			SELECT 1 FROM unnest($2::text[], $3::text[]) AS m(trigram, name_key) WHERE m.trigram = k.trigram AND m.name_key = k.name_key)`,
			company, tris, keys).Scan(&missing))
		require.Zero(t, missing, "rows of the company not in the copy")
	}
	stopped, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	_, err := loadKeyIndex(stopped, db, company, keyIndexBudget, 1000)
	require.ErrorIs(t, err, context.Canceled)
}
