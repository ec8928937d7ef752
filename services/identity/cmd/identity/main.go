// Command identity serves companies, members, roles, API integrations and
// key authentication for every other service.
package main

import (
	"context"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/service"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/adapters/companycache"
	"switchboard.dev/services/identity/internal/adapters/postgres"
	"switchboard.dev/services/identity/internal/app"
	grpcport "switchboard.dev/services/identity/internal/ports/grpc"
	"switchboard.dev/services/identity/migrations"
)

func main() {
	service.Main(nil, func() (service.Spec, error) { return spec(), nil })
}

func spec() service.Spec {
	return service.Spec{
		Name:        "identity",
		DefaultAddr: "127.0.0.1:9101",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			// Companies in memory, dropped when any replica announces a
			// change (the card is the hottest read identity serves).
			repo := companycache.New(postgres.New(d.DB), d.Redis, companycache.Channel, d.Log)
			d.Background("company announcements", func(ctx context.Context) error {
				repo.Run(ctx)
				return nil
			})
			a := app.New(repo, revoker{d})
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
}

func (i identity) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	p, err := i.app.Authenticate(ctx, keyHash)
	if err != nil {
		return nil, err
	}
	return grpcport.PrincipalPB(p), nil
}

// revoker revokes replaced keys in the shared auth cache.
type revoker struct{ d *service.Deps }

func (r revoker) Revoke(ctx context.Context, keyHash string) error {
	return auth.Revoke(ctx, r.d.Redis, keyHash, r.d.Config.AuthCacheTTL)
}
