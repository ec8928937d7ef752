package service

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/caarlos0/env/v11"

	"switchboard.dev/pkg/config"
)

// Main is the whole main function of a service command. It reads the
// service's own settings (a pointer to a struct with env tags, or nil) from
// the environment, asks spec for the service, which may refuse the settings,
// and runs it until SIGINT or SIGTERM. A failure is printed once and exits 1.
func Main(settings any, spec func() (Spec, error)) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := runMain(ctx, settings, spec, env.ToMap(os.Environ()))
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

func runMain(ctx context.Context, settings any, spec func() (Spec, error), environ map[string]string) error {
	if settings != nil {
		if err := config.Load(settings, environ); err != nil {
			return err
		}
	}
	s, err := spec()
	if err != nil {
		return err
	}
	return Run(ctx, s, environ, os.Stdout)
}
