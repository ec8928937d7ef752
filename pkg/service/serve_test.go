package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// untilDone is a server that serves until it is told to stop.
func untilDone(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// TestServeWaitsForTasks: at shutdown every background task is told to
// stop and waited for before serve returns (and the database closes).
func TestServeWaitsForTasks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Deps{}
	var finished atomic.Int32
	for range 2 {
		d.Background("slow stopper", func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // winding down
			finished.Add(1)
			return nil
		})
	}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, d, untilDone) }()
	cancel()
	require.NoError(t, <-done)
	require.EqualValues(t, 2, finished.Load())
}

// TestServeStopsOnTaskFailure: a task failing before shutdown stops the
// server and the other tasks, and serve reports it.
func TestServeStopsOnTaskFailure(t *testing.T) {
	d := &Deps{}
	var otherStopped atomic.Bool
	d.Background("relay", func(context.Context) error { return errors.New("broken") })
	d.Background("other", func(ctx context.Context) error {
		<-ctx.Done()
		otherStopped.Store(true)
		return ctx.Err()
	})
	err := serve(context.Background(), d, untilDone)
	require.ErrorContains(t, err, "relay: broken")
	require.True(t, otherStopped.Load())
}

// TestServeReportsServerError: a server that cannot serve stops the tasks.
func TestServeReportsServerError(t *testing.T) {
	d := &Deps{}
	var stopped atomic.Bool
	d.Background("task", func(ctx context.Context) error {
		<-ctx.Done()
		stopped.Store(true)
		return nil
	})
	err := serve(context.Background(), d, func(context.Context) error { return errors.New("listen: address in use") })
	require.EqualError(t, err, "listen: address in use")
	require.True(t, stopped.Load())
}
