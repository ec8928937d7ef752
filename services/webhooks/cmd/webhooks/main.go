// Command webhooks serves webhook subscriptions, takes in every service's
// events and delivers them.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"google.golang.org/grpc"

	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	"switchboard.dev/services/webhooks/internal/adapters/connections"
	"switchboard.dev/services/webhooks/internal/adapters/identity"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/adapters/sender"
	"switchboard.dev/services/webhooks/internal/app"
	grpcport "switchboard.dev/services/webhooks/internal/ports/grpc"
	"switchboard.dev/services/webhooks/migrations"
)

// settings are the webhooks service's own configuration.
type settings struct {
	ConnectionsAddr string `env:"SWITCHBOARD_CONNECTIONS_ADDR" envDefault:"127.0.0.1:9102"`
	// Lets webhook URLs point at private addresses: development only.
	AllowPrivateTargets bool `env:"SWITCHBOARD_ALLOW_PRIVATE_TARGETS" envDefault:"false"`

	// The delivery rules' timing (design/webhooks.md "Configuration").
	Timeout    time.Duration   `env:"SWITCHBOARD_WEBHOOK_TIMEOUT" envDefault:"5s"`
	Retries    []time.Duration `env:"SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE" envDefault:"1m,3m,10m,30m,60m"`
	PauseAfter int             `env:"SWITCHBOARD_WEBHOOK_PAUSE_AFTER" envDefault:"5"`
	Probes     []time.Duration `env:"SWITCHBOARD_WEBHOOK_PROBE_SCHEDULE" envDefault:"1m,2m,5m,15m,30m,1h"`
	Retention  time.Duration   `env:"SWITCHBOARD_WEBHOOK_RETENTION" envDefault:"72h"`
	// Attempts in flight per replica, and connections per receiver host.
	Workers int `env:"SWITCHBOARD_WEBHOOK_WORKERS" envDefault:"64"`
	// The longest the engine waits without a notification.
	Poll time.Duration `env:"SWITCHBOARD_WEBHOOK_POLL" envDefault:"1s"`
	// The local address deliveries leave from (unset: the route's): the
	// one egress IP receivers can allow-list on a host with several. Tests
	// give each replica its own loopback address, so a receiver tells them
	// apart by the peer address alone.
	SourceAddr netip.Addr `env:"SWITCHBOARD_WEBHOOK_SOURCE_ADDR"`
}

// engine checks the timing and makes the engine's configuration.
func (s settings) engine() (app.EngineConfig, error) {
	positive := func(name string, ds ...time.Duration) error {
		for _, d := range ds {
			if d <= 0 {
				return fmt.Errorf("%s: every duration must be positive, got %s", name, d)
			}
		}
		return nil
	}
	switch {
	case len(s.Probes) == 0:
		return app.EngineConfig{}, errors.New("SWITCHBOARD_WEBHOOK_PROBE_SCHEDULE: at least one duration")
	case s.PauseAfter < 1:
		return app.EngineConfig{}, errors.New("SWITCHBOARD_WEBHOOK_PAUSE_AFTER: at least 1")
	case s.Workers < 1:
		return app.EngineConfig{}, errors.New("SWITCHBOARD_WEBHOOK_WORKERS: at least 1")
	}
	if err := checkSourceAddr(s.SourceAddr); err != nil {
		return app.EngineConfig{}, err
	}
	for name, ds := range map[string][]time.Duration{
		"SWITCHBOARD_WEBHOOK_TIMEOUT": {s.Timeout}, "SWITCHBOARD_WEBHOOK_RETRY_SCHEDULE": s.Retries,
		"SWITCHBOARD_WEBHOOK_PROBE_SCHEDULE": s.Probes, "SWITCHBOARD_WEBHOOK_RETENTION": {s.Retention},
		"SWITCHBOARD_WEBHOOK_POLL": {s.Poll},
	} {
		if err := positive(name, ds...); err != nil {
			return app.EngineConfig{}, err
		}
	}
	return app.EngineConfig{
		Timeout: s.Timeout, Retries: s.Retries, PauseAfter: s.PauseAfter, Probes: s.Probes,
		Retention: s.Retention, Workers: s.Workers, Poll: s.Poll,
	}, nil
}

// checkSourceAddr makes a source address that is not this host's fail the
// start, instead of every delivery failing to connect (and its URLs
// pausing) later.
func checkSourceAddr(a netip.Addr) error {
	if !a.IsValid() {
		return nil
	}
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
	if err != nil {
		return fmt.Errorf("SWITCHBOARD_WEBHOOK_SOURCE_ADDR %s is not an address of this host: %w", a, err)
	}
	return l.Close()
}

func main() {
	// A delivery allocates its request, its signature and its share of
	// the recording statements, and keeps none of it: the collector took a
	// tenth of the engine's CPU in BenchmarkWebhooksFanout at GOGC=100.
	service.DefaultGCPercent(400)
	var s settings
	service.Main(&s, func() (service.Spec, error) {
		cfg, err := s.engine()
		if err != nil {
			return service.Spec{}, err
		}
		return spec(s, cfg), nil
	})
}

func spec(s settings, cfg app.EngineConfig) service.Spec {
	return service.Spec{
		Name:        "webhooks",
		DefaultAddr: "127.0.0.1:9107",
		Migrations:  migrations.FS,
		Build: func(_ context.Context, d *service.Deps) (service.Registrar, error) {
			conn, err := server.DialInternal(s.ConnectionsAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			snd := sender.New(sender.Options{
				Timeout: cfg.Timeout, AllowPrivate: s.AllowPrivateTargets, MaxConnsPerHost: cfg.Workers,
				SourceAddr: s.SourceAddr,
			})
			// v1 webhook integrations' URLs are checked by the deliveries'
			// own sender.
			identityConn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
			if err != nil {
				return nil, err
			}
			// Each company's targets in memory while identity's
			// announcements are heard.
			targets := identity.NewCache(d.Log)
			d.Background("integration announcements", func(ctx context.Context) error {
				targets.Run(ctx, d.Redis)
				return nil
			})
			a := app.New(postgres.New(d.DB), connections.New(conn), app.Config{AllowPrivateTargets: s.AllowPrivateTargets}).
				WithChecker(snd).
				// Events also go to the v1 webhook integrations bound to
				// their connections (identity's).
				WithTargets(identity.New(identityConn).WithCache(targets))
			queue := postgres.NewQueue(d.DB, d.Log)
			registerMetrics(queue)
			engine := app.NewEngine(queue, timedSender{snd}, cfg, d.Log)
			d.Background("delivery engine", engine.Run)
			return registrar{grpcport.New(a)}, nil
		},
	}
}

type registrar struct{ srv *grpcport.Server }

func (r registrar) Register(s *grpc.Server) {
	webhooksv1.RegisterWebhooksServiceServer(s, r.srv)
	webhooksv1.RegisterWebhooksInternalServiceServer(s, r.srv)
	webhooksv1.RegisterWebhooksV1InternalServiceServer(s, r.srv)
}
