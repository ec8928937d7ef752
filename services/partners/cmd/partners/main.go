// Command partners serves the partner programme: partner companies'
// profiles, clients and their subscriptions, the partners' requisites and
// settings, their rewards (from billing's events), balances and payouts,
// and test mode's mailbox.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	partnersv1 "switchboard.dev/proto/switchboard/partners/v1"
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
			a := app.New(postgres.New(d.DB), peers.NewIdentity(identityConn), peers.NewBilling(billingConn),
				peers.NewConnections(connectionsConn), mailbox, app.Config{
					DefaultCommissions:   app.DefaultCommissions(),
					DefaultClientsPerDay: s.ClientsPerDay,
					DefaultRegion:        s.DefaultRegion,
					PayoutMin:            payoutMin,
					HoldGrace:            s.HoldGrace,
					Log:                  d.Log,
				})
			// Pending balance holds whose invoice never came (a crash
			// between the services) are resolved with billing; each
			// replica runs it, the holds' row locks keep them apart.
			d.Background("balance holds", func(ctx context.Context) error { return a.RunHoldSweeper(ctx, s.HoldSweepInterval) })
			return registrar{grpcport.New(a)}, nil
		},
	}, nil
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	partnersv1.RegisterPartnersServiceServer(s, r.srv)
	partnersv1.RegisterPartnersOperatorServiceServer(s, r.srv)
	partnersv1.RegisterPartnersSandboxServiceServer(s, r.srv)
	// Billing's outbox relay hands its events here (internal token).
	partnersv1.RegisterPartnersInternalServiceServer(s, r.srv)
}
