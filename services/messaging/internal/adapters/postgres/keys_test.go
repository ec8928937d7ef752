package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/migrations"
)

// TestExpireKeysInBatches: every key recorded at or before the time goes,
// over batches smaller than their number; newer keys stay and answer,
// whichever company holds them.
func TestExpireKeysInBatches(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	r := New(db)
	now := time.Now()
	_, err := db.Exec(ctx, `INSERT INTO send_idempotency (company_id, key, request_hash, response, created_at)
		SELECT 1, 'old-' || g, '\x01', '\x02', $1 FROM generate_series(1, 5) g`, now.Add(-25*time.Hour))
	require.NoError(t, err)
	_, err = db.Exec(ctx, `INSERT INTO send_idempotency (company_id, key, request_hash, response, created_at)
		VALUES (1, 'new', '\x01', '\x03', $1), (2, 'old-1', '\x01', '\x04', $1)`, now.Add(-time.Hour))
	require.NoError(t, err)

	n, err := r.ExpireKeys(ctx, now.Add(-24*time.Hour), 2)
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	var left []string
	rows, err := db.Query(ctx, `SELECT company_id || '/' || key FROM send_idempotency ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		left = append(left, k)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"1/new", "2/old-1"}, left)
	_, answer, err := r.StoredAnswer(ctx, 2, "old-1", now.Add(-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []byte{4}, answer)

	n, err = r.ExpireKeys(ctx, now.Add(-24*time.Hour), 2)
	require.NoError(t, err)
	require.Zero(t, n)
}
