package postgres

import (
	"context"
	"fmt"
)

// Waiting counts the deliveries not yet made (pending: due, claimed,
// waiting for a retry or behind a paused URL), every replica's.
func (q *Queue) Waiting(ctx context.Context) (float64, error) {
	var n int64
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting deliveries: %w", err)
	}
	return float64(n), nil
}

// OldestWaiting is how long the oldest pending delivery has waited, in
// seconds (0: none waits): how far behind the engine is.
func (q *Queue) OldestWaiting(ctx context.Context) (float64, error) {
	var s float64
	err := q.db.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8
		FROM deliveries WHERE status = 'pending'`).Scan(&s)
	if err != nil {
		return 0, fmt.Errorf("oldest waiting delivery: %w", err)
	}
	return s, nil
}

// Paused counts the target URLs paused for failing.
func (q *Queue) Paused(ctx context.Context) (float64, error) {
	var n int64
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM targets WHERE paused`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count paused urls: %w", err)
	}
	return float64(n), nil
}
