package proctest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"fmt"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/postgres"
	webhooksv1 "switchboard.dev/proto/switchboard/webhooks/v1"
	pgadapter "switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/adapters/sender"
	"switchboard.dev/services/webhooks/internal/app"
	grpcport "switchboard.dev/services/webhooks/internal/ports/grpc"
)

// profileEnv names a folder: when set, BenchmarkWebhooksFanout runs the
// service in this process instead of the binary (the binary serves no
// pprof) and writes a CPU profile of each timed phase there
// (end-to-end.cpu.pprof, engine-alone.cpu.pprof). The profile holds the
// receiver and the test's clients too, under their own functions; the
// PostgreSQL side is the per-backend CPU the benchmark prints.
const profileEnv = "SWITCHBOARD_BENCH_PROFILE"

// explainEnv, with profileEnv, is a duration in milliseconds: the plan of
// every statement of the engine's pool that runs longer (auto_explain,
// with ANALYZE and BUFFERS) is written to stderr. Each phase's statements
// (counts and client-side time, and the server's own figures where
// pg_stat_statements is preloaded) are written beside its profile.
const explainEnv = "SWITCHBOARD_BENCH_EXPLAIN_MS"

// engineUnderTest is the webhooks service a benchmark drives.
type engineUnderTest interface {
	grpcAddr() string
	// cpu is the CPU time it has used so far.
	cpu() time.Duration
}

// inProcess is the service wired as cmd/webhooks wires it (same pool,
// intake, engine and sender), minus the auth and validation interceptors.
type inProcess struct{ addr string }

func (p inProcess) grpcAddr() string { return p.addr }

// cpu is the whole test process's: the receiver and clients are in it.
func (inProcess) cpu() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startInProcess(b *testing.B, dsn string, workers int) engineUnderTest {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pcfg, err := pgxpool.ParseConfig(dsn)
	require.NoError(b, err)
	pcfg.ConnConfig.Tracer = stmts
	if ms := os.Getenv(explainEnv); ms != "" {
		// auto_explain's plans come back as notices, written to stderr.
		pcfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			fmt.Fprintln(os.Stderr, "auto_explain", time.Now().Format("15:04:05.000"), n.Message)
		}
	}
	// The service's pool comes from postgres.Open; this one is built here
	// for its tracer, so it registers Open's types itself.
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		postgres.RegisterTypes(c.TypeMap())
		if ms := os.Getenv(explainEnv); ms != "" {
			if _, err := c.Exec(ctx, `LOAD 'auto_explain'; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;
				SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice`); err != nil {
				return err
			}
			_, err := c.Exec(ctx, `SELECT set_config('auto_explain.log_min_duration', $1, false)`, ms)
			return err
		}
		return nil
	}
	db, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(b, err)
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := app.EngineConfig{
		Timeout: 5 * time.Second, Retries: []time.Duration{time.Minute}, PauseAfter: 5, Probes: []time.Duration{time.Minute},
		Retention: 72 * time.Hour, Workers: workers, Poll: time.Second,
	}
	a := app.New(pgadapter.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})
	engine := app.NewEngine(pgadapter.NewQueue(db, log), sender.New(sender.Options{
		Timeout: cfg.Timeout, AllowPrivate: true, MaxConnsPerHost: cfg.Workers,
	}), cfg, log)
	srv := grpc.NewServer()
	webhooksv1.RegisterWebhooksInternalServiceServer(srv, grpcport.New(a))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(lis) }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = engine.Run(ctx)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
		srv.Stop()
		db.Close()
	})
	return inProcess{addr: lis.Addr().String()}
}

type anyConnection struct{}

func (anyConnection) CheckConnection(context.Context, int64, int64) error { return nil }

// startProfile starts a CPU profile named name in dir (none when dir is
// empty); the function it answers stops it.
func startProfile(b *testing.B, db *pgxpool.Pool, dir, name string) func() {
	b.Helper()
	if dir == "" {
		return func() {}
	}
	// Where the server preloads pg_stat_statements, its view of the phase
	// is written too.
	_, pgssErr := db.Exec(context.Background(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	if pgssErr == nil {
		_, pgssErr = db.Exec(context.Background(), `SELECT pg_stat_statements_reset()`)
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	stmts.reset()
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
		s, err := os.Create(filepath.Join(dir, name+".statements.txt"))
		require.NoError(b, err)
		stmts.write(s, fanoutEvents)
		if pgssErr == nil {
			serverStatements(b, db, s, fanoutEvents)
		}
		require.NoError(b, s.Close())
	}
}
