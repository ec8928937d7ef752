package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/migrations"
)

func envelope(company, conn int64, typ string, chat any) []byte {
	return fmt.Appendf(nil, `{"company_id":%d,"event_type":%q,"event":{"connection_id":%d,"chat_id":%v}}`, company, typ, conn, chat)
}

// TestIngestPlansDeliveries: an event is stored once however often it is
// handed over (also at once), with one delivery per subscription of its
// company, connection and kind; the chat it concerns is kept for ordering.
func TestIngestPlansDeliveries(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	s := app.New(postgres.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})
	sub := func(company, conn int64, events ...string) string {
		w, err := s.Create(ctx, app.CreateCmd{CompanyID: company, ConnectionID: conn, URL: "http://127.0.0.1/" + uuid.NewString(), Events: events})
		require.NoError(t, err)
		return w.ID
	}
	both := sub(1, 10, "messages.create", "connections.status_changed")
	onlyStatus := sub(1, 10, "connections.status_changed")
	sub(1, 11, "messages.create") // another connection
	sub(2, 10, "messages.create") // another company (a connection id is not theirs, but ids must not leak)

	msg := app.IncomingEvent{ID: uuid.NewString(), CompanyID: 1, Type: "messages.create", Payload: envelope(1, 10, "messages.create", 77), OccurredAt: time.Now()}
	status := app.IncomingEvent{ID: uuid.NewString(), CompanyID: 1, Type: "connections.status_changed", Payload: envelope(1, 10, "connections.status_changed", "null"), OccurredAt: time.Now()}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, s.Ingest(ctx, []app.IncomingEvent{msg, status}))
		}()
	}
	wg.Wait()

	var events int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events))
	require.Equal(t, 2, events)
	var chat *int64
	require.NoError(t, db.QueryRow(ctx, `SELECT chat_id FROM events WHERE id = $1`, msg.ID).Scan(&chat))
	require.Equal(t, int64(77), *chat)
	// Each event's own body, though one call's bodies share a buffer.
	for _, e := range []app.IncomingEvent{msg, status} {
		var body string
		require.NoError(t, db.QueryRow(ctx, `SELECT payload::text FROM events WHERE id = $1`, e.ID).Scan(&body))
		require.Equal(t, string(e.Payload), body)
	}
	planned := map[string][]string{}
	rows, err := db.Query(ctx, `SELECT event_id::text, subscription_id::text FROM deliveries WHERE status = 'pending' ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var e, sID string
		require.NoError(t, rows.Scan(&e, &sID))
		planned[e] = append(planned[e], sID)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string][]string{msg.ID: {both}, status.ID: {both, onlyStatus}}, planned)
}
