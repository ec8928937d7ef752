package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// commonContacts writes n contacts like the benchmark's to company: names
// of first and last, each with an email at one of five domains.
func commonContacts(t *testing.T, ctx context.Context, db *pgxpool.Pool, company int64, first, last []string, n int, seed uint64) []string {
	t.Helper()
	domains := []string{"gmail.com", "yandex.ru", "mail.ru", "outlook.com", "example.com"}
	rng := rand.New(rand.NewPCG(seed, 7))
	var rows [][]any
	var names []string
	for i := range n {
		fn, ln := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		name := fn + " " + ln
		em := []domain.Email{{Email: strings.ToLower(fn+"."+ln) + fmt.Sprint(i) + "@" + domains[rng.IntN(len(domains))]}}
		ph := []domain.Phone{{Phone: fmt.Sprintf("+79%09d", (int64(i)*387_420_489+123_456_789+int64(seed))%1_000_000_000)}}
		rows = append(rows, []any{company, name, domain.SearchText(name, ph, em)})
		names = append(names, name)
	}
	_, err := db.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"company_id", "name", "search"}, pgx.CopyFromRows(rows))
	require.NoError(t, err)
	return names
}

// withTypo is s with one letter inside a word, not its first, made `x`.
func withTypo(rng *rand.Rand, s string) string {
	rs := []rune(s)
	for {
		i := 1 + rng.IntN(len(rs)-1)
		if rs[i] != ' ' && rs[i-1] != ' ' {
			rs[i] = 'x'
			return string(rs)
		}
	}
}

// keyTrigramRows is how many rows of contact_key_trigrams searchKeys reads
// for q with assumed as its common trigrams (EXPLAIN ANALYZE), and what it
// answers: its candidate keys, and those the shape test keeps
// (keyCandidates), each with whether it matches itself, sorted.
func keyTrigramRows(t *testing.T, ctx context.Context, db *pgxpool.Pool, company int64, q string, assumed []string) (int64, []string, []string) {
	t.Helper()
	var plan []byte
	var keys []string
	var matched []bool
	var sure bool
	var tested int64
	var shapeKeys, shapes []string
	require.NoError(t, pgxTx(ctx, db, func(tx pgx.Tx) {
		_, err := tx.Exec(ctx, keyPlanner, searchThreshold)
		require.NoError(t, err)
		args := []any{company, q, likePattern(q), keySearchMaxTested, assumed}
		require.NoError(t, tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+searchKeys, args...).Scan(&plan))
		require.NoError(t, tx.QueryRow(ctx, searchKeys, args...).Scan(&sure, &keys, &matched, &tested, &shapeKeys, &shapes))
	}))
	var nodes []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal(plan, &nodes))
	var rows int64
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation == "contact_key_trigrams" {
			rows += n.Rows * n.Loops
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(nodes[0].Plan)
	list := func(keys []string, matched []bool) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = fmt.Sprintf("%s %t", k, matched[i])
		}
		slices.Sort(out)
		return out
	}
	set := keyCandidates(newShapeQuery(q), keys, matched, tested, shapeKeys, shapes)
	return rows, list(keys, matched), list(set.keys, set.matched)
}

