// Command billing serves subscriptions: their plans, sizes and paid
// periods, invoices and their payment, plan and size changes, the advance,
// whether a connection may work, and the companies' business (WABA)
// dialog balances; the partners service reads and changes its clients'
// billing through its internal calls.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/cbr"
	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/netguard"
	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/robokassa"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/adapters/announce"
	"switchboard.dev/services/billing/internal/adapters/connections"
	"switchboard.dev/services/billing/internal/adapters/identity"
	"switchboard.dev/services/billing/internal/adapters/partners"
	"switchboard.dev/services/billing/internal/adapters/payments"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/adapters/rates"
	"switchboard.dev/services/billing/internal/app"
	grpcport "switchboard.dev/services/billing/internal/ports/grpc"
	"switchboard.dev/services/billing/migrations"
)

// settings are the billing service's own configuration.
type settings struct {
	// Where the connections service listens: it owns subscription
	// membership.
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	// Where the partners service listens: billing's events (invoice
	// statuses, business dialogs opened) go there through the outbox.
	PartnersAddr string `env:"SWITCHBOARD_PARTNERS_ADDR" envDefault:"127.0.0.1:9108"`
	// Test period of a subscription created by the first connection of its
	// type.
	TestPeriod time.Duration `env:"SWITCHBOARD_TEST_PERIOD" envDefault:"72h"`
	// PublicURL is the gateway's external address: test mode's payment
	// links point at its sandbox routes.
	PublicURL string `env:"SWITCHBOARD_PUBLIC_URL" envDefault:"http://127.0.0.1:8080"`
	// SandboxUSDRate is test mode's roubles per dollar for KEEPZ invoices
	// of a company that set none.
	SandboxUSDRate string `env:"SWITCHBOARD_SANDBOX_USD_RATE" envDefault:"90.0000"`
	// CBRURL is the central bank's site, whose daily XML feed gives the
	// dollar rate outside test mode.
	CBRURL string `env:"SWITCHBOARD_CBR_URL" envDefault:"https://www.cbr.ru"`
	// AllowPrivateTargets lets outbound HTTP reach private addresses
	// (development and tests with a local fake feed).
	AllowPrivateTargets bool `env:"SWITCHBOARD_ALLOW_PRIVATE_TARGETS" envDefault:"false"`
	// ExpiryInterval is how often unpaid invoices past their lifetime are
	// looked for.
	ExpiryInterval time.Duration `env:"SWITCHBOARD_INVOICE_EXPIRY_INTERVAL" envDefault:"30s"`
	Robokassa      robokassaSettings
	// SMTPURL is the server that delivers queued mail (partner invoices
	// mailed to partner_email), smtp[s]://user:pass@host:port. Without it,
	// and outside test mode, such invoices are refused with 503.
	SMTPURL string `env:"SWITCHBOARD_SMTP_URL"`
	// MailFrom is the sender address of the platform's mail.
	MailFrom string `env:"SWITCHBOARD_MAIL_FROM" envDefault:"Switchboard <noreply@switchboard.local>"`
}

