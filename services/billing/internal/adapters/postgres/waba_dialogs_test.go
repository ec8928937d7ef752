package postgres_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/billing/internal/adapters/postgres"
	"switchboard.dev/services/billing/internal/domain"
	"switchboard.dev/services/billing/migrations"
)

func TestWabaDialogsStorage(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := postgres.New(db)

	b, err := r.WabaDialogsBalance(ctx, 1)
	require.NoError(t, err)
	require.Zero(t, b)
	b, err = r.AddWabaDialogs(ctx, 1, math.MinInt32)
	require.NoError(t, err)
	require.Equal(t, int64(math.MinInt32), b)
	b, err = r.AddWabaDialogs(ctx, 1, math.MaxInt32)
	require.NoError(t, err)
	require.Equal(t, int64(-1), b)

	// Overflow both ways is ErrBalanceOutOfRange and changes nothing.
	for _, tc := range []struct {
		start int64
		count int32
	}{{math.MaxInt64, 1}, {math.MinInt64, -1}} {
		_, err = db.Exec(ctx, `UPDATE waba_dialogs SET waba_dialogs_balance = $1 WHERE company_id = 1`, tc.start)
		require.NoError(t, err)
		_, err = r.AddWabaDialogs(ctx, 1, tc.count)
		require.ErrorIs(t, err, domain.ErrBalanceOutOfRange)
		b, err = r.WabaDialogsBalance(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, tc.start, b)
	}

	// A take stores the balance it left under its key; one that finds
	// nothing stores nothing and leaves the transaction rolled back.
	_, err = db.Exec(ctx, `UPDATE waba_dialogs SET waba_dialogs_balance = 1 WHERE company_id = 1`)
	require.NoError(t, err)
	at := time.Date(2026, 3, 31, 23, 59, 59, 500, time.UTC)
	taken, b, err := r.TakeWabaDialog(ctx, 1, "k1", at)
	require.NoError(t, err)
	require.True(t, taken)
	require.Zero(t, b)
	taken, b, err = r.TakeWabaDialog(ctx, 1, "k2", at.Add(time.Second))
	require.NoError(t, err)
	require.False(t, taken)
	require.Zero(t, b)
	// The same key again answers the first take and writes nothing more.
	taken, _, err = r.TakeWabaDialog(ctx, 1, "k1", at.Add(2*time.Second))
	require.NoError(t, err)
	require.True(t, taken)
	var keys []string
	rows, err := db.Query(ctx, `SELECT idempotency_key || ':' || waba_dialogs_balance FROM waba_dialog_takes ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"k1:0"}, keys)

	// Only the take that took wrote its event, in its transaction.
	var events []string
	rows, err = db.Query(ctx, `SELECT topic || ' ' || company_id || ' ' || event_type || ' ' || payload::text FROM outbox ORDER BY seq`)
	require.NoError(t, err)
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		events = append(events, e)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{`partners 1 waba_dialogs.opened {"at": "2026-03-31T23:59:59.0000005Z", "company_id": 1}`}, events)
}
