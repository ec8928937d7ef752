// Command contacts serves contacts, their tags and notes, and binds
// messenger chats to contacts for the messaging service.
package main

import (
	"context"
	"errors"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/service"
	contactsv1 "switchboard.dev/proto/switchboard/contacts/v1"
	"switchboard.dev/services/contacts/internal/adapters/limiter"
	"switchboard.dev/services/contacts/internal/adapters/postgres"
	"switchboard.dev/services/contacts/internal/app"
	grpcport "switchboard.dev/services/contacts/internal/ports/grpc"
	"switchboard.dev/services/contacts/migrations"
)

// settings are the contacts service's own configuration.
type settings struct {
	// Region of phones written without a country code.
	DefaultRegion string `env:"SWITCHBOARD_DEFAULT_REGION" envDefault:"RU"`
	// Contact list calls per second per company (spec 8: one); 0 turns the
	// limit off, for load tests.
	ListRate int `env:"SWITCHBOARD_CONTACTS_LIST_RATE" envDefault:"1"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		if s.ListRate < 0 {
			return service.Spec{}, errors.New("config: SWITCHBOARD_CONTACTS_LIST_RATE must not be negative")
		}
		return spec(s), nil
	})
}

func spec(s settings) service.Spec {
	return service.Spec{
		Name:        "contacts",
		DefaultAddr: "127.0.0.1:9104",
		Migrations:  migrations.FS,
		// Every list statement prepared and planned on each connection
		// before its first request (postgres.Warm).
		WarmConn: postgres.Warm,
		Build: func(ctx context.Context, d *service.Deps) (service.Registrar, error) {
			repo := postgres.New(d.DB)
			// Asked at the start, so no search waits for it.
			same, err := repo.CheckTrigrams(ctx)
			if err != nil {
				return nil, err
			}
			if !same {
				d.Log.Warn("contacts: the database makes trigrams unlike the search's shape test (its character type); searches by name test every candidate key's contacts")
			}
			// Loads the lists of trigrams the searches of a company need
			// not read (postgres.commonTrigrams), as they ask for them.
			d.Background("common trigrams", func(ctx context.Context) error { return repo.LoadCommonTrigrams(ctx, d.Log) })
			// Loads the searching companies' name keys into memory
			// (postgres.keyIndexes), as they ask for them.
			d.Background("name keys", func(ctx context.Context) error { return repo.LoadKeyIndexes(ctx, d.Log) })
			a := app.New(repo, limiter.New(d.Redis, "contacts:", s.ListRate), app.Config{DefaultRegion: s.DefaultRegion})
			return registrar{grpcport.New(a)}, nil
		},
	}
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	contactsv1.RegisterContactsServiceServer(s, r.srv)
	contactsv1.RegisterContactsInternalServiceServer(s, r.srv)
}
