// Package sandbox is the test-mode provider side of every connection type:
// a faithful emulator of the messengers' logins and the providers'
// credential checks, driven by /sandbox/v1. It keeps what it saw (accounts,
// codes) so tests can read it back.
//
// Files: verify.go (credential checks on create) belongs to the
// connections core; messenger.go (accounts, QR links, codes) to logins.
package sandbox

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Sandbox implements app.Verifier and app.Messenger.
type Sandbox struct {
	db  *pgxpool.Pool
	rdb *redis.Client
}

// New makes the emulator on the service's database and Redis.
func New(db *pgxpool.Pool, rdb *redis.Client) *Sandbox { return &Sandbox{db: db, rdb: rdb} }