// robokassaSettings configure card payments outside test mode; without a
// merchant login card invoices are refused with 18003.
type robokassaSettings struct {
	MerchantLogin string `env:"SWITCHBOARD_ROBOKASSA_MERCHANT_LOGIN"`
	Password1     string `env:"SWITCHBOARD_ROBOKASSA_PASSWORD1"`
	Password2     string `env:"SWITCHBOARD_ROBOKASSA_PASSWORD2"`
	// Hash of the signatures as set in the shop: md5, sha1, sha256,
	// sha384 or sha512.
	Hash       string `env:"SWITCHBOARD_ROBOKASSA_HASH" envDefault:"md5"`
	PaymentURL string `env:"SWITCHBOARD_ROBOKASSA_PAYMENT_URL" envDefault:"https://auth.robokassa.ru/Merchant/Index.aspx"`
	// IsTest marks links as the shop's test payments.
	IsTest bool `env:"SWITCHBOARD_ROBOKASSA_IS_TEST" envDefault:"false"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) { return spec(s) })
}

// spec checks the settings and describes the service.
func spec(s settings) (service.Spec, error) {
	if s.TestPeriod < 0 {
		return service.Spec{}, errors.New("config: SWITCHBOARD_TEST_PERIOD must not be negative")
	}
	if s.ExpiryInterval <= 0 {
		return service.Spec{}, errors.New("config: SWITCHBOARD_INVOICE_EXPIRY_INTERVAL must be positive")
	}
	sandboxRate, err := decimal.NewFromString(s.SandboxUSDRate)
	if err != nil || !sandboxRate.IsPositive() {
		return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_SANDBOX_USD_RATE %q is not a positive number", s.SandboxUSDRate)
	}
	var rk *robokassa.Client
	if s.Robokassa.MerchantLogin != "" {
		if rk, err = robokassa.New(robokassa.Config{
			MerchantLogin: s.Robokassa.MerchantLogin, Password1: s.Robokassa.Password1, Password2: s.Robokassa.Password2,
			Hash: s.Robokassa.Hash, PaymentURL: s.Robokassa.PaymentURL, IsTest: s.Robokassa.IsTest,
		}); err != nil {
			return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_ROBOKASSA_*: %w", err)
		}
	}
	return service.Spec{Name: "billing",
		DefaultAddr: "127.0.0.1:9105",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			// The client connects lazily, so billing may start before the
			// connections service does (devstack starts billing first).
			conn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			// Identity owns the companies: operator calls ask it whether
			// the company they name exists (SWITCHBOARD_IDENTITY_ADDR), and
			// it keeps their billing settings, the partners' promo codes
			// and which companies are partners' clients.
			identityConn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			// Billing's events (topic "partners") reach the partner
			// programme through the outbox: written with each change, they
			// wait while partners is down. The client connects lazily.
			partnersConn, err := server.DialInternal(s.PartnersAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			relay := outbox.New(d.DB, d.Log, outbox.Options{}).Route(app.EventsTopic, partners.New(partnersConn))
			d.Background("outbox relay", relay.Run)
			// Partner invoices mailed to partner_email go out through SMTP
			// and, in test mode, into the sandbox mailbox.
			transports, err := mail.Transports(s.SMTPURL, s.MailFrom, d.Config.Sandbox, d.Redis)
			if err != nil {
				return nil, fmt.Errorf("config: SWITCHBOARD_SMTP_URL, SWITCHBOARD_MAIL_FROM: %w", err)
			}
			sender := mail.NewSender(d.DB, d.Log, mail.SenderOptions{From: s.MailFrom, Transports: transports})
			d.Background("mail", sender.Run)
			repo := postgres.New(d.DB)
			companies := peers.NewCompanies(identityConn)
			cfg := app.Config{
				TestPeriod: s.TestPeriod,
				Announcer:  announce.New(d.Redis, d.Log),
				Settings:   identity.Settings{Companies: companies},
				Promos:     identity.NewPromos(identityConn),
				Clients:    identity.NewClients(identityConn),
				Log:        d.Log,

				MailDeliverable: sender.Deliverable(),
			}
			if d.Config.Sandbox {
				cfg.Rates = rates.Sandbox{Store: repo, Default: sandboxRate}
				cfg.Payments = payments.Sandbox{PublicURL: s.PublicURL}
				rk = nil // test mode takes no provider's notifications
			} else {
				feed, err := cbr.New(netguard.HTTPClient(netguard.ClientOptions{
					Timeout: 10 * time.Second, AllowPrivate: s.AllowPrivateTargets,
				}), s.CBRURL)
				if err != nil {
					return nil, fmt.Errorf("config: SWITCHBOARD_CBR_URL: %w", err)
				}
				cfg.Rates = rates.CBR{Cached: cbr.NewCached(feed, repo, rates.Moscow, nil)}
				cfg.Payments = payments.Real{Robokassa: rk}
			}
			a := app.New(repo, connections.New(conn), companies, cfg)
			d.Background("invoice expiry", func(ctx context.Context) error { return a.RunExpiry(ctx, s.ExpiryInterval) })
			return registrar{grpcport.New(a, rk)}, nil
		},
	}, nil
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	billingv1.RegisterBillingServiceServer(s, r.srv)
	billingv1.RegisterBillingInternalServiceServer(s, r.srv)
	billingv1.RegisterBillingOperatorServiceServer(s, r.srv)
	billingv1.RegisterBillingSandboxServiceServer(s, r.srv)
	billingv1.RegisterBillingProviderServiceServer(s, r.srv)
}
