// Command sales serves the company's products, catalogs and shops, and the
// shops' storefronts: the catalog a bot's mini app shows and the orders
// placed from it.
package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	salesv1 "switchboard.dev/proto/switchboard/sales/v1"
	"switchboard.dev/services/sales/internal/adapters/peers"
	"switchboard.dev/services/sales/internal/adapters/postgres"
	"switchboard.dev/services/sales/internal/app"
	grpcport "switchboard.dev/services/sales/internal/ports/grpc"
	"switchboard.dev/services/sales/migrations"
)

// settings are the sales service's own configuration.
type settings struct {
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	MessagingAddr   string `env:"SWITCHBOARD_MESSAGING_ADDR" envDefault:"127.0.0.1:9106"`
	// The gateway's external address: uploaded files' links and the
	// storefront pages are under it.
	PublicURL string `env:"SWITCHBOARD_PUBLIC_URL" envDefault:"http://127.0.0.1:8080"`
	// Currencies a price or a catalog may be in (ISO 4217, upper case).
	Currencies string `env:"SWITCHBOARD_SALES_CURRENCIES" envDefault:"RUB,USD,EUR,KZT,BYN,UZS,KGS,AMD,GEL,AZN,CNY"`
	// Catalogs a company may have, products a catalog may hold.
	MaxCatalogs        int `env:"SWITCHBOARD_SALES_MAX_CATALOGS" envDefault:"100"`
	MaxCatalogProducts int `env:"SWITCHBOARD_SALES_MAX_CATALOG_PRODUCTS" envDefault:"1000"`
	// How old a storefront's launch data (initData) may be.
	InitDataMaxAge time.Duration `env:"SWITCHBOARD_SALES_INIT_DATA_MAX_AGE" envDefault:"24h"`
}

func main() {
	var s settings
	service.Main(&s, func() (service.Spec, error) { return spec(s) })
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// spec checks the settings and describes the service.
func spec(s settings) (service.Spec, error) {
	var currencies []string
	for _, c := range strings.Split(s.Currencies, ",") {
		if !currencyCode.MatchString(c) {
			return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_SALES_CURRENCIES %q: %q is not an upper-case ISO 4217 code", s.Currencies, c)
		}
		currencies = append(currencies, c)
	}
	if s.InitDataMaxAge <= 0 {
		return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_SALES_INIT_DATA_MAX_AGE must be positive")
	}
	if s.MaxCatalogs < 1 || s.MaxCatalogProducts < 1 {
		return service.Spec{}, fmt.Errorf("config: SWITCHBOARD_SALES_MAX_CATALOGS and SWITCHBOARD_SALES_MAX_CATALOG_PRODUCTS must be positive")
	}
	return service.Spec{
		Name:        "sales",
		DefaultAddr: "127.0.0.1:9109",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			// Lazy clients: sales may start before its peers.
			connectionsConn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			messagingConn, err := server.DialInternal(s.MessagingAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			repo, conns := postgres.New(d.DB), peers.NewConnections(connectionsConn)
			a := app.New(repo, conns, peers.NewFiles(messagingConn), app.Config{
				Currencies: currencies, MaxCatalogs: s.MaxCatalogs, MaxCatalogProducts: s.MaxCatalogProducts,
				PublicURL: s.PublicURL,
			})
			sf := app.NewStorefront(repo, conns, peers.NewInbound(messagingConn), app.StorefrontConfig{InitDataMaxAge: s.InitDataMaxAge})
			return registrar{grpcport.New(a), grpcport.NewStorefront(sf)}, nil
		},
	}, nil
}

type registrar struct {
	srv        *grpcport.Server
	storefront *grpcport.Storefront
}

func (r registrar) Register(s *grpc.Server) {
	salesv1.RegisterSalesServiceServer(s, r.srv)
	// The shops' mini apps (no API key: signed launch data).
	salesv1.RegisterStorefrontServiceServer(s, r.storefront)
}
