// Command billing serves subscriptions: their plans, sizes and paid
// periods, whether a connection may work, and the companies' business
// (WABA) dialog balances.
package main

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/peers"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	billingv1 "switchboard.dev/proto/switchboard/billing/v1"
	"switchboard.dev/services/billing/internal/adapters/announce"
	"switchboard.dev/services/billing/internal/adapters/connections"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/app"
	grpcport "switchboard.dev/services/billing/internal/ports/grpc"
	"switchboard.dev/services/billing/migrations"
)

// settings are the billing service's own configuration.
type settings struct {
	// Where the connections service listens: it owns subscription
	// membership.
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	// Test period of a subscription created by the first connection of its
	// type.
	TestPeriod time.Duration `env:"SWITCHBOARD_TEST_PERIOD" envDefault:"72h"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		if s.TestPeriod < 0 {
			return service.Spec{}, errors.New("config: SWITCHBOARD_TEST_PERIOD must not be negative")
		}
		return spec(s), nil
	})
}

func spec(s settings) service.Spec {
	return service.Spec{
		Name:        "billing",
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
			// the company they name exists (SWITCHBOARD_IDENTITY_ADDR).
			identityConn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			a := app.New(postgres.New(d.DB), connections.New(conn), peers.NewCompanies(identityConn),
				app.Config{TestPeriod: s.TestPeriod, Announcer: announce.New(d.Redis, d.Log)})
			return registrar{grpcport.New(a)}, nil
		},
	}
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	billingv1.RegisterBillingServiceServer(s, r.srv)
	billingv1.RegisterBillingInternalServiceServer(s, r.srv)
	billingv1.RegisterBillingOperatorServiceServer(s, r.srv)
}
