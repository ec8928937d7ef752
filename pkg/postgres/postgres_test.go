package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	env "github.com/caarlos0/env/v11"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
)

var migrations = fstest.MapFS{
	"0001_items.sql": {Data: []byte(`-- +goose Up
CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);
-- +goose Down
DROP TABLE items;
`)},
	"0002_counter.sql": {Data: []byte(`-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION item_count() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM items; $$;
-- +goose StatementEnd
-- a migration that must run exactly once: a second run would fail on the key
CREATE TABLE runs (n int PRIMARY KEY);
INSERT INTO runs VALUES (1);
`)},
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u@h/db")
	t.Setenv("DATABASE_MAX_CONNS", "7")
	cfg, err := env.ParseAs[postgres.Config]()
	require.NoError(t, err)
	assert.Equal(t, postgres.Config{DSN: "postgres://u@h/db", MaxConns: 7}, cfg)

	os.Unsetenv("DATABASE_URL")
	_, err = env.ParseAs[postgres.Config]()
	assert.Error(t, err, "DATABASE_URL is required")
}

func TestDSNWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/identity?sslmode=disable"},
		{"postgresql://u:p%40ss@h/", "postgresql://u:p%40ss@h/identity"},
		{"host=127.0.0.1 port=5432 user=postgres dbname=postgres", "host=127.0.0.1 port=5432 user=postgres dbname=postgres dbname='identity'"},
	} {
		got, err := postgres.DSNWithDatabase(tc.in, "identity")
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
		cfg, err := pgx.ParseConfig(got)
		require.NoError(t, err)
		assert.Equal(t, "identity", cfg.Database)
	}
}

func TestOpenFailsFast(t *testing.T) {
	start := time.Now()
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	_, err := postgres.Open(ctx(t), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.NotContains(t, err.Error(), "secret")
}

func TestMigrateAndWithTx(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, migrations)
	c := ctx(t)

	var n int64
	require.NoError(t, pool.QueryRow(c, `SELECT item_count()`).Scan(&n))
	assert.Zero(t, n)

	t.Run("commit", func(t *testing.T) {
		err := postgres.WithTx(c, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(c, `INSERT INTO items VALUES (1, 'a')`)
			return err
		})
		require.NoError(t, err)
		require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM items WHERE id = 1`).Scan(&n))
		assert.EqualValues(t, 1, n)
	})
	t.Run("error rolls back and is returned as is", func(t *testing.T) {
		boom := errors.New("boom")
		err := postgres.WithTx(c, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(c, `INSERT INTO items VALUES (2, 'b')`); err != nil {
				return err
			}
			return boom
		})
		assert.Same(t, boom, err)
		require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM items WHERE id = 2`).Scan(&n))
		assert.Zero(t, n)
	})
	t.Run("panic rolls back and propagates", func(t *testing.T) {
		assert.PanicsWithValue(t, "kaboom", func() {
			_ = postgres.WithTx(c, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(c, `INSERT INTO items VALUES (3, 'c')`); err != nil {
					return err
				}
				panic("kaboom")
			})
		})
		require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM items WHERE id = 3`).Scan(&n))
		assert.Zero(t, n)
		// The pool is healthy afterwards: no connection was left mid-transaction.
		require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM items`).Scan(&n))
		assert.EqualValues(t, 1, n)
	})
	t.Run("failed statement aborts, the SQL error comes back", func(t *testing.T) {
		err := postgres.WithTx(c, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(c, `INSERT INTO items VALUES (1, 'dup')`)
			return err
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "23505")
	})
	t.Run("cancelled context still rolls back", func(t *testing.T) {
		cc, cancel := context.WithCancel(c)
		err := postgres.WithTx(cc, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(cc, `INSERT INTO items VALUES (4, 'd')`); err != nil {
				return err
			}
			cancel()
			return cc.Err()
		})
		assert.ErrorIs(t, err, context.Canceled)
		require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM items WHERE id = 4`).Scan(&n))
		assert.Zero(t, n)
	})
	t.Run("nested WithTx is a savepoint", func(t *testing.T) {
		err := postgres.WithTx(c, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(c, `INSERT INTO items VALUES (5, 'e')`); err != nil {
				return err
			}
			inner := postgres.WithTx(c, tx, func(tx pgx.Tx) error {
				_, _ = tx.Exec(c, `INSERT INTO items VALUES (6, 'f')`)
				return errors.New("inner fails")
			})
			assert.Error(t, inner)
			return nil
		})
		require.NoError(t, err)
		var ids []int64
		rows, _ := pool.Query(c, `SELECT id FROM items WHERE id IN (5, 6) ORDER BY id`)
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		assert.Equal(t, []int64{5}, ids)
	})
}

// Several replicas starting at once: each runs Migrate, every migration runs
// once (0002 would fail on its primary key if run twice).
func TestMigrateConcurrentReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDSN(t, nil) // an empty database
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = postgres.Migrate(c, dsn, migrations)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}
	pool, err := postgres.Open(c, dsn)
	require.NoError(t, err)
	defer pool.Close()
	var runs, versions int
	require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM runs`).Scan(&runs))
	require.NoError(t, pool.QueryRow(c, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&versions))
	assert.Equal(t, 1, runs)
	assert.Equal(t, 2, versions)

	// And again later: nothing to do.
	require.NoError(t, postgres.Migrate(c, dsn, migrations))
}

