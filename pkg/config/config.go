// Package config reads the settings every service shares from environment
// variables. Each setting names its variable and default right here, which
// is also the documentation (README "Configuration").
package config

import (
	"fmt"
	"time"

	"github.com/caarlos0/env/v11"
)

// Service is what every gRPC service reads.
type Service struct {
	// Address the gRPC server listens on; each service sets its own default
	// before Load (identity 127.0.0.1:9101, ...).
	GRPCAddr string `env:"SWITCHBOARD_GRPC_ADDR"`
	// PostgreSQL DSN of the service's own database.
	DatabaseURL string `env:"SWITCHBOARD_DATABASE_URL"`
	// Redis address (host:port).
	RedisAddr string `env:"SWITCHBOARD_REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	// Where the identity service listens, for key lookups.
	IdentityAddr string `env:"SWITCHBOARD_IDENTITY_ADDR" envDefault:"127.0.0.1:9101"`
	// Shared secret of service-to-service calls.
	InternalToken string `env:"SWITCHBOARD_INTERNAL_TOKEN,required"`
	// Operator API token; empty closes the operator API.
	AdminToken string `env:"SWITCHBOARD_ADMIN_TOKEN"`
	// Test mode: the sandbox adapters and /sandbox/v1. Off in production.
	Sandbox bool `env:"SWITCHBOARD_SANDBOX" envDefault:"false"`
	// debug, info, warn or error.
	LogLevel string `env:"SWITCHBOARD_LOG_LEVEL" envDefault:"info"`
	// How long a key's principal is cached (a key reset revokes at once).
	AuthCacheTTL time.Duration `env:"SWITCHBOARD_AUTH_CACHE_TTL" envDefault:"30s"`
	// General request rate per API key: requests per second and burst; 0
	// turns the limit off.
	KeyRate  int `env:"SWITCHBOARD_KEY_RATE" envDefault:"100"`
	KeyBurst int `env:"SWITCHBOARD_KEY_BURST" envDefault:"200"`
	// Grace period for in-flight calls on SIGTERM.
	ShutdownTimeout time.Duration `env:"SWITCHBOARD_SHUTDOWN_TIMEOUT" envDefault:"20s"`
}

// Load fills cfg (a struct with env tags, possibly embedding Service) from
// the environment; fields already set act as defaults when no tag default
// exists.
func Load(cfg any, environ map[string]string) error {
	if err := env.ParseWithOptions(cfg, env.Options{Environment: environ}); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}
