// Package postgres holds what every service does with its own PostgreSQL
// database: open a pool, run its embedded migrations on start, run a
// function in a transaction, and (for `make run` and tests) create the
// database itself.
//
// Every service owns one database and reaches it through one DSN, so the
// whole configuration surface is that DSN plus a pool size.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the database part of a service's configuration. Services embed
// it in their own config struct and fill it with caarlos0/env (use envPrefix
// on the embedding field when one process needs several databases).
type Config struct {
	// DSN is a libpq connection string, URL (postgres://...) or
	// keyword/value form. pgxpool's pool_* parameters are honoured.
	DSN string `env:"DATABASE_URL,required"`
	// MaxConns caps the pool. Zero keeps pgxpool's default
	// (max(4, GOMAXPROCS)) or the DSN's pool_max_conns. Replicas multiply
	// it, so keep it well below the server's max_connections.
	MaxConns int32 `env:"DATABASE_MAX_CONNS"`
}

// Open opens the pool described by c. See [Open].
func (c Config) Open(ctx context.Context) (*pgxpool.Pool, error) {
	return open(ctx, c.DSN, c.MaxConns, nil)
}

// defaultConnectTimeout bounds one connection attempt when the DSN sets no
// connect_timeout: without it a dial to an unreachable host waits for the
// kernel's TCP timeout, minutes long, and a starting pod looks hung instead
// of failing its probe.
const defaultConnectTimeout = 5 * time.Second

// Open connects a pool to dsn and pings it, so a wrong DSN or a missing
// database fails at start, not at the first request.
//
// Settings: pgxpool's defaults (pool size max(4, GOMAXPROCS), connections
// recycled after an hour, idle ones closed after 30 minutes) suit a service
// well; Open adds a connect timeout when the DSN has none and sets
// application_name to the binary's name, so pg_stat_activity shows which
// service holds which connection; each connection encodes a Go string
// bound to a uuid parameter in binary (uuid.go).
func Open(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	return open(ctx, dsn, 0, nil)
}

// Warm readies a new connection before its first use: a service's
// statements prepared and their plans made, say.
type Warm func(ctx context.Context, c *pgx.Conn) error

// OpenWarm is Open with warm run on every new connection before the pool
// hands it out, and every connection of the pool opened ahead of need
// (MinConns = MaxConns): pgxpool then opens and replaces connections (it
// retires each after an hour) from its background health check, so no
// request waits for a connection being opened and warmed, nor runs on a
// cold one. A warm that fails fails the connection, and so the start. A
// nil warm is Open.
func OpenWarm(ctx context.Context, dsn string, warm Warm) (*pgxpool.Pool, error) {
	return open(ctx, dsn, 0, warm)
}

func open(ctx context.Context, dsn string, maxConns int32, warm Warm) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = filepath.Base(os.Args[0])
	}
	cfg.AfterConnect = afterConnect
	if warm != nil {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			if err := afterConnect(ctx, c); err != nil {
				return err
			}
			return warm(ctx, c)
		}
		cfg.MinConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping %s: %w", describe(cfg.ConnConfig), err)
	}
	return pool, nil
}

// describe names a server and database for error messages, without the
// password a DSN may carry.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// TxBeginner is what WithTx needs: *pgxpool.Pool, *pgx.Conn, and pgx.Tx
// (where Begin makes a savepoint, so WithTx nests) all have it.
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// rollbackTimeout bounds the rollback WithTx runs on a context that may
// already be cancelled: the rollback must still reach the server, or the
// connection goes back to the pool mid-transaction (pgx then closes it).
const rollbackTimeout = 5 * time.Second

// WithTx runs fn in a transaction: it commits when fn returns nil and rolls
// back when fn returns an error or panics. It is the one place that deals
// with a failed rollback, so callers only ever see fn's error (joined with
// the rollback's, if that failed too, so errors.Is on fn's error still
// works).
//
// fn must use the pgx.Tx it gets, not the pool, for every statement that
// belongs to the transaction. Writes and their outbox events go in one fn.
func WithTx(ctx context.Context, db TxBeginner, fn func(pgx.Tx) error) (err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	rollback := func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if err := tx.Rollback(rctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			return fmt.Errorf("postgres: rollback: %w", err)
		}
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			_ = rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		if rbErr := rollback(); rbErr != nil {
			return errors.Join(err, rbErr)
		}
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

// EnsureDatabase creates database name on the server adminDSN points to,
// unless it exists. adminDSN must be allowed to create databases (the
// `postgres` superuser of the local servers). It is safe to call from
// several processes at once: losing the race to create counts as success.
//
// `make run` and the test helpers use it; in Kubernetes the platform team
// creates databases, and services only migrate them.
func EnsureDatabase(ctx context.Context, adminDSN, name string) error {
	if name == "" {
		return errors.New("postgres: empty database name")
	}
	conn, err := connect(ctx, adminDSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: look up database %q: %w", name, err)
	}
	if exists {
		return nil
	}
	// CREATE DATABASE takes no parameters: the name goes in as a quoted
	// identifier, never as raw text.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil && !IsDuplicateDatabase(err) {
		return fmt.Errorf("postgres: create database %q: %w", name, err)
	}
	return nil
}

// IsDuplicateDatabase reports whether err is PostgreSQL refusing to create a
// database that exists, including the unique-index error two concurrent
// CREATE DATABASE of one name can end with.
func IsDuplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	// 42P04 duplicate_database; 23505 unique_violation on pg_database's
	// name index when the other creator commits while we run.
	return pgErr.Code == "42P04" || pgErr.Code == "23505"
}

// connConfig is the DSN as one plain connection's configuration, with the
// same connect timeout as Open. It is parsed as a pool's DSN, so the pool_*
// parameters Open honours are taken off rather than sent to the server as
// settings (which it refuses).
func connConfig(dsn string) (*pgx.ConnConfig, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DSN: %w", err)
	}
	cfg := pc.ConnConfig
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	return cfg, nil
}

// connect opens one plain connection, with the same connect timeout as Open.
func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := connConfig(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect %s: %w", describe(cfg), err)
	}
	return conn, nil
}

// DSNWithDatabase returns dsn pointing at database name instead, keeping
// every other setting. It understands both DSN forms: URL
// (postgres://user@host/db?...) and keyword/value (host=... dbname=...).
// `make run` and the test helpers derive each service's DSN from one
// admin DSN with it.
func DSNWithDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("postgres: parse DSN: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// Keyword/value: a later keyword overrides an earlier one.
	quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name)
	return strings.TrimSpace(dsn + " dbname='" + quoted + "'"), nil
}
