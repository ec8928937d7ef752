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
	"switchboard.dev/pkg/server"
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

func run(ctx context.Context) error {
	var cfg gateway.Config
	if err := env.Parse(&cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log := logging.New(os.Stdout, "gateway", cfg.LogLevel)
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
	g, err := gateway.New(ctx, cfg, log)
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
