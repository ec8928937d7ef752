// Package service is the composition root every service shares: it reads
// the common configuration, sets up logs, tracing, PostgreSQL (migrated at
// start under an advisory lock), Redis and the authenticating gRPC server,
// then lets the service wire its own parts with plain constructors. With
// SWITCHBOARD_PPROF_ADDR set it also serves net/http/pprof there, and with
// SWITCHBOARD_METRICS_ADDR set, /metrics (pkg/metrics; a service adds its
// own gauges with metrics.MustRegister in Build).
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/config"
	"switchboard.dev/pkg/logging"
	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/pkg/ratelimit"
	"switchboard.dev/pkg/redisx"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/telemetry"
	"switchboard.dev/pkg/validate"
)

// Deps are the shared parts a service builds on.
type Deps struct {
	Config config.Service
	Log    *slog.Logger
	DB     *pgxpool.Pool
	Redis  *redis.Client

	tasks []task
}

type task struct {
	name string
	run  func(ctx context.Context) error
}

// Background adds a task that runs beside the gRPC server for the life of
// the process (an outbox relay, a poller). Its context ends at shutdown and
// Run waits for it before the database and Redis close. A task that fails
// before shutdown stops the whole service, so a broken worker shows as a
// failing process rather than a quiet one; tasks that can recover (retry a
// peer, reconnect) do so themselves and return only when ctx ends.
func (d *Deps) Background(name string, run func(ctx context.Context) error) {
	d.tasks = append(d.tasks, task{name: name, run: run})
}

// Registrar registers a service's gRPC servers. When it also implements
// auth.Source it authenticates keys itself (identity); every other service
// asks identity over gRPC.
type Registrar interface {
	Register(s *grpc.Server)
}

// Spec describes one service.
type Spec struct {
	Name string
	// DefaultAddr is the gRPC address when SWITCHBOARD_GRPC_ADDR is unset.
	DefaultAddr string
	// Migrations of the service's database (NNNN_name.sql).
	Migrations fs.FS
	// WarmConn, when set, readies each new connection of the service's
	// pool before its first use, and the pool keeps all its connections
	// open (postgres.OpenWarm).
	WarmConn postgres.Warm
	// Build wires the service's own parts on the shared deps.
	Build func(ctx context.Context, d *Deps) (Registrar, error)
}

