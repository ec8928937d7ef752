// Command identity serves companies, members, roles, API integrations and
// key authentication for every other service.
package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/mail"
	sbpeers "switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/adapters/companycache"
	"switchboard.dev/services/identity/internal/adapters/peers"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	grpcport "switchboard.dev/services/identity/internal/ports/grpc"
	"switchboard.dev/services/identity/migrations"
)

// settings are identity's own.
type settings struct {
	// SMTPURL is the server that delivers queued mail
	// (smtp[s]://user:pass@host:port); pkg/mail's Sender reads it too.
	// Without it, and outside test mode, no mail can be delivered and
	// what must mail (partner clients' passwords) is refused with 503.
	SMTPURL string `env:"SWITCHBOARD_SMTP_URL"`
	// MailFrom is the sender address of the platform's mail.
	MailFrom string `env:"SWITCHBOARD_MAIL_FROM" envDefault:"Switchboard <noreply@switchboard.local>"`
	// The v1 management API asks connections whether a connection bound
	// to a webhook integration is the company's, and webhooks to check a
	// webhook integration's URL.
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	WebhooksAddr    string `env:"SWITCHBOARD_WEBHOOKS_ADDR" envDefault:"127.0.0.1:9107"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) { return spec(s), nil })
}

func spec(s settings) service.Spec {
	return service.Spec{
		Name:        "identity",
		DefaultAddr: "127.0.0.1:9101",
		Migrations:  migrations.FS,
		Build: func(ctx context.Context, d *service.Deps) (service.Registrar, error) {
			// Companies in memory, dropped when any replica announces a
			// change (the card is the hottest read identity serves).
			// Changes to integrations and their bindings are announced:
			// webhooks' intake keeps each company's targets.
			repo := companycache.New(postgres.New(d.DB, postgres.WithIntegrationChanges(
				sbpeers.NewCompanyAnnouncer(d.Redis, d.Log, sbpeers.IntegrationsChannel).Changed)), d.Redis, companycache.Channel, d.Log)
			d.Background("company announcements", func(ctx context.Context) error {
				repo.Run(ctx)
				return nil
			})
			// Queued mail (a partner's new client's password) goes out
			// through SMTP and, in test mode, into the sandbox mailbox.
			transports, err := mail.Transports(s.SMTPURL, s.MailFrom, d.Config.Sandbox, d.Redis)
			if err != nil {
				return nil, fmt.Errorf("config: SWITCHBOARD_SMTP_URL, SWITCHBOARD_MAIL_FROM: %w", err)
			}
			sender := mail.NewSender(d.DB, d.Log, mail.SenderOptions{From: s.MailFrom, Transports: transports})
			d.Background("mail", sender.Run)
			connectionsConn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			webhooksConn, err := server.DialInternal(s.WebhooksAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			a := app.New(repo, revoker{d}, app.Config{MailDeliverable: sender.Deliverable()}).WithV1(app.V1Peers{
				Connections: peers.NewConnections(connectionsConn),
				URLs:        peers.NewURLs(webhooksConn),
				Keys:        revoker{d},
			})
			// Partner companies from before promo codes get theirs before
			// anything is served (each replica; they skip each other's).
			n, err := a.EnsurePromoCodes(ctx)
			if err != nil {
				return nil, fmt.Errorf("promo codes: %w", err)
			}
			if n > 0 {
				d.Log.InfoContext(ctx, "gave partner companies their missing promo codes", "codes", n)
			}
			return identity{app: a, grpc: grpcport.New(a)}, nil
		},
	}
}

// identity registers its gRPC services and authenticates keys
// in-process, without a hop to itself.
type identity struct {
	app  *app.Service
	grpc *grpcport.Server
}

func (i identity) Register(s *grpc.Server) {
	identityv1.RegisterIdentityServiceServer(s, i.grpc)
	identityv1.RegisterOperatorServiceServer(s, i.grpc)
	identityv1.RegisterAuthServiceServer(s, i.grpc)
	identityv1.RegisterIdentityInternalServiceServer(s, i.grpc)
	identityv1.RegisterV1ManagementIntegrationsServiceServer(s, i.grpc)
	identityv1.RegisterV1IntegrationsInternalServiceServer(s, i.grpc)
}

func (i identity) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	p, err := i.app.Authenticate(ctx, keyHash)
	if err != nil {
		return nil, err
	}
	return grpcport.PrincipalPB(p), nil
}

// revoker revokes replaced or disabled keys in the shared auth cache, and
// restores enabled ones.
type revoker struct{ d *service.Deps }

func (r revoker) Revoke(ctx context.Context, keyHash string) error {
	return auth.Revoke(ctx, r.d.Redis, keyHash, r.d.Config.AuthCacheTTL)
}

// Restore lets an enabled integration's key work again at once.
func (r revoker) Restore(ctx context.Context, keyHash string) error {
	return auth.Restore(ctx, r.d.Redis, keyHash)
}
