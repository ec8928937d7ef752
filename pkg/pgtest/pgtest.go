// Package pgtest gives each test its own migrated PostgreSQL database on the
// real server `make test` starts.
//
// Migrating a database per test is slow, and sharing one database makes
// tests depend on each other. So pgtest migrates one template database per
// distinct set of migrations, once, and gives every test a copy of it
// (CREATE DATABASE ... TEMPLATE, a file-level copy taking a few
// milliseconds), dropped when the test ends. Tests can then run in parallel
// with t.Parallel and never see each other's rows.
//
// `go test ./...` runs each package's test binary in its own process, so
// the template may be wanted by several processes at the same moment: an
// advisory lock on the server makes exactly one of them build it, and the
// template only gets its final name once fully migrated, so a crashed
// build never leaves a half-migrated template behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard.dev/pkg/postgres"
)

// EnvDSN names the variable holding a superuser DSN (to the `postgres`
// database) of the test server. deploy/local/test.sh sets it.
const EnvDSN = "SWITCHBOARD_TEST_PG_DSN"

// setupTimeout bounds creating the test database, template included (a
// build by another process may hold the lock meanwhile).
const setupTimeout = 2 * time.Minute

// New returns a pool on a fresh database migrated with migrations (the
// service's embedded NNNN_name.sql files; nil for an empty database). The
// pool is closed and the database dropped when the test ends.
func New(t testing.TB, migrations fs.FS) *pgxpool.Pool {
	t.Helper()
	dsn := NewDSN(t, migrations)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Cleanups run last-in first-out: the pool closes before the drop
	// registered by NewDSN.
	t.Cleanup(pool.Close)
	return pool
}

// NewDSN is New for code that opens the database itself (a service's run
// function, database/sql): it returns the DSN of the test's own database.
func NewDSN(t testing.TB, migrations fs.FS) string {
	t.Helper()
	admin := os.Getenv(EnvDSN)
	if admin == "" {
		t.Fatalf("pgtest: %s is not set. Integration tests need the PostgreSQL server that "+
			"`make test` starts: run `make test`, or start one with "+
			"`deploy/local/infra.sh start DIR PGPORT REDISPORT` and export %s=<its PG_DSN>", EnvDSN, EnvDSN)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()

	tmpl, err := ensureTemplate(ctx, admin, migrations)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	name := "test_" + randomHex(8)
	if err := createFrom(ctx, admin, name, tmpl); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabase(ctx, admin, name); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	dsn, err := postgres.DSNWithDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// templates remembers, per process, which templates are known to exist, so
// only the first test of a binary pays for the server round trips. Its
// entries hold a mutex of their own: tests waiting for one template do not
// block tests needing another.
var templates sync.Map // template name -> *templateState

type templateState struct {
	mu   sync.Mutex
	done bool
}

// ensureTemplate returns the name of the template database for migrations,
// building it if no process has yet.
func ensureTemplate(ctx context.Context, admin string, migrations fs.FS) (string, error) {
	name, key, err := templateName(migrations)
	if err != nil {
		return "", err
	}
	v, _ := templates.LoadOrStore(name, &templateState{})
	st := v.(*templateState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return name, nil
	}
	if err := buildTemplate(ctx, admin, name, key, migrations); err != nil {
		return "", err // not remembered: the next test tries again
	}
	st.done = true
	return name, nil
}

// templateName derives the template's name from the migration files'
// names and contents: a changed migration gets a new template, and a
// long-lived server never serves a stale one. key is the advisory lock id
// for building it.
func templateName(migrations fs.FS) (name string, key int64, err error) {
	h := sha256.New()
	h.Write([]byte("pgtest-v1\x00")) // bump when the template layout changes
	if migrations != nil {
		files, err := fs.Glob(migrations, "*.sql")
		if err != nil {
			return "", 0, fmt.Errorf("list migrations: %w", err)
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := fs.ReadFile(migrations, f)
			if err != nil {
				return "", 0, fmt.Errorf("read migration: %w", err)
			}
			fmt.Fprintf(h, "%s\x00%d\x00", path.Base(f), len(b))
			h.Write(b)
		}
	}
	sum := h.Sum(nil)
	return "tmpl_" + hex.EncodeToString(sum[:10]), int64(binary.BigEndian.Uint64(sum[10:18])), nil
}

// buildTemplate makes template database name exist, coordinating with every
// other process through an advisory lock on the admin connection. The lock
// is session-level and lives in the admin database, so it is released when
// this connection closes, even if the process dies mid-build.
func buildTemplate(ctx context.Context, admin, name string, key int64, migrations fs.FS) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	// Closing the connection releases the lock too; unlocking first just
	// lets waiters go a little earlier.
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key) //nolint:errcheck

	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if exists {
		return nil
	}

	// Build under a scratch name and rename at the end: the final name
	// appears only once the template is complete. A scratch database left by
	// a build that crashed is ours to drop, as we hold the lock.
	build := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(build)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop stale %s: %w", build, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(build)+" TEMPLATE template0"); err != nil {
		return fmt.Errorf("create %s: %w", build, err)
	}
	if migrations != nil {
		if files, _ := fs.Glob(migrations, "*.sql"); len(files) > 0 {
			dsn, err := postgres.DSNWithDatabase(admin, build)
			if err != nil {
				return err
			}
			if err := postgres.Migrate(ctx, dsn, migrations); err != nil {
				return err
			}
		}
	}
	// No connections to a template: CREATE DATABASE refuses to copy a
	// database others are connected to, so a stray connection (psql, a
	// test that opened the template by mistake) would fail every test.
	// RENAME waits up to 5 s for the migration's backend to exit.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(build)+" RENAME TO "+ident(name)); err != nil {
		return fmt.Errorf("rename %s: %w", build, err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("mark %s as template: %w", name, err)
	}
	return nil
}

// createFrom copies template tmpl into a new database name.
func createFrom(ctx context.Context, admin, name, tmpl string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(tmpl)); err != nil {
		return fmt.Errorf("create %s from %s: %w", name, tmpl, err)
	}
	return nil
}

// dropDatabase drops name even if the test left connections open (FORCE,
// PostgreSQL 13+), so a leaked pool cannot keep test databases around.
func dropDatabase(ctx context.Context, admin, name string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	return err
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
