package pgtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var migrations = fstest.MapFS{
	"0001_notes.sql": {Data: []byte("-- +goose Up\nCREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL);\n")},
}

func adminDSN(t *testing.T) string {
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		t.Fatalf("%s is not set: run `make test`", EnvDSN)
	}
	return dsn
}

// Two tests get different, migrated databases and never see each other's rows.
func TestIsolated(t *testing.T) {
	names := make(chan string, 2)
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := New(t, migrations)
			ctx := context.Background()
			var n int
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n))
			assert.Zero(t, n, "a fresh copy of the template")
			_, err := pool.Exec(ctx, `INSERT INTO notes (body) VALUES ($1)`, fmt.Sprint("from ", i))
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond) // let the other test write too
			require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n))
			assert.Equal(t, 1, n)
			var name string
			require.NoError(t, pool.QueryRow(ctx, `SELECT current_database()`).Scan(&name))
			assert.True(t, strings.HasPrefix(name, "test_"), name)
			names <- name
		})
	}
	// Subtests ran (t.Parallel subtests finish before Run returns in the
	// parent's cleanup phase, so check after a group).
	t.Cleanup(func() {
		close(names)
		a, b := <-names, <-names
		assert.NotEqual(t, a, b)
		// Both dropped by their cleanups.
		conn, err := pgx.Connect(context.Background(), adminDSN(t))
		require.NoError(t, err)
		defer conn.Close(context.Background())
		var left int
		require.NoError(t, conn.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_database WHERE datname IN ($1, $2)`, a, b).Scan(&left))
		assert.Zero(t, left)
	})
}

// Many goroutines (standing in for test processes: each uses its own
// connection and bypasses the per-process cache) want the same, new
// template at once: all succeed, it is built once and complete.
func TestTemplateConcurrent(t *testing.T) {
	admin := adminDSN(t)
	unique := fmt.Sprintf("-- +goose Up\nCREATE TABLE t (id int);\nINSERT INTO t VALUES (1); -- %d\n", time.Now().UnixNano())
	fsys := fstest.MapFS{"0001_t.sql": {Data: []byte(unique)}}
	name, key, err := templateName(fsys)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = buildTemplate(ctx, admin, name, key, fsys)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var isTemplate, allowConn bool
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1`, name).Scan(&isTemplate, &allowConn))
	assert.True(t, isTemplate)
	assert.False(t, allowConn)
	var scratch int
	require.NoError(t, conn.QueryRow(ctx,
		`SELECT count(*) FROM pg_database WHERE datname = $1`, name+"_build").Scan(&scratch))
	assert.Zero(t, scratch)

	// Copies from many goroutines at once, through the public API.
	var wg2 sync.WaitGroup
	for range 8 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			t.Run("copy", func(t *testing.T) {
				pool := New(t, fsys)
				var n int
				require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n))
				assert.Equal(t, 1, n, "the migration ran exactly once")
			})
		}()
	}
	wg2.Wait()
	dropTemplateLater(t, admin, name)
}

// A build that crashed left its scratch database behind: the next build
// replaces it.
func TestTemplateRecoversFromCrashedBuild(t *testing.T) {
	admin := adminDSN(t)
	fsys := fstest.MapFS{"0001_x.sql": {Data: []byte(fmt.Sprintf("-- +goose Up\nCREATE TABLE x (id int); -- %d\n", time.Now().UnixNano()))}}
	name, key, err := templateName(fsys)
	require.NoError(t, err)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+ident(name+"_build"))
	require.NoError(t, err)

	require.NoError(t, buildTemplate(ctx, admin, name, key, fsys))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n))
	assert.Equal(t, 1, n)
	dropTemplateLater(t, admin, name)
}

func TestTemplateNameFollowsContents(t *testing.T) {
	a, ka, err := templateName(migrations)
	require.NoError(t, err)
	b, kb, err := templateName(fstest.MapFS{"0001_notes.sql": {Data: []byte("-- +goose Up\nSELECT 1;\n")}})
	require.NoError(t, err)
	a2, _, err := templateName(migrations)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, ka, kb)
	assert.Equal(t, a, a2)
	assert.LessOrEqual(t, len(a+"_build"), 63, "PostgreSQL identifier limit")
}

// Without the variable a test fails (never skips) and says what to do.
func TestUnsetEnvFails(t *testing.T) {
	t.Setenv(EnvDSN, "")
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewDSN(ft, migrations)
	}()
	<-done
	assert.Contains(t, ft.msg, "make test")
}

type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// dropTemplateLater removes a template a test made for itself.
func dropTemplateLater(t *testing.T, admin, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, admin)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE false")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "DROP DATABASE "+ident(name))
		require.NoError(t, err)
	})
}
