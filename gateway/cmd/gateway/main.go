// Command gateway serves the REST API: JSON over HTTP in front of the gRPC
// services.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/caarlos0/env/v11"

	"switchboard.dev/gateway/internal/gateway"
	"switchboard.dev/pkg/logging"
	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/server"
	"switchboard.dev/pkg/service"
	"switchboard.dev/pkg/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// serviceName is the logs' "service".
const serviceName = "gateway"

// gcPercent is the gateway's GOGC unless the environment sets one.
const gcPercent = 400

func run(ctx context.Context) error {
	// The gateway keeps almost nothing alive between requests, so at the
	// default GOGC=100 its heap target is a few MiB and it collects many
	// times a second under load: a fifth of its CPU per request went to
	// the collector (issue 12). A larger target costs little memory here
	// (a 100 MiB upload raised peak RSS by 37 MiB instead of 13 MiB when
	// this was set; it now streams in about 5 MiB, TestFilesTooLarge's
	// bound is 50). 800 halves the marking (2.7-4.5 % of the CPU per
	// read, issue 32) for a heap target near 94 MB, past the pod's
	// request. GOGC in the environment wins.
	service.DefaultGCPercent(gcPercent)
	var cfg gateway.Config
	if err := env.Parse(&cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// One line per request: buffered, written out at least every 100 ms
	// and on exit (logging.Buffered).
	out := logging.NewBuffered(os.Stdout, 64<<10, 100*time.Millisecond)
	defer func() { _ = out.Close() }()
	log := logging.New(out, serviceName, cfg.LogLevel)
	shutdownTracing, err := telemetry.Setup(ctx, "gateway")
	if err != nil {
		return err
	}
	defer shutdownTracing()
	// The same opt-in profiling listener as every service (pkg/service).
	_, stopPprof, err := server.ServePprof(log, os.Getenv(server.PprofAddrEnv))
	if err != nil {
		return err
	}
	defer stopPprof()
	// /metrics on its own port, as every service (pkg/service).
	_, stopMetrics, err := metrics.Serve(log, os.Getenv(metrics.AddrEnv))
	if err != nil {
		return err
	}
	defer stopMetrics()
	g, err := gateway.New(ctx, cfg, log, gateway.AccessLogTo(out, serviceName))
	if err != nil {
		return err
	}
	defer g.Close()
	srv := &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Info("serving", "addr", cfg.HTTPAddr)
	return gateway.Serve(ctx, srv, cfg.ShutdownTimeout)
}
