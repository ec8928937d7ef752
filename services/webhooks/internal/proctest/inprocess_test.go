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
	db, err := postgres.Open(ctx, dsn)
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
func startProfile(b *testing.B, dir, name string) func() {
	b.Helper()
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
	}
}
