// Command connections serves connections, their statuses and limits, and
// the messenger logins.
package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/webhookspub"
	connectionsv1 "switchboard.dev/proto/switchboard/connections/v1"
	"switchboard.dev/services/connections/internal/adapters/billing"
	"switchboard.dev/services/connections/internal/adapters/identity"
	"switchboard.dev/services/connections/internal/adapters/logins"
	"switchboard.dev/services/connections/internal/adapters/picture"
	"switchboard.dev/services/connections/internal/adapters/postgres"
	"switchboard.dev/services/connections/internal/adapters/sandbox"
	"switchboard.dev/services/connections/internal/adapters/telegrambot"
	"switchboard.dev/services/connections/internal/adapters/unavailable"
	"switchboard.dev/services/connections/internal/app"
	"switchboard.dev/services/connections/internal/domain"
	grpcport "switchboard.dev/services/connections/internal/ports/grpc"
	"switchboard.dev/services/connections/migrations"
)

// settings are the connections service's own configuration.
type settings struct {
	BillingAddr          string        `env:"SWITCHBOARD_BILLING_ADDR" envDefault:"127.0.0.1:9105"`
	WebhooksAddr         string        `env:"SWITCHBOARD_WEBHOOKS_ADDR" envDefault:"127.0.0.1:9107"`
	SessionTTL           time.Duration `env:"SWITCHBOARD_LOGIN_SESSION_TTL" envDefault:"1h"`
	QRLifetime           time.Duration `env:"SWITCHBOARD_LOGIN_QR_LIFETIME" envDefault:"30s"`
	WhatsappQRLifetime   time.Duration `env:"SWITCHBOARD_WHATSAPP_QR_LIFETIME" envDefault:"60s"`
	WhatsappCodeLifetime time.Duration `env:"SWITCHBOARD_WHATSAPP_CODE_LIFETIME" envDefault:"3m"`
	DefaultRegion        string        `env:"SWITCHBOARD_DEFAULT_REGION" envDefault:"RU"`
	// The Telegram Bot API (test mode off): requests go to
	// {TelegramAPIURL}/bot<token>/<method>.
	TelegramAPIURL  string        `env:"SWITCHBOARD_TELEGRAM_API_URL" envDefault:"https://api.telegram.org"`
	TelegramTimeout time.Duration `env:"SWITCHBOARD_TELEGRAM_TIMEOUT" envDefault:"10s"`
	// Lets outbound fetches reach private addresses: development only.
	AllowPrivateTargets bool `env:"SWITCHBOARD_ALLOW_PRIVATE_TARGETS" envDefault:"false"`
	// SecretsKey seals connections' secrets (bot tokens, sessions): 32
	// bytes in base64. Unset, they are stored as they are (development).
	SecretsKey string `env:"SWITCHBOARD_SECRETS_KEY"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		var sealer *postgres.Sealer
		if s.SecretsKey != "" {
			var err error
			if sealer, err = postgres.NewSealer(s.SecretsKey); err != nil {
				return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_SECRETS_KEY: %w", err)
			}
		}
		return spec(s, sealer), nil
	})
}

func spec(s settings, sealer *postgres.Sealer) service.Spec {
	return service.Spec{
		Name:        "connections",
		DefaultAddr: "127.0.0.1:9102",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			conn, err := server.DialInternal(s.BillingAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			identityConn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			webhooksConn, err := server.DialInternal(s.WebhooksAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			// What identity must learn (a company's first connection) and
			// the spec-6 events go through the outbox, so they survive the
			// receiver being down.
			relay := outbox.New(d.DB, d.Log, outbox.Options{}).
				Route(domain.TopicIdentity, identity.New(identityConn, d.Log)).
				Route(domain.TopicWebhooks, webhookspub.New(webhooksConn))
			d.Background("outbox relay", relay.Run)
			// Subscription summaries shown with connections, kept in
			// memory while billing's announcements are heard.
			summaries := billing.NewSummaries(d.Log)
			d.Background("subscription announcements", func(ctx context.Context) error {
				summaries.Run(ctx, d.Redis)
				return nil
			})
			cfg := app.DefaultConfig()
			cfg.SessionTTL = s.SessionTTL
			cfg.QRLifetime = s.QRLifetime
			cfg.WhatsappQRLifetime = s.WhatsappQRLifetime
			cfg.WhatsappCodeLifetime = s.WhatsappCodeLifetime
			cfg.DefaultRegion = s.DefaultRegion
			cfg.AllowPrivateTargets = s.AllowPrivateTargets
			// Copies of a company's connections kept elsewhere (messaging's
			// send path) are dropped once a change is stored.
			repo := postgres.New(d.DB).WithSealer(sealer).
				WithChanges(peers.NewCompanyAnnouncer(d.Redis, d.Log, peers.ConnectionsChannel).Changed)
			if sealer == nil {
				d.Log.Warn("SWITCHBOARD_SECRETS_KEY is not set: connections' secrets (bot tokens, sessions) are stored unencrypted")
			} else {
				// Secrets stored before the key was set are sealed now.
				d.Background("seal stored secrets", func(ctx context.Context) error {
					n, err := repo.SealStored(ctx)
					if n > 0 {
						d.Log.Info("sealed stored connection secrets", "connections", n)
					}
					return err
				})
			}
			deps := app.Deps{
				Repo:      repo,
				Billing:   billing.New(conn).WithSummaries(summaries),
				Logins:    logins.New(d.Redis),
				Pictures:  picture.New(s.AllowPrivateTargets),
				Companies: peers.NewCompanies(identityConn),
				// v2 connections show the v1 webhook integrations bound
				// to them.
				Integrations: identity.NewIntegrations(identityConn),
				Config:       cfg,
			}
			if d.Config.Sandbox {
				sb := sandbox.New(d.DB, d.Redis)
				deps.Verifier, deps.Messenger = sb, sb
			} else {
				// Real providers where an adapter exists (telegram_bot); the
				// others answer 503 until theirs do.
				deps.Verifier = telegrambot.Verifier{
					Client: tgbot.NewClient(s.TelegramAPIURL, s.TelegramTimeout),
					Next:   unavailable.Provider{}, Log: d.Log,
				}
				deps.Messenger = unavailable.Provider{}
			}
			return registrar{grpcport.New(app.New(deps))}, nil
		},
	}
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	connectionsv1.RegisterConnectionsServiceServer(s, r.srv)
	connectionsv1.RegisterConnectionsOperatorServiceServer(s, r.srv)
	connectionsv1.RegisterConnectionsSandboxServiceServer(s, r.srv)
	connectionsv1.RegisterConnectionsInternalServiceServer(s, r.srv)
	connectionsv1.RegisterV1ManagementConnectionsServiceServer(s, r.srv)
	connectionsv1.RegisterV1InstancesServiceServer(s, r.srv)
}