func TestMigrateErrors(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDSN(t, nil)
	c := ctx(t)
	err := postgres.Migrate(c, dsn, fstest.MapFS{})
	assert.ErrorContains(t, err, "no NNNN_name.sql")

	err = postgres.Migrate(c, dsn, fstest.MapFS{"0001_bad.sql": {Data: []byte("CREATE TABLE x (id int);")}})
	assert.ErrorContains(t, err, "+goose Up")

	err = postgres.Migrate(c, dsn, fstest.MapFS{"0001_bad.sql": {Data: []byte("-- +goose Up\nCREATE TABLE x (id nosuchtype);")}})
	assert.ErrorContains(t, err, "nosuchtype")
}

func TestEnsureDatabase(t *testing.T) {
	t.Parallel()
	admin := os.Getenv(pgtest.EnvDSN)
	if admin == "" {
		t.Fatalf("%s is not set: run `make test`", pgtest.EnvDSN)
	}
	c := ctx(t)
	// A name needing quotes, to prove it goes in as an identifier.
	name := fmt.Sprintf(`ensure "db" %d`, time.Now().UnixNano())
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), admin)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			conn.Close(context.Background())
		}
	})

	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = postgres.EnsureDatabase(c, admin, name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, postgres.EnsureDatabase(c, admin, name))

	dsn, err := postgres.DSNWithDatabase(admin, name)
	require.NoError(t, err)
	pool, err := postgres.Config{DSN: dsn, MaxConns: 2}.Open(c)
	require.NoError(t, err)
	defer pool.Close()
	var got string
	require.NoError(t, pool.QueryRow(c, `SELECT current_database()`).Scan(&got))
	assert.Equal(t, name, got)
	assert.EqualValues(t, 2, pool.Config().MaxConns)

	assert.Error(t, postgres.EnsureDatabase(c, admin, ""))
}

// TestPoolParametersInDSN: the pool_* parameters Open honours are not sent
// to the server by the plain connections of Migrate (the server refuses
// unknown settings, which stopped a service at start).
func TestPoolParametersInDSN(t *testing.T) {
	t.Parallel()
	dsn := withParameter(pgtest.NewDSN(t, nil), "pool_max_conns=7")
	c := ctx(t)
	require.NoError(t, postgres.Migrate(c, dsn, migrations))
	pool, err := postgres.Open(c, dsn)
	require.NoError(t, err)
	defer pool.Close()
	assert.EqualValues(t, 7, pool.Config().MaxConns)
}

// TestOpenWarm: warm runs on every connection before the pool hands it
// out (a connection taken at once already holds what warm left: a prepared
// statement), every connection is opened ahead of need, the uuid codec is
// still registered, and a warm that fails fails the start.
func TestOpenWarm(t *testing.T) {
	t.Parallel()
	dsn := withParameter(pgtest.NewDSN(t, nil), "pool_max_conns=3")
	c := ctx(t)
	var warmed atomic.Int32
	pool, err := postgres.OpenWarm(c, dsn, func(ctx context.Context, conn *pgx.Conn) error {
		warmed.Add(1)
		_, err := conn.Prepare(ctx, "warm", "SELECT 1")
		return err
	})
	require.NoError(t, err)
	defer pool.Close()
	assert.EqualValues(t, 3, pool.Config().MinConns, "every connection opened ahead of need")
	require.Eventually(t, func() bool { return pool.Stat().TotalConns() == 3 }, 10*time.Second, 10*time.Millisecond)
	conns := make([]*pgxpool.Conn, 3)
	for i := range conns {
		conns[i], err = pool.Acquire(c)
		require.NoError(t, err)
		var prepared bool
		require.NoError(t, conns[i].QueryRow(c, `SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'warm')`).Scan(&prepared))
		assert.True(t, prepared, "connection %d warmed before its first use", i)
		uuid, ok := conns[i].Conn().TypeMap().TypeForOID(pgtype.UUIDOID)
		require.True(t, ok)
		_, pgxs := uuid.Codec.(pgtype.UUIDCodec)
		assert.False(t, pgxs, "the uuid codec is the pool's own")
	}
	for _, conn := range conns {
		conn.Release()
	}
	assert.GreaterOrEqual(t, warmed.Load(), int32(3))

	_, err = postgres.OpenWarm(c, dsn, func(context.Context, *pgx.Conn) error { return errors.New("cold") })
	require.ErrorContains(t, err, "cold")
}

// withParameter adds a key=value parameter to a DSN of either form.
func withParameter(dsn, kv string) string {
	switch {
	case strings.Contains(dsn, "://") && strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	case strings.Contains(dsn, "://"):
		return dsn + "?" + kv
	default:
		return dsn + " " + kv
	}
}
