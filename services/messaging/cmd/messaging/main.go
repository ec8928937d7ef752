// Command messaging serves chats (and, as it grows, messages, the inbox,
// the blacklist and files): the conversations of a company's messenger
// connections.
package main

import (
	"context"
	"errors"
	"net/url"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	tgbot "switchboard.dev/pkg/telegrambot"
	"switchboard.dev/pkg/webhookspub"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/adapters/billing"
	"switchboard.dev/services/messaging/internal/adapters/companyview"
	"switchboard.dev/services/messaging/internal/adapters/connections"
	"switchboard.dev/services/messaging/internal/adapters/contacts"
	"switchboard.dev/services/messaging/internal/adapters/limiter"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/adapters/sandbox"
	"switchboard.dev/services/messaging/internal/adapters/storage"
	"switchboard.dev/services/messaging/internal/adapters/telegrambot"
	"switchboard.dev/services/messaging/internal/adapters/unavailable"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	grpcport "switchboard.dev/services/messaging/internal/ports/grpc"
	"switchboard.dev/services/messaging/migrations"
)

// settings are the messaging service's own configuration.
type settings struct {
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	ContactsAddr    string `env:"SWITCHBOARD_CONTACTS_ADDR" envDefault:"127.0.0.1:9104"`
	BillingAddr     string `env:"SWITCHBOARD_BILLING_ADDR" envDefault:"127.0.0.1:9105"`
	WebhooksAddr    string `env:"SWITCHBOARD_WEBHOOKS_ADDR" envDefault:"127.0.0.1:9107"`
	// Region of phones written without a country code.
	DefaultRegion string `env:"SWITCHBOARD_DEFAULT_REGION" envDefault:"RU"`
	// Lets file links point at private addresses: development only.
	AllowPrivateTargets bool `env:"SWITCHBOARD_ALLOW_PRIVATE_TARGETS" envDefault:"false"`
	// When the sandbox messenger's receipts follow a send (test mode).
	SandboxDeliverAfter time.Duration `env:"SWITCHBOARD_SANDBOX_DELIVER_AFTER" envDefault:"200ms"`
	SandboxReadAfter    time.Duration `env:"SWITCHBOARD_SANDBOX_READ_AFTER" envDefault:"400ms"`
	// Uploaded files: an s3:// URL (adapters/storage.NewS3), else the folder.
	FilesStorage string `env:"SWITCHBOARD_FILES_STORAGE"`
	FilesDir     string `env:"SWITCHBOARD_FILES_DIR" envDefault:"files"`
	// The gateway's external address, the base of file links.
	PublicURL string `env:"SWITCHBOARD_PUBLIC_URL" envDefault:"http://127.0.0.1:8080"`
	// Inbox calls per second per company (spec 8: one); 0 turns the limit
	// off, for load tests.
	InboxRate int `env:"SWITCHBOARD_MESSAGING_INBOX_RATE" envDefault:"1"`
	// The Telegram Bot API of telegram_bot connections outside test mode:
	// its base URL (tests point it at a fake), the bound of each call, and
	// the pollers' tuning (adapters/telegrambot.PollConfig).
	TelegramAPIURL     string        `env:"SWITCHBOARD_TELEGRAM_API_URL" envDefault:"https://api.telegram.org"`
	TelegramTimeout    time.Duration `env:"SWITCHBOARD_TELEGRAM_TIMEOUT" envDefault:"10s"`
	TelegramPollWait   time.Duration `env:"SWITCHBOARD_TELEGRAM_POLL_WAIT" envDefault:"25s"`
	TelegramLease      time.Duration `env:"SWITCHBOARD_TELEGRAM_LEASE" envDefault:"60s"`
	TelegramRefresh    time.Duration `env:"SWITCHBOARD_TELEGRAM_REFRESH" envDefault:"10s"`
	TelegramMaxBackoff time.Duration `env:"SWITCHBOARD_TELEGRAM_MAX_BACKOFF" envDefault:"30s"`
	// Webhook mode: the platform's public https address, where Telegram
	// posts updates instead of being polled, and the key of the secrets
	// it proves itself with (at least 32 characters).
	TelegramWebhookURL    string `env:"SWITCHBOARD_TELEGRAM_WEBHOOK_URL"`
	TelegramWebhookSecret string `env:"SWITCHBOARD_TELEGRAM_WEBHOOK_SECRET"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		if s.InboxRate < 0 {
			return service.Spec{}, errors.New("config: SWITCHBOARD_MESSAGING_INBOX_RATE must not be negative")
		}
		if s.TelegramPollWait < time.Second || s.TelegramPollWait > 50*time.Second {
			// Telegram counts the wait in whole seconds: under one is no
			// wait, a poll loop without pause.
			return service.Spec{}, errors.New("config: SWITCHBOARD_TELEGRAM_POLL_WAIT must be between 1s and 50s (Telegram's limit)")
		}
		if s.TelegramTimeout <= 0 || s.TelegramRefresh <= 0 || s.TelegramMaxBackoff <= 0 {
			return service.Spec{}, errors.New("config: SWITCHBOARD_TELEGRAM_TIMEOUT, _REFRESH and _MAX_BACKOFF must be positive")
		}
		if s.TelegramLease <= s.TelegramPollWait+s.TelegramTimeout {
			// The lease is renewed once per poll: a shorter one would lapse
			// while its holder waits, and another replica would poll too.
			return service.Spec{}, errors.New("config: SWITCHBOARD_TELEGRAM_LEASE must exceed SWITCHBOARD_TELEGRAM_POLL_WAIT plus SWITCHBOARD_TELEGRAM_TIMEOUT")
		}
		if s.TelegramWebhookURL != "" {
			// Telegram posts to https only.
			if u, err := url.Parse(s.TelegramWebhookURL); err != nil || u.Scheme != "https" || u.Host == "" {
				return service.Spec{}, errors.New("config: SWITCHBOARD_TELEGRAM_WEBHOOK_URL must be an absolute https URL (Telegram posts to https only)")
			}
			if len(s.TelegramWebhookSecret) < 32 {
				return service.Spec{}, errors.New("config: webhook mode needs SWITCHBOARD_TELEGRAM_WEBHOOK_SECRET of at least 32 characters")
			}
		}
		return spec(s), nil
	})
}

func spec(s settings) service.Spec {
	return service.Spec{
		Name:        "messaging",
		DefaultAddr: "127.0.0.1:9106",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			dial := func(addr string) (*grpc.ClientConn, error) { return server.DialInternal(addr, d.Config.InternalToken) }
			connectionsConn, err := dial(s.ConnectionsAddr)
			if err != nil {
				return nil, err
			}
			contactsConn, err := dial(s.ContactsAddr)
			if err != nil {
				return nil, err
			}
			billingConn, err := dial(s.BillingAddr)
			if err != nil {
				return nil, err
			}
			webhooksConn, err := dial(s.WebhooksAddr)
			if err != nil {
				return nil, err
			}
			// The spec-6 events reach the webhooks service through the
			// outbox, written in the transaction of each change.
			relay := outbox.New(d.DB, d.Log, outbox.Options{}).Route(domain.TopicWebhooks, webhookspub.New(webhooksConn))
			d.Background("outbox relay", relay.Run)
			bill := billing.New(billingConn)
			contactsClient := contacts.New(contactsConn)
			connsClient := connections.New(connectionsConn)
			// A company's connections and their paid state, kept in memory
			// while connections' and billing's announcements are heard.
			viewCache := companyview.NewCache(d.Log)
			d.Background("connection and subscription announcements", func(ctx context.Context) error {
				viewCache.Run(ctx, d.Redis)
				return nil
			})
			view := companyview.New(viewCache, connsClient, bill, billingConn)
			deps := app.Deps{
				Repo:             postgres.New(d.DB),
				Blacklist:        postgres.New(d.DB),
				Templates:        postgres.New(d.DB),
				Connections:      view,
				Contacts:         contactsClient,
				Cards:            contactsClient,
				InboxLimit:       limiter.New(d.Redis, "messaging:", s.InboxRate),
				Billing:          bill,
				Payments:         view,
				Messenger:        unavailable.Messenger{},
				WabaTemplates:    postgres.New(d.DB),
				TemplateProvider: unavailable.Messenger{},
				Config: app.Config{DefaultRegion: s.DefaultRegion, AllowPrivateTargets: s.AllowPrivateTargets,
					PublicURL: s.PublicURL},
			}
			var (
				sb          *sandbox.Messenger
				tgClient    *tgbot.Client
				tgStatus    *telegrambot.Status
				tgMessenger *telegrambot.Messenger
			)
			if d.Config.Sandbox {
				sb = sandbox.New(d.DB)
				sb.DeliverAfter, sb.ReadAfter = s.SandboxDeliverAfter, s.SandboxReadAfter
				deps.Messenger, deps.TemplateProvider = sb, sb
			} else {
				// Real messengers where adapters exist: telegram_bot through
				// the Bot API; the other types answer unavailable.
				tgClient = tgbot.NewClient(s.TelegramAPIURL, s.TelegramTimeout)
				tgStatus = &telegrambot.Status{Conns: connsClient, Log: d.Log}
				tgMessenger = &telegrambot.Messenger{Client: tgClient, Conns: connsClient, Status: tgStatus, Next: unavailable.Messenger{}}
				deps.Messenger = tgMessenger
			}
			svc := app.New(deps)
			// The send queue and the Telegram polls, read from the database.
			repo := postgres.New(d.DB)
			metrics.MustRegister(
				metrics.QueryGauge("messaging_sends_queued", "Outbound sends waiting for the messenger (every replica's).", repo.QueuedSends),
				metrics.QueryGauge("messaging_telegram_polls_held", "telegram_bot connections whose updates a replica polls now.", repo.PollsHeld),
			)
			// Sends reach the messenger after the API has answered.
			d.Background("send worker", func(ctx context.Context) error { return svc.RunSender(ctx, d.Log) })
			d.Background("idempotency key expiry", func(ctx context.Context) error {
				return svc.RunKeyExpiry(ctx, d.Log, app.KeyExpiryEvery)
			})
			srv := grpcport.New(svc)
			if sb != nil {
				d.Background("sandbox receipts", func(ctx context.Context) error { return sb.RunReceipts(ctx, d.Log, svc.Receipts) })
				srv.WithSandbox(sb)
			}
			store, err := storage.Open(s.FilesStorage, s.FilesDir)
			if err != nil {
				return nil, err
			}
			var hook grpcport.TelegramHook
			filesApp := app.NewFiles(postgres.New(d.DB), store, app.FilesConfig{PublicURL: s.PublicURL}, d.Log)
			if tgMessenger != nil {
				tgMessenger.Files = filesApp
			}
			if tgClient != nil {
				poller := &telegrambot.Poller{
					Client: tgClient, Conns: connsClient, Store: postgres.New(d.DB).Polls(), Ingest: svc, Files: filesApp,
					Status: tgStatus, Log: d.Log,
					Config: telegrambot.PollConfig{Wait: s.TelegramPollWait, Lease: s.TelegramLease, Refresh: s.TelegramRefresh,
						Backoff: time.Second, MaxBackoff: s.TelegramMaxBackoff,
						WebhookURL: s.TelegramWebhookURL, WebhookKey: []byte(s.TelegramWebhookSecret)},
				}
				d.Background("telegram poller", poller.Run)
				hook = poller
			}
			return registrar{srv, grpcport.NewFiles(filesApp), grpcport.NewTelegram(hook), grpcport.NewInboundInternal(svc)}, nil
		},
	}
}

type registrar struct {
	srv      *grpcport.Server
	files    *grpcport.Files
	telegram *grpcport.Telegram
	inbound  *grpcport.InboundInternal
}

func (r registrar) Register(s *grpc.Server) {
	messagingv1.RegisterChatsServiceServer(s, r.srv)
	messagingv1.RegisterBlacklistServiceServer(s, r.srv)
	messagingv1.RegisterMessagesServiceServer(s, r.srv)
	messagingv1.RegisterV1InstanceMessagesServiceServer(s, r.srv)
	messagingv1.RegisterMessagingSandboxServiceServer(s, r.srv)
	r.files.Register(s)
	messagingv1.RegisterInboxServiceServer(s, r.srv)
	messagingv1.RegisterTemplatesServiceServer(s, r.srv)
	messagingv1.RegisterWabaTemplatesServiceServer(s, r.srv)
	messagingv1.RegisterTelegramWebhookServiceServer(s, r.telegram)
	// Sales hands its storefront orders over here (internal token).
	messagingv1.RegisterInboundInternalServiceServer(s, r.inbound)
}
