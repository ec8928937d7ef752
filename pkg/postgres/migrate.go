package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrate brings the database at dsn up to the newest migration in
// migrations. Services call it on start, before serving.
//
// migrations holds NNNN_name.sql files at its root, each in goose's SQL
// format (a `-- +goose Up` line first; `-- +goose StatementBegin/End` around
// statements with semicolons inside, such as function bodies). Each service
// embeds its folder with a tiny package next to the files:
//
//	package migrations
//
//	import "embed"
//
//	//go:embed *.sql
//	var FS embed.FS
//
// (or passes fs.Sub of a larger embed.FS). Goose keeps the applied versions
// in the goose_db_version table and runs each file in its own transaction.
//
// Several replicas start at once in Kubernetes: a PostgreSQL session-level
// advisory lock, held for the whole run, makes them take turns, so the first
// migrates and the others find nothing left to do. The lock is per database,
// so services sharing a server do not wait for each other.
func Migrate(ctx context.Context, dsn string, migrations fs.FS) error {
	cfg, err := connConfig(dsn)
	if err != nil {
		return err
	}
	if err := checkAnnotations(migrations); err != nil {
		return err
	}
	// goose speaks database/sql; pgx's stdlib adapter gives it the same
	// driver (and DSN syntax) the services use.
	db := stdlib.OpenDB(*cfg)
	defer db.Close()

	// Poll for the lock every second (goose's default is 5 s, which would
	// make each waiting replica start 5 s late) for up to 10 minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
	if err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithSessionLocker(locker),
		// Only the SQL files given here; never Go migrations some imported
		// package registered globally.
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		if errors.Is(err, goose.ErrNoMigrations) {
			return fmt.Errorf("postgres: no NNNN_name.sql files at the root of the migrations FS: %w", err)
		}
		return fmt.Errorf("postgres: load migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrate %s: %w", describe(cfg), err)
	}
	return nil
}

// checkAnnotations catches the most common migration mistake, a file
// without its `-- +goose Up` line, with a message that says so; goose
// itself reports it as "unexpected state 0".
func checkAnnotations(migrations fs.FS) error {
	if migrations == nil {
		return nil
	}
	files, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return fmt.Errorf("postgres: list migrations: %w", err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(migrations, f)
		if err != nil {
			return fmt.Errorf("postgres: read migration: %w", err)
		}
		if !strings.Contains(strings.ToLower(string(b)), "+goose up") {
			return fmt.Errorf("postgres: migration %s lacks its '-- +goose Up' line: every file starts with it (see goose's SQL migration format)", f)
		}
	}
	return nil
}
