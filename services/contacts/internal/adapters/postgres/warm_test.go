package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// preparedState is what a connection's server process keeps of its
// prepared statements: each statement's text with its custom and generic
// plan counts.
func preparedState(t *testing.T, ctx context.Context, q querier) map[string][2]int64 {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT statement, custom_plans, generic_plans FROM pg_prepared_statements`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var s string
		var custom, generic int64
		require.NoError(t, rows.Scan(&s, &custom, &generic))
		out[s] = [2]int64{custom, generic}
	}
	require.NoError(t, rows.Err())
	return out
}

// TestPoolConnectionsWarm: every connection of the service's pool (Warm
// given to postgres.OpenWarm, as the service template does) is open
// before any request and has prepared, before its first request, every
// statement a list of any kind runs, with the generic plans those that
// use one keep: requests of every path and order (a typo searched by its
// name keys with keys to test and without, a part of a name with many
// keys, phone digits, a short pattern, a plain list and the exact phone,
// each past its last match too; the key searches with the keys read from
// the database and counted in memory) prepare no statement and make no generic
// plan the warm-up had not. Without warm the connections hold nothing
// and the test fails on its first statement; so it does with a warm-up
// missing one path (the custom-plan search statement, say).
func TestPoolConnectionsWarm(t *testing.T) {
	ctx := context.Background()
	shared := pgtest.New(t, migrations.FS)
	const company = int64(21)
	for i, name := range []string{"Ivan Smirnov", "Ivan Petrov", "Anna Smirnova", "Pavel Popov", "Маша Попова"} {
		for j := range 12 {
			_, err := shared.Exec(ctx, `INSERT INTO contacts (company_id, name, search) VALUES ($1, $2, $3)`, company,
				fmt.Sprintf("%s %c", name, 'a'+j), domain.SearchText(fmt.Sprintf("%s %c", name, 'a'+j), []domain.Phone{{Phone: fmt.Sprintf("+7916%03d%04d", i, j)}},
					[]domain.Email{{Email: fmt.Sprintf("c%d.%d@mail.ru", i, j)}}))
			require.NoError(t, err)
		}
	}
	db, err := postgres.OpenWarm(ctx, shared.Config().ConnString(), Warm)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.Equal(t, db.Config().MaxConns, db.Config().MinConns, "every connection opened ahead of need")

	conn, err := db.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	warmed := preparedState(t, ctx, conn)
	require.NotEmpty(t, warmed, "the connection was warmed when opened")
	generic := 0
	for _, p := range warmed {
		if p[1] > 0 {
			generic++
		}
	}
	require.Positive(t, generic, "generic plans made when the connection opened")

	var check trigramCheck // as CheckTrigrams leaves it on the test servers
	check.known.Store(true)
	check.same.Store(true)
	// And with the company's keys in memory (keysInMemory), brought up to
	// date by the searches after a write.
	memory := newKeyIndexes(keyIndexBudget)
	ix, err := loadKeyIndex(ctx, shared, company, keyIndexBudget, 0)
	require.NoError(t, err)
	memory.set(company, ix, 0)
	_, err = shared.Exec(ctx, `INSERT INTO contacts (company_id, name, search) VALUES ($1, 'Ivan Smirnoff', 'ivan smirnoff')`, company)
	require.NoError(t, err)
	for o := range orderBy {
		for _, f := range []domain.Filter{
			{Search: "ivan smirxov"}, {Search: "ivan"}, {Search: "smirn"}, {Search: "pavex popov"}, {Search: "маша"},
			{Search: "916 000"}, {Search: "916 000", Tags: []int64{1}}, {Search: "ab"}, {}, {Phone: "+79160000001"},
			{Search: "ivan", Offset: 500}, {Search: "916 000", Offset: 500}, {Offset: 500},
		} {
			f.Order, f.Limit = o, 10
			for _, m := range []*keyIndexes{nil, memory} {
				_, _, err := listOn(ctx, conn, &check, nil, m, company, f)
				require.NoError(t, err, "%+v", f)
			}
		}
	}
	for s, p := range preparedState(t, ctx, conn) {
		w, ok := warmed[s]
		require.True(t, ok, "a request prepared a statement the warm-up had not:\n%s", s)
		require.False(t, w[1] == 0 && p[1] > 0, "a request made a generic plan the warm-up had not:\n%s", s)
	}
}