// Run runs the service until ctx ends (SIGTERM), then stops gracefully.
func Run(ctx context.Context, spec Spec, environ map[string]string, stdout io.Writer) error {
	d := &Deps{Config: config.Service{GRPCAddr: spec.DefaultAddr}}
	if err := config.Load(&d.Config, environ); err != nil {
		return err
	}
	if d.Config.DatabaseURL == "" {
		return errors.New("config: SWITCHBOARD_DATABASE_URL is required")
	}
	d.Log = logging.New(stdout, spec.Name, d.Config.LogLevel)

	// Profiling is opt-in and started first, so that a slow start
	// (migrations) can be profiled too; it stops when Run returns.
	_, stopPprof, err := server.ServePprof(d.Log, environ[server.PprofAddrEnv])
	if err != nil {
		return err
	}
	defer stopPprof()
	// Metrics likewise, on their own port, off the gRPC listener.
	_, stopMetrics, err := metrics.Serve(d.Log, environ[metrics.AddrEnv])
	if err != nil {
		return err
	}
	defer stopMetrics()

	shutdownTracing, err := telemetry.Setup(ctx, spec.Name)
	if err != nil {
		return err
	}
	defer shutdownTracing()

	if err := postgres.Migrate(ctx, d.Config.DatabaseURL, spec.Migrations); err != nil {
		return err
	}
	if d.DB, err = postgres.OpenWarm(ctx, d.Config.DatabaseURL, spec.WarmConn); err != nil {
		return err
	}
	defer d.DB.Close()
	metrics.Postgres(d.DB)
	if d.Redis, err = redisx.Open(ctx, d.Config.RedisAddr); err != nil {
		return err
	}
	defer d.Redis.Close()
	metrics.Redis(d.Redis)

	reg, err := spec.Build(ctx, d)
	if err != nil {
		return fmt.Errorf("build %s: %w", spec.Name, err)
	}
	source, ok := reg.(auth.Source)
	if !ok {
		conn, err := server.DialInternal(d.Config.IdentityAddr, d.Config.InternalToken)
		if err != nil {
			return err
		}
		defer conn.Close()
		source = auth.NewRemote(conn)
	}
	// Principals in process memory in front of the shared Redis cache: a
	// request with a known key costs no round trip. Revocations reach it
	// over Redis pub/sub; without that channel it answers from Redis only.
	local := auth.NewLocal(auth.NewCache(d.Redis, source, d.Config.AuthCacheTTL), localAuthTTL(d.Config.AuthCacheTTL), d.Log)
	d.Background("auth revocations", func(ctx context.Context) error {
		local.Run(ctx, d.Redis)
		return nil
	})
	authn := auth.NewInterceptor(auth.Config{
		Source:        local,
		OperatorToken: d.Config.AdminToken,
		InternalToken: d.Config.InternalToken,
		Sandbox:       d.Config.Sandbox,
		Limiter:       keyLimiter(d),
	})
	validator, err := validate.New()
	if err != nil {
		return err
	}
	srv := server.New(server.Options{
		Name:               spec.Name,
		Logger:             d.Log,
		Interceptors:       []grpc.UnaryServerInterceptor{authn.Unary, validator.Unary},
		StreamInterceptors: []grpc.StreamServerInterceptor{authn.Stream, validator.Stream},
		ShutdownTimeout:    d.Config.ShutdownTimeout,
	})
	reg.Register(srv.GRPC())
	return serve(ctx, d, func(ctx context.Context) error { return srv.Run(ctx, d.Config.GRPCAddr) })
}

// serve runs the server and the background tasks until ctx ends or one of
// them fails, then stops the others and waits for every one.
func serve(ctx context.Context, d *Deps, server func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	failed := make(chan error, len(d.tasks))
	for _, t := range d.tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := t.run(ctx)
			if err != nil && ctx.Err() == nil {
				failed <- fmt.Errorf("%s: %w", t.name, err)
				cancel()
			}
		}()
	}
	err := server(ctx)
	cancel()
	wg.Wait()
	select {
	case taskErr := <-failed:
		return errors.Join(taskErr, err)
	default:
		return err
	}
}

// localAuthTTL is how long a process keeps a principal in memory: a
// revocation is pushed, so this bounds only how late other changes to a
// key's principal are seen, on top of the shared cache's TTL.
func localAuthTTL(shared time.Duration) time.Duration { return min(shared, 5*time.Second) }

// keyLimiter applies the general per-key request rate, when configured.
func keyLimiter(d *Deps) auth.Limiter {
	if d.Config.KeyRate <= 0 {
		return nil
	}
	return &perKey{
		rl:    ratelimit.New(d.Redis, "sb:key:"),
		limit: ratelimit.Limit{Rate: d.Config.KeyRate, Period: time.Second, Burst: d.Config.KeyBurst},
	}
}

type perKey struct {
	rl    *ratelimit.Limiter
	limit ratelimit.Limit
}

func (p *perKey) AllowKey(ctx context.Context, integrationID int64) error {
	res, err := p.rl.Allow(ctx, strconv.FormatInt(integrationID, 10), p.limit)
	if err != nil {
		return err
	}
	return res.Err()
}

// DefaultGCPercent sets the garbage collector's target to percent (GOGC)
// unless the environment sets GOGC. For a process that keeps little alive
// between requests: at the default 100 its heap target is a few MiB and it
// collects many times a second under load (a fifth of the gateway's CPU
// per request, a tenth of webhooks' engine), while a larger target costs
// it little memory. Not for a process that streams uploads: messaging at
// 400 held 59 MiB more during a 100 MiB upload (TestFilesTooLarge allows 50).
func DefaultGCPercent(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}
