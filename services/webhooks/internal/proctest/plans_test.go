package proctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestBacklogAfterQuietPeriod: a burst that follows a quiet period must
// cost the database a bounded amount per delivery, not an amount that
// grows with the backlog. It counts the index entries of deliveries the
// drain read (pg_stat_user_indexes, reported when the process's sessions
// end), so it does not depend on the machine's speed.
//
// While the queue is empty, autovacuum analyzes deliveries and learns that
// almost no row is pending (done here by hand, so the test does not wait
// for autovacuum). Then a burst of 3,000 is queued and released. Planned
// from those statistics, the engine's statements see every partial index
// "WHERE status = 'pending'" as holding about one row and pick among them
// freely: auto_explain showed the batch UPDATE of Queue.Record as a hash
// join over a bitmap scan of deliveries_waiting (the retention index, all
// pending rows) in 12,813 of its 12,833 runs in BenchmarkWebhooksFanout,
// the lane's next deliveries (Record's chain) read through
// deliveries_first or deliveries_waiting with a filter on the lane, and
// ClaimRetries and NextDue through deliveries_waiting. Each batch then
// reads the whole backlog: ~1,700-2,200 entries per delivery here, where a
// sane plan needs a handful.
func TestBacklogAfterQuietPeriod(t *testing.T) {
	const (
		quiet   = 100
		backlog = 3000
		chats   = 100
	)
	ctx := context.Background()
	dsn, db := newDatabase(t)
	secret := newSecret(t)
	rc := newReceiver(t, secret, nil)
	p := startWebhooks(t, "webhooks", dsn, "SWITCHBOARD_WEBHOOK_WORKERS=16")
	url := rc.url("/hook")
	subscribe(t, db, url, secret)
	in := dialIngester(t, p.addr)

	// The quiet period: a few events delivered, nothing waiting, the table
	// analyzed as autovacuum would.
	require.NoError(t, in.ingest(ctx, makeEvents(1, quiet, chats), quiet))
	require.True(t, rc.waitCount("/hook", quiet, 20*time.Second))
	require.Eventually(t, func() bool { return deliveryStatuses(t, db)["pending"] == 0 }, 10*time.Second, 10*time.Millisecond)
	_, err := db.Exec(ctx, `ANALYZE deliveries`)
	require.NoError(t, err)

	// The burst, queued whole (the URL paused meanwhile), then released.
	_, err = db.Exec(ctx, `INSERT INTO targets (url, failures, paused, paused_at, probe_at)
		VALUES ($1, 0, true, now(), 'infinity')`, url)
	require.NoError(t, err)
	require.NoError(t, in.ingest(ctx, makeEvents(quiet+1, backlog, chats), 1000))
	start := time.Now()
	_, err = db.Exec(ctx, `WITH r AS (UPDATE targets SET paused = false, paused_at = NULL, probe_at = '-infinity' WHERE url = $1)
		SELECT pg_notify('webhook_deliveries', '')`, url)
	require.NoError(t, err)
	require.True(t, rc.waitCount("/hook", quiet+backlog, 60*time.Second), "%d of %d delivered", rc.count("/hook")-quiet, backlog)
	drained := time.Since(start)
	require.Eventually(t, func() bool { return deliveryStatuses(t, db)["pending"] == 0 }, 10*time.Second, 10*time.Millisecond)
	// Its database sessions end with it, and report their statistics.
	p.stop()
	reads := indexReads(t, db)
	t.Logf("drained %d in %.2fs (%.0f/s); index tuples read per delivery: %v", backlog, drained.Seconds(),
		backlog/drained.Seconds(), perDelivery(reads, backlog))
	// What delivering needs is a few index entries per delivery (claim,
	// lane, record); 50 leaves room for any sane plan, and none that reads
	// the backlog per batch.
	var total int64
	worst := ""
	for name, n := range reads {
		total += n
		if worst == "" || n > reads[worst] {
			worst = name
		}
	}
	require.Less(t, float64(total)/backlog, 50.0,
		"%.0f index entries of deliveries read per delivery while a backlog of %d drained, %.0f of them through %s: some statement reads the backlog for every batch",
		float64(total)/backlog, backlog, float64(reads[worst])/backlog, worst)
	// Nor rows read by sequential scans, which the index reads above would
	// not show: a plan made from those statistics may scan the table
	// instead. The test's own count of statuses (deliveryStatuses) reads it
	// whole a few times.
	var seqRows int64
	require.NoError(t, db.QueryRow(ctx, `SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'deliveries'`).Scan(&seqRows))
	t.Logf("rows of deliveries read by sequential scans: %.1f per delivery", float64(seqRows)/backlog)
	require.Less(t, float64(seqRows)/backlog, 10.0,
		"%.0f rows of deliveries read by sequential scans per delivery while a backlog of %d drained: some statement scans the table",
		float64(seqRows)/backlog, backlog)
}

// indexReads are the index tuples read through each index of deliveries,
// once the statistics of the sessions that read them are in.
func indexReads(t *testing.T, db *pgxpool.Pool) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.Eventually(t, func() bool {
		rows, err := db.Query(context.Background(), `SELECT indexrelname, idx_tup_read FROM pg_stat_user_indexes WHERE relname = 'deliveries'`)
		require.NoError(t, err)
		type row struct {
			Name  string
			Reads int64
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		require.NoError(t, err)
		var total int64
		for _, r := range got {
			out[r.Name] = r.Reads
			total += r.Reads
		}
		return total > 0
	}, 5*time.Second, 100*time.Millisecond)
	return out
}

func perDelivery(reads map[string]int64, n int) map[string]string {
	out := map[string]string{}
	for k, v := range reads {
		if v > 0 {
			out[k] = fmt.Sprintf("%.1f", float64(v)/float64(n))
		}
	}
	return out
}
