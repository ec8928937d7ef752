package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The services' outbox relays delete what they hand over, so a test reads
// the events a service emitted to webhooks where they arrive: the webhooks
// service's events table keeps each one with its id, type and payload,
// in the order its emitter wrote them (webhooks takes a service's events
// in their outbox order and numbers them in it).

// handedOver waits until service's outbox has handed webhooks every event
// committed before the call: none left whose seq its sequence had given
// out by then. What the test itself did has committed, so its rows are
// visible and are gone only once webhooks has stored them.
func handedOver(t *testing.T, service string) {
	t.Helper()
	db := serviceDB(t, service)
	ctx := context.Background()
	var last int64
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(last_value, 0) FROM pg_sequences
		WHERE schemaname = 'public' AND sequencename = 'outbox_seq_seq'`).Scan(&last))
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE topic = 'webhooks' AND seq <= $1)`, last).Scan(&waiting))
		return !waiting
	}, 6*waitFor, 10*time.Millisecond, "%s's outbox did not hand its events to webhooks", service)
}

// emitted are the payloads of the events service emitted to webhooks that
// query (a SELECT of payload FROM events, ordered by seq) finds, once
// service has handed over everything committed before the call.
func emitted(t *testing.T, service, query string, args ...any) []map[string]any {
	t.Helper()
	handedOver(t, service)
	rows, err := serviceDB(t, "webhooks").Query(context.Background(), query, args...)
	require.NoError(t, err)
	defer rows.Close()
	out := []map[string]any{}
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		out = append(out, m)
	}
	require.NoError(t, rows.Err())
	return out
}
