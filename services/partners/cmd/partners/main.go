// Command partners serves the partner programme: partner companies'
// profiles, clients and their subscriptions, the partners' requisites and
// settings, their rewards (from billing's events), balances and payouts,
// their notification channels (payment_status notifications, the
// notification bot), and test mode's mailbox.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	"switchboard.dev/pkg/telegrambot"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
	"switchboard.dev/services/partners/internal/adapters/notifybot"
	"switchboard.dev/services/partners/internal/adapters/peers"
	"switchboard.dev/services/partners/internal/adapters/postgres"
	"switchboard.dev/services/partners/internal/app"
	grpcport "switchboard.dev/services/partners/internal/ports/grpc"
	"switchboard.dev/services/partners/migrations"
)

// settings are the partners service's own configuration.
type settings struct {
	BillingAddr     string `env:"SWITCHBOARD_BILLING_ADDR" envDefault:"127.0.0.1:9105"`
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	// New clients a partner may create a UTC day, unless the operator set
	// its own.
	ClientsPerDay int32 `env:"SWITCHBOARD_PARTNER_CLIENTS_PER_DAY" envDefault:"20"`
	// Region of phones written without a country code.
	DefaultRegion string `env:"SWITCHBOARD_DEFAULT_REGION" envDefault:"RU"`
	// The least balance a payout takes, in roubles.
	PayoutMin string `env:"SWITCHBOARD_PARTNER_PAYOUT_MIN" envDefault:"1000.00"`

	// Notification channels. The bots' usernames make the channels'
	// start links; outside test mode the Telegram bot of
	// PartnerTelegramBotToken sends the telegram channels' notifications
	// and reads their "/start" (without a token telegram channels are
	// refused). Email channels go through the mail outbox (SMTP).
	PartnerTelegramBot      string        `env:"SWITCHBOARD_PARTNER_TELEGRAM_BOT" envDefault:"switchboard_notify_bot"`
	PartnerMaxBot           string        `env:"SWITCHBOARD_PARTNER_MAX_BOT" envDefault:"switchboard_notify_bot"`
	PartnerTelegramBotToken string        `env:"SWITCHBOARD_PARTNER_TELEGRAM_BOT_TOKEN"`
	TelegramAPIURL          string        `env:"SWITCHBOARD_TELEGRAM_API_URL" envDefault:"https://api.telegram.org"`
	TelegramTimeout         time.Duration `env:"SWITCHBOARD_TELEGRAM_TIMEOUT" envDefault:"10s"`
	PartnerBotPollWait      time.Duration `env:"SWITCHBOARD_PARTNER_BOT_POLL_WAIT" envDefault:"25s"`
	PartnerBotLease         time.Duration `env:"SWITCHBOARD_PARTNER_BOT_LEASE" envDefault:"60s"`
	PartnerBotBackoff       time.Duration `env:"SWITCHBOARD_PARTNER_BOT_BACKOFF" envDefault:"5s"`
	// The delivery worker's pause when nothing is due.
	PartnerNotifyPoll time.Duration `env:"SWITCHBOARD_PARTNER_NOTIFY_POLL" envDefault:"1s"`
	SMTPURL           string        `env:"SWITCHBOARD_SMTP_URL"`
	MailFrom          string        `env:"SWITCHBOARD_MAIL_FROM" envDefault:"Switchboard <noreply@switchboard.local>"`
	// How long a partner invoice's pending balance hold waits for its
	// invoice before the sweeper asks billing what became of it, and how
	// often the sweeper looks.
	HoldGrace         time.Duration `env:"SWITCHBOARD_PARTNER_HOLD_GRACE" envDefault:"2m"`
	HoldSweepInterval time.Duration `env:"SWITCHBOARD_PARTNER_HOLD_SWEEP_INTERVAL" envDefault:"30s"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) { return spec(s) })
}

// spec checks the settings and describes the service.
func spec(s settings) (service.Spec, error) {
	payoutMin, err := decimal.NewFromString(s.PayoutMin)
	if err != nil || !payoutMin.IsPositive() || !payoutMin.Equal(payoutMin.Round(2)) {
		return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_PARTNER_PAYOUT_MIN %q is not a positive amount with at most two decimals", s.PayoutMin)
	}
	if s.PartnerTelegramBotToken != "" && !telegrambot.TokenShape.MatchString(s.PartnerTelegramBotToken) {
		return service.Spec{}, errors.New("config: SWITCHBOARD_PARTNER_TELEGRAM_BOT_TOKEN is not a Telegram bot token")
	}
	if s.PartnerBotPollWait < time.Second || s.PartnerBotPollWait > 50*time.Second {
		return service.Spec{}, errors.New("config: SWITCHBOARD_PARTNER_BOT_POLL_WAIT must be between 1s and 50s (Telegram's limit)")
	}
	if s.PartnerBotLease <= s.PartnerBotPollWait+s.TelegramTimeout {
		// A lease shorter than a poll would let a second replica poll too.
		return service.Spec{}, errors.New("config: SWITCHBOARD_PARTNER_BOT_LEASE must exceed SWITCHBOARD_PARTNER_BOT_POLL_WAIT plus SWITCHBOARD_TELEGRAM_TIMEOUT")
	}
	if s.PartnerBotBackoff <= 0 || s.PartnerNotifyPoll <= 0 || s.TelegramTimeout <= 0 {
		return service.Spec{}, errors.New("config: SWITCHBOARD_PARTNER_BOT_BACKOFF, SWITCHBOARD_PARTNER_NOTIFY_POLL and SWITCHBOARD_TELEGRAM_TIMEOUT must be positive")
	}
	if s.HoldGrace <= 0 || s.HoldSweepInterval <= 0 {
		return service.Spec{}, errors.New("config: SWITCHBOARD_PARTNER_HOLD_GRACE and SWITCHBOARD_PARTNER_HOLD_SWEEP_INTERVAL must be positive")
	}
	return service.Spec{
		Name:        "partners",
		DefaultAddr: "127.0.0.1:9108",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			// Lazy clients: partners may start before its peers.
			identityConn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			billingConn, err := server.DialInternal(s.BillingAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			connectionsConn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			var mailbox app.Mailbox
			if d.Config.Sandbox {
				mailbox = mail.NewMailbox(d.Redis)
			}
			// Email channels' notifications go out through SMTP and, in
			// test mode, into the sandbox mailbox.
			transports, err := mail.Transports(s.SMTPURL, s.MailFrom, d.Config.Sandbox, d.Redis)
			if err != nil {
				return nil, fmt.Errorf("config: SWITCHBOARD_SMTP_URL, SWITCHBOARD_MAIL_FROM: %w", err)
			}
			sender := mail.NewSender(d.DB, d.Log, mail.SenderOptions{From: s.MailFrom, Transports: transports})
			d.Background("mail", sender.Run)
			repo := postgres.New(d.DB)
			notify := app.NotifyConfig{Repo: repo, Sandbox: d.Config.Sandbox, TelegramBot: s.PartnerTelegramBot,
				MaxBot: s.PartnerMaxBot, MailDeliverable: sender.Deliverable(), Poll: s.PartnerNotifyPoll}
			var bot *notifybot.Telegram
			if !d.Config.Sandbox && s.PartnerTelegramBotToken != "" {
				bot = &notifybot.Telegram{Client: telegrambot.NewClient(s.TelegramAPIURL, s.TelegramTimeout), Token: s.PartnerTelegramBotToken}
				notify.Notifier = bot
			}
			a := app.New(repo, peers.NewIdentity(identityConn), peers.NewBilling(billingConn),
				peers.NewConnections(connectionsConn), mailbox, app.Config{
					DefaultCommissions:   app.DefaultCommissions(),
					DefaultClientsPerDay: s.ClientsPerDay,
					DefaultRegion:        s.DefaultRegion,
					PayoutMin:            payoutMin,
					HoldGrace:            s.HoldGrace,
					Log:                  d.Log,
					Notify:               notify,
				})
			d.Background("partner notifications", a.RunDeliveries)
			if bot != nil {
				owner := uuid.NewString()
				d.Background("partner notification bot", func(ctx context.Context) error {
					return a.RunTelegramBot(ctx, *bot, app.BotPoll{Owner: owner, Wait: s.PartnerBotPollWait,
						Lease: s.PartnerBotLease, Backoff: s.PartnerBotBackoff})
				})
			}
			// Pending balance holds whose invoice never came (a crash
			// between the services) are resolved with billing; each
			// replica runs it, the holds' row locks keep them apart.
			d.Background("balance holds", func(ctx context.Context) error { return a.RunHoldSweeper(ctx, s.HoldSweepInterval) })
			return registrar{grpcport.New(a), grpcport.NewNotifications(a)}, nil
		},
	}, nil
}

type registrar struct {
	srv    *grpcport.Server
	notify *grpcport.Notifications
}

func (r registrar) Register(s *grpc.Server) {
	partnersv1.RegisterPartnersServiceServer(s, r.srv)
	partnersv1.RegisterPartnersOperatorServiceServer(s, r.srv)
	partnersv1.RegisterPartnersSandboxServiceServer(s, r.srv)
	partnersv1.RegisterPartnerNotificationsServiceServer(s, r.notify)
	partnersv1.RegisterPartnerNotificationsSandboxServiceServer(s, r.notify)
	// Billing's outbox relay hands its events here (internal token).
	partnersv1.RegisterPartnersInternalServiceServer(s, r.srv)
}
