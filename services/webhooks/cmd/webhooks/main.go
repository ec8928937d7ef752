// Command webhooks serves webhook subscriptions (and, as it grows, takes in
// every service's events and delivers them).
package main

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/internal/adapters/connections"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	grpcport "switchboard.dev/services/webhooks/internal/ports/grpc"
	"switchboard.dev/services/webhooks/migrations"
)

// settings are the webhooks service's own configuration.
type settings struct {
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	// Lets webhook URLs point at private addresses: development only.
	AllowPrivateTargets bool `env:"SWITCHBOARD_ALLOW_PRIVATE_TARGETS" envDefault:"false"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		return spec(s), nil
	})
}

func spec(s settings) service.Spec {
	return service.Spec{
		Name:        "webhooks",
		DefaultAddr: "127.0.0.1:9107",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			conn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			a := app.New(postgres.New(d.DB), connections.New(conn), app.Config{AllowPrivateTargets: s.AllowPrivateTargets})
			return registrar{grpcport.New(a)}, nil
		},
	}
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	webhooksv1.RegisterWebhooksServiceServer(s, r.srv)
	webhooksv1.RegisterWebhooksInternalServiceServer(s, r.srv)
}
