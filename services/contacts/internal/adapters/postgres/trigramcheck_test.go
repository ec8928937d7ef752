package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/services/contacts/internal/domain"
	"switchboard.dev/services/contacts/migrations"
)

// A database whose character type is `C` makes other trigrams than the
// shape test (pg_trgm takes no Cyrillic letter for a letter there): the
// check says so, and the search tests the candidate key's contacts one by
// one instead of judging its shapes. The contact here matches `popox`
// through the `popov` of its email, a word of its own for PostgreSQL; the
// shape test, which reads `иванpopov` as one word, would drop its key and
// the search would find nothing.
func TestShapeTestOffWhereTrigramsDiffer(t *testing.T) {
	ctx := context.Background()
	admin := os.Getenv(pgtest.EnvDSN)
	require.NotEmpty(t, admin, "%s is not set: run `make test`", pgtest.EnvDSN)
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	name := fmt.Sprintf("test_ctype_c_%x", rand.Uint64())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+
		" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := conn.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		require.NoError(t, err)
		require.NoError(t, conn.Close(context.Background()))
	})
	dsn, err := postgres.DSNWithDatabase(admin, name)
	require.NoError(t, err)
	require.NoError(t, postgres.Migrate(ctx, dsn, migrations.FS))
	db, err := postgres.Open(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(db.Close)

	r := New(db)
	same, err := r.CheckTrigrams(ctx)
	require.NoError(t, err)
	require.False(t, same, "a C character type makes other trigrams of Cyrillic text")

	const company = int64(4)
	var id int64
	search := domain.SearchText("Anna Lee", nil, []domain.Email{{Email: "иванpopov@x.org"}})
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO contacts (company_id, name, search) VALUES ($1, 'Anna Lee', $2) RETURNING id`,
		company, search).Scan(&id))
	var sml float64
	require.NoError(t, db.QueryRow(ctx, `SELECT word_similarity('popox', $1)`, search).Scan(&sml))
	require.GreaterOrEqual(t, sml, 0.6, "PostgreSQL matches it")
	path, out, _ := searchKeyPath(t, ctx, db, company, "popox")
	require.Equal(t, "keys", path)
	require.EqualValues(t, 1, out, "judged by its shapes, its key would be left out")

	got, total, err := r.ListContacts(ctx, company, domain.Filter{Search: domain.SearchQuery("popox"), Limit: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, total)
	require.Len(t, got, 1)
	require.Equal(t, id, got[0].ID)
}

// The test servers' character type makes trigrams as the shape test does:
// the check says so, and the search judges shapes (TestSearchRecall).
func TestShapeTestOnWhereTrigramsAgree(t *testing.T) {
	r := New(pgtest.New(t, migrations.FS))
	same, err := r.CheckTrigrams(context.Background())
	require.NoError(t, err)
	require.True(t, same)
}
