// Package app holds the connections service's use cases: connections, their
// statuses and limits (connections.go, limits.go, subscriptions.go), and the
// messenger logins (login.go, whatsapp.go, waba.go, sandbox.go). It speaks
// domain types and answers API errors from the catalogue; storage,
// transport and the messenger side stay behind the interfaces below.
package app

import (
	"time"
)

// Config is the behaviour that deployments tune.
type Config struct {
	// A login session lives this long from its last init or login call.
	SessionTTL time.Duration
	// Lifetime of a Telegram/MAX login QR; a login call after it returns a
	// fresh one.
	QRLifetime time.Duration
	// Lifetime of a WhatsApp QR and of a WhatsApp pairing code.
	WhatsappQRLifetime   time.Duration
	WhatsappCodeLifetime time.Duration
	// Region assumed for phones written without a country code.
	DefaultRegion string
	// Lets outbound fetches (the WABA profile picture) reach private and
	// loopback addresses: local development and tests only.
	AllowPrivateTargets bool
}

// DefaultConfig is what main starts from.
func DefaultConfig() Config {
	return Config{
		SessionTTL:           time.Hour,
		QRLifetime:           30 * time.Second,
		WhatsappQRLifetime:   60 * time.Second,
		WhatsappCodeLifetime: 3 * time.Minute,
		DefaultRegion:        "RU",
	}
}

// Service is the use cases.
type Service struct {
	repo      Repository     // connections, statuses, outbox (repository.go)
	billing   Billing        // subscriptions in the billing service (billing.go)
	verifier  Verifier       // credential checks of the provider side (provider.go)
	logins    LoginStore     // login sessions and pending WhatsApp logins (login_store.go)
	messenger Messenger      // the messenger side of logins (messenger.go)
	pictures  PictureFetcher // WABA profile picture checks (waba.go)
	companies Companies      // which companies exist (companies.go)
	integs    Integrations   // v1 webhook integrations bound to connections (integrations.go)
	cfg       Config
	now       func() time.Time
}

// Deps are the parts New wires together.
type Deps struct {
	Repo      Repository
	Billing   Billing
	Verifier  Verifier
	Logins    LoginStore
	Messenger Messenger
	Pictures  PictureFetcher
	Companies Companies
	// Integrations may be nil: every connection is then in none.
	Integrations Integrations
	Config       Config
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New wires the use cases.
func New(d Deps) *Service {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	return &Service{
		repo: d.Repo, billing: d.Billing, verifier: d.Verifier,
		logins: d.Logins, messenger: d.Messenger, pictures: d.Pictures, companies: d.Companies,
		integs: d.Integrations, cfg: d.Config, now: now,
	}
}
