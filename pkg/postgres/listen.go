package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ListenOptions shape Listen.
type ListenOptions struct {
	// Channel is the notification channel.
	Channel string
	// Notified receives each notification's payload.
	Notified func(payload string)
	// Listening is called after every (re)connection: what was signalled
	// while the listener was away raised no notification it could see, so
	// the caller looks for work then.
	Listening func()
	// MinBackoff and MaxBackoff bound the wait before a reconnection,
	// doubling from the first to the second.
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger
}

// Listen receives the notifications of a channel on a connection of its
// own (LISTEN holds a session, so not one of the pool's), reconnecting
// when it is lost, until ctx ends.
func Listen(ctx context.Context, db *pgxpool.Pool, o ListenOptions) {
	backoff := o.MinBackoff
	for ctx.Err() == nil {
		err := listenOnce(ctx, db, o.Channel, o.Notified, func() {
			backoff = o.MinBackoff
			o.Listening()
		})
		if ctx.Err() != nil {
			return
		}
		o.Log.Warn("postgres: notifications lost, reconnecting", "channel", o.Channel, "retry_in", backoff.String(), "error", err.Error())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
}

func listenOnce(ctx context.Context, db *pgxpool.Pool, channel string, notified func(string), listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, db.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notified(n.Payload)
	}
}
