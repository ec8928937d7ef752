// Command messaging serves chats (and, as it grows, messages, the inbox,
// the blacklist and files): the conversations of a company's messenger
// connections.
package main

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	"switchboard.dev/pkg/webhookspub"
	messagingv1 "switchboard.dev/proto/switchboard/messaging/v1"
	"switchboard.dev/services/messaging/internal/adapters/billing"
	"switchboard.dev/services/messaging/internal/adapters/connections"
	"switchboard.dev/services/messaging/internal/adapters/contacts"
	"switchboard.dev/services/messaging/internal/adapters/limiter"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/adapters/sandbox"
	"switchboard.dev/services/messaging/internal/adapters/storage"
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
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		if s.InboxRate < 0 {
			return service.Spec{}, errors.New("config: SWITCHBOARD_MESSAGING_INBOX_RATE must not be negative")
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
			deps := app.Deps{
				Repo:             postgres.New(d.DB),
				Blacklist:        postgres.New(d.DB),
				Templates:        postgres.New(d.DB),
				Connections:      connections.New(connectionsConn),
				Contacts:         contactsClient,
				Cards:            contactsClient,
				InboxLimit:       limiter.New(d.Redis, "messaging:", s.InboxRate),
				Billing:          bill,
				Payments:         bill,
				Messenger:        unavailable.Messenger{},
				WabaTemplates:    postgres.New(d.DB),
				TemplateProvider: unavailable.Messenger{},
				Config: app.Config{DefaultRegion: s.DefaultRegion, AllowPrivateTargets: s.AllowPrivateTargets,
					PublicURL: s.PublicURL},
			}
			var sb *sandbox.Messenger
			if d.Config.Sandbox {
				sb = sandbox.New(d.DB)
				sb.DeliverAfter, sb.ReadAfter = s.SandboxDeliverAfter, s.SandboxReadAfter
				deps.Messenger, deps.TemplateProvider = sb, sb
			}
			svc := app.New(deps)
			// Sends reach the messenger after the API has answered.
			d.Background("send worker", func(ctx context.Context) error { return svc.RunSender(ctx, d.Log) })
			srv := grpcport.New(svc)
			if sb != nil {
				d.Background("sandbox receipts", func(ctx context.Context) error { return sb.RunReceipts(ctx, d.Log, svc.Receipt) })
				srv.WithSandbox(sb)
			}
			store, err := storage.Open(s.FilesStorage, s.FilesDir)
			if err != nil {
				return nil, err
			}
			files := grpcport.NewFiles(app.NewFiles(postgres.New(d.DB), store, app.FilesConfig{PublicURL: s.PublicURL}, d.Log))
			return registrar{srv, files}, nil
		},
	}
}

type registrar struct {
	srv   *grpcport.Server
	files *grpcport.Files
}

func (r registrar) Register(s *grpc.Server) {
	messagingv1.RegisterChatsServiceServer(s, r.srv)
	messagingv1.RegisterBlacklistServiceServer(s, r.srv)
	messagingv1.RegisterMessagesServiceServer(s, r.srv)
	messagingv1.RegisterMessagingSandboxServiceServer(s, r.srv)
	r.files.Register(s)
	messagingv1.RegisterInboxServiceServer(s, r.srv)
	messagingv1.RegisterTemplatesServiceServer(s, r.srv)
	messagingv1.RegisterWabaTemplatesServiceServer(s, r.srv)
}
