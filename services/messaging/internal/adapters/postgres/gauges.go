package postgres

import (
	"context"
	"fmt"
)

// QueuedSends counts the outbound sends waiting for the messenger (due,
// claimed or waiting for a retry): the send queue's depth, every
// replica's.
func (r *Repo) QueuedSends(ctx context.Context) (float64, error) {
	var n int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM outbound_sends`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queued sends: %w", err)
	}
	return float64(n), nil
}

// PollsHeld counts the telegram_bot connections whose updates some
// replica polls now (a lease that runs).
func (r *Repo) PollsHeld(ctx context.Context) (float64, error) {
	var n int64
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM telegram_polls WHERE lease_until >= now()`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count telegram polls: %w", err)
	}
	return float64(n), nil
}