type planNode struct {
	Relation string     `json:"Relation Name"`
	Rows     int64      `json:"Actual Rows"`
	Loops    int64      `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// TestCommonTrigramsSpareRows: a company's common trigrams are those of its
// email domains, and searchKeys, given them, reads a fraction of the rows
// for a text that has them, with the same candidates. A company with few
// keys has none.
func TestCommonTrigramsSpareRows(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company, small = int64(3), int64(4)
	first := []string{"Ivan", "Maxim", "Maria", "Mikhail", "Ekaterina", "Elena", "Emily", "Pavel", "Tatiana", "Иван",
		"Olga", "Roman", "Sergey", "Anna", "Yulia", "Dmitry"}
	last := []string{"Novikov", "Makarov", "Morozov", "Pavlov", "Lebedev", "Orlov", "Semenov", "Popov", "Fedorov", "Попов",
		"Smith", "Wilson", "Mikhailov", "Sokolov", "Kuznetsov", "Volkov"}
	names := commonContacts(t, ctx, db, company, first, last, 4000, 45)
	commonContacts(t, ctx, db, small, first[:5], last[:5], 300, 46)
	_, err := db.Exec(ctx, `ANALYZE contacts, contact_name_keys, contact_key_trigrams, contact_key_shapes`)
	require.NoError(t, err)

	c := newCommonTrigrams()
	list, err := c.load(ctx, db, company)
	require.NoError(t, err)
	// Every key has contacts at each domain: their trigrams; `ov ` is in
	// half the keys and no name's trigram is in nine of ten.
	for _, tg := range []string{"mai", "ail", " co", "com", "  m", " ma", "exa", "  y"} {
		require.Contains(t, list, tg)
	}
	require.NotContains(t, list, "ov ")
	require.NotContains(t, list, "  i")
	none, err := c.load(ctx, db, small)
	require.NoError(t, err)
	require.Empty(t, none, "a company of 25 keys")

	rng := rand.New(rand.NewPCG(45, 1))
	var with, without, extra int64
	for range 60 {
		q := withTypo(rng, strings.ToLower(names[rng.IntN(len(names))]))
		rowsWith, keysWith, keptWith := keyTrigramRows(t, ctx, db, company, q, list)
		rowsWithout, keysWithout, keptWithout := keyTrigramRows(t, ctx, db, company, q, []string{})
		// More candidates (keys without a trigram assumed), never fewer;
		// the shape test leaves the same.
		for _, k := range keysWithout {
			require.Contains(t, keysWith, k, q)
		}
		require.Equal(t, keptWithout, keptWith, q)
		with, without = with+rowsWith, without+rowsWithout
		extra += int64(len(keysWith) - len(keysWithout))
	}
	require.Less(t, with*2, without, "rows of contact_key_trigrams read with the common trigrams against without")
	t.Logf("60 typos: %d rows of contact_key_trigrams read with the company's %d common trigrams, %d without; %d more candidates, none kept by the shape test",
		with, len(list), without, extra)
}

// TestCommonTrigramsAskWhenDue: a company's list is asked for on its first
// search and again when due, not while asked; a failed load keeps the old
// list and is retried sooner; a full queue leaves the asking to a later
// search; the companies remembered are bounded.
func TestCommonTrigramsAskWhenDue(t *testing.T) {
	now := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	c := newCommonTrigrams()
	c.now = func() time.Time { return now }
	asked := func() []int64 { return drainAsked(c.wanted) }
	require.Nil(t, c.get(1))
	require.Nil(t, c.get(1))
	require.Equal(t, []int64{1}, asked(), "asked once while loading")
	c.set(1, []string{"mai"}, nil)
	require.Equal(t, []string{"mai"}, c.get(1))
	now = now.Add(commonTTL - time.Second)
	require.Equal(t, []string{"mai"}, c.get(1))
	require.Empty(t, asked(), "not due yet")
	now = now.Add(time.Second)
	require.Equal(t, []string{"mai"}, c.get(1), "the old list while the new one loads")
	require.Equal(t, []int64{1}, asked())
	c.set(1, nil, fmt.Errorf("connection refused"))
	require.Equal(t, []string{"mai"}, c.get(1), "a failed load keeps the list")
	require.Empty(t, asked())
	now = now.Add(commonRetry)
	c.get(1)
	require.Equal(t, []int64{1}, asked(), "retried after commonRetry")
	c.set(1, []string{"ail"}, nil)
	require.Equal(t, []string{"ail"}, c.get(1))

	// A full queue: not asked, so asked by the next search after room.
	for i := range cap(c.wanted) {
		c.get(int64(100 + i))
	}
	require.Nil(t, c.get(99))
	require.Len(t, asked(), cap(c.wanted))
	c.get(99)
	require.Equal(t, []int64{99}, asked())

	// Bounded: the list due first of those not loading goes.
	for company := range c.lists {
		if company != 1 {
			c.set(company, nil, nil)
		}
	}
	for i := int64(0); len(c.lists) < commonCompanies; i++ {
		c.set(1000+i, nil, nil)
	}
	now = now.Add(time.Hour)
	c.set(1, []string{"ail"}, nil) // due last
	require.Nil(t, c.get(5000))
	require.Len(t, c.lists, commonCompanies)
	require.Contains(t, c.lists, int64(1))
	require.Contains(t, c.lists, int64(5000))
}

// TestLoadCommonTrigramsServesSearches: the background loader answers what
// searches ask for, and ends with its context.
func TestLoadCommonTrigramsServesSearches(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	const company = int64(6)
	commonContacts(t, ctx, db, company, []string{"Ivan", "Maria", "Elena", "Pavel", "Olga", "Anna", "Yulia", "Roman", "Sergey", "Emily", "Maxim", "Dmitry", "Tatiana", "Oleg", "Igor"},
		[]string{"Novikov", "Popov", "Orlov", "Smith", "Volkov", "Pavlov", "Lebedev", "Sokolov", "Wilson", "Fedorov", "Semenov", "Morozov", "Jones", "Makarov", "Titov"}, 3000, 6)
	r := New(db)
	want, err := r.common.load(ctx, db, company)
	require.NoError(t, err)
	require.NotEmpty(t, want)
	loop, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.LoadCommonTrigrams(loop, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	require.Nil(t, r.common.get(company))
	require.Eventually(t, func() bool { return slices.Equal(want, r.common.get(company)) }, 30*time.Second, 5*time.Millisecond)
	// A search with the list answers as the old statement does.
	got, total, err := r.ListContacts(ctx, company, domain.Filter{Search: "marxa popov", Limit: 100})
	require.NoError(t, err)
	var wantIDs []int64
	var wantTotal int64
	require.NoError(t, pgxTx(ctx, db, func(tx pgx.Tx) {
		wantIDs, wantTotal = legacyList(t, ctx, tx, company, domain.Filter{Search: "marxa popov", Limit: 100})
	}))
	require.Positive(t, wantTotal)
	require.Equal(t, wantTotal, total)
	require.Len(t, got, len(wantIDs))
	for i, c := range got {
		require.Equal(t, wantIDs[i], c.ID)
	}
	stop()
	require.NoError(t, <-done)
}

// drainAsked takes every company a loader's queue holds (commonTrigrams,
// keyIndexes), in the order they were asked for.
func drainAsked(wanted chan int64) []int64 {
	var out []int64
	for {
		select {
		case company := <-wanted:
			out = append(out, company)
		default:
			return out
		}
	}
}
