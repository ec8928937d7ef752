package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/outbox"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
)

// The table as the package comment gives it.
var migrations = fstest.MapFS{"0001_outbox.sql": {Data: []byte(`-- +goose Up
CREATE TABLE outbox (
    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           uuid        NOT NULL DEFAULT gen_random_uuid(),
    topic        text        NOT NULL,
    company_id   bigint      NOT NULL,
    event_type   text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (topic, seq) WHERE published_at IS NULL;
`)}}

// waitFor bounds how long a test waits for the relay to act; a correct
// relay acts in milliseconds, so only a broken one comes near it.
const waitFor = 10 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder is a publisher that keeps what it was handed, and fails while
// told to.
type recorder struct {
	mu       sync.Mutex
	got      []outbox.Message
	calls    int
	failNext int
}

func (r *recorder) Publish(_ context.Context, batch []outbox.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.failNext > 0 {
		r.failNext--
		return errors.New("receiver down")
	}
	r.got = append(r.got, batch...)
	return nil
}

func (r *recorder) companies() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int64, len(r.got))
	for i, m := range r.got {
		out[i] = m.CompanyID
	}
	return out
}

// write commits one message per company id, each in its own transaction.
func write(t *testing.T, db *pgxpool.Pool, topic string, companies ...int64) {
	t.Helper()
	for _, c := range companies {
		require.NoError(t, postgres.WithTx(context.Background(), db, func(tx pgx.Tx) error {
			return outbox.Write(context.Background(), tx, topic, c, "things.happened", map[string]any{"company_id": c})
		}))
	}
}

// start runs a relay until the test ends.
func start(t *testing.T, r *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// left counts topic's rows, published or not: the relay deletes what it
// publishes, so none left means every one handed over and none kept.
func left(t *testing.T, db *pgxpool.Pool, topic string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox WHERE topic = $1`, topic).Scan(&n))
	return n
}

// Without notifications the relay would wait for its hour-long poll: every
// test here that sees a message arrive sees LISTEN/NOTIFY work.
var slowPoll = outbox.Options{Poll: time.Hour, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}

func TestRelayPublishesCommittedMessagesInOrder(t *testing.T) {
	db := pgtest.New(t, migrations)
	// Written before the relay starts: found on its first pass.
	write(t, db, "a", 1, 2)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))

	// A rolled-back change takes its message with it.
	err := postgres.WithTx(context.Background(), db, func(tx pgx.Tx) error {
		require.NoError(t, outbox.Write(context.Background(), tx, "a", 99, "things.happened", map[string]any{}))
		return errors.New("the change failed")
	})
	require.Error(t, err)
	write(t, db, "a", 3, 4, 5)

	require.Eventually(t, func() bool { return len(rec.companies()) == 5 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{1, 2, 3, 4, 5}, rec.companies(), "oldest first, the rolled back one never")
	// Deleted in the transaction that read them, just after Publish.
	require.Eventually(t, func() bool { return left(t, db, "a") == 0 }, waitFor, 5*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, m := range rec.got {
		require.Equal(t, "a", m.Topic)
		require.Equal(t, "things.happened", m.Type)
		require.JSONEq(t, fmt.Sprintf(`{"company_id":%d}`, i+1), string(m.Payload))
		require.NotEmpty(t, m.ID)
		require.False(t, m.CreatedAt.IsZero())
		if i > 0 {
			require.Greater(t, m.Seq, rec.got[i-1].Seq)
		}
	}
}

// TestRelayLeavesWhatAnOlderReleaseMarked: a row an older release's relay
// marked published (it ran beside this one during a rolling deploy) was
// handed over by it, and is not handed over again.
func TestRelayLeavesWhatAnOlderReleaseMarked(t *testing.T) {
	db := pgtest.New(t, migrations)
	write(t, db, "a", 1)
	_, err := db.Exec(context.Background(), `UPDATE outbox SET published_at = now()`)
	require.NoError(t, err)
	write(t, db, "a", 2)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	require.Eventually(t, func() bool { return left(t, db, "a") == 1 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{2}, rec.companies())
}

// TestRelayRetriesAFailingReceiver: while the receiver fails nothing is
// deleted or skipped; once it answers, everything arrives in
// order, and the failed batch is handed over again whole.
func TestRelayRetriesAFailingReceiver(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{failNext: 4}
	write(t, db, "a", 1, 2, 3)
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	require.Eventually(t, func() bool { return len(rec.companies()) == 3 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{1, 2, 3}, rec.companies())
	rec.mu.Lock()
	require.Equal(t, 5, rec.calls, "four failures, then the same batch once more")
	rec.mu.Unlock()
	// Deleted in the transaction that read them, just after Publish.
	require.Eventually(t, func() bool { return left(t, db, "a") == 0 }, waitFor, 5*time.Millisecond)
}

// TestRelayTopicsAreIndependent: a topic whose receiver is down holds back
// only itself.
func TestRelayTopicsAreIndependent(t *testing.T) {
	db := pgtest.New(t, migrations)
	down := &recorder{failNext: 1 << 30}
	up := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("down", down).Route("up", up))
	write(t, db, "down", 1)
	write(t, db, "up", 2, 3)
	require.Eventually(t, func() bool { return len(up.companies()) == 2 }, waitFor, 5*time.Millisecond)
	require.Equal(t, 1, left(t, db, "down"))
	require.Empty(t, down.companies())
}

// TestRelayReplicas: two relays (two replicas of a service) on one outbox
// hand every message over once, in order, between them.
func TestRelayReplicas(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	opts := slowPoll
	opts.Batch = 3
	start(t, outbox.New(db, quiet, opts).Route("a", rec))
	start(t, outbox.New(db, quiet, opts).Route("a", rec))
	var want []int64
	for i := range int64(40) {
		want = append(want, i)
		write(t, db, "a", i)
	}
	require.Eventually(t, func() bool { return len(rec.companies()) >= 40 }, waitFor, 5*time.Millisecond)
	require.Equal(t, want, rec.companies(), "each once, in commit order")
}

// batcher is a recorder that takes batches of its own size.
type batcher struct {
	recorder
	max   int
	sizes []int
}

func (b *batcher) Publish(ctx context.Context, batch []outbox.Message) error {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(batch))
	b.mu.Unlock()
	return b.recorder.Publish(ctx, batch)
}

func (b *batcher) MaxBatch() int { return b.max }

func (b *batcher) batchSizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// TestRelayPublisherBatch: a Batcher is handed batches of its own size,
// other topics of the same relay the relay's; all in order.
func TestRelayPublisherBatch(t *testing.T) {
	db := pgtest.New(t, migrations)
	big := &batcher{max: 5}
	small := &recorder{}
	var want []int64
	for i := range int64(12) {
		want = append(want, i)
		write(t, db, "big", i)
		write(t, db, "small", i)
	}
	opts := slowPoll
	opts.Batch = 2
	start(t, outbox.New(db, quiet, opts).Route("big", big).Route("small", small))
	require.Eventually(t, func() bool { return len(big.companies()) == 12 && len(small.companies()) == 12 }, waitFor, 5*time.Millisecond)
	require.Equal(t, want, big.companies())
	require.Equal(t, want, small.companies())
	require.Equal(t, []int{5, 5, 2}, big.batchSizes(), "the publisher's batch size")
	require.Equal(t, 6, small.calls, "the relay's batch size")
}

func (r *recorder) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// TestRelaySpacesPassesInAStream: messages committed one after the other,
// each waking the relay, go out in a few passes Interval apart, not a pass
// each; all of them, in order.
func TestRelaySpacesPassesInAStream(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	opts := slowPoll
	opts.Interval = 500 * time.Millisecond
	start(t, outbox.New(db, quiet, opts).Route("a", rec))
	// Two messages, the second written once the first is out (after the
	// relay's first pass): it comes by a notification, so the relay is
	// listening before the stream starts.
	want := []int64{-2, -1}
	write(t, db, "a", -2)
	require.Eventually(t, func() bool { return len(rec.companies()) == 1 }, waitFor, 5*time.Millisecond)
	write(t, db, "a", -1)
	require.Eventually(t, func() bool { return len(rec.companies()) == 2 }, waitFor, 5*time.Millisecond)
	before := rec.callCount()

	for i := range int64(60) {
		want = append(want, i)
		write(t, db, "a", i)
		time.Sleep(5 * time.Millisecond) // a stream, not a burst the first wake-up takes whole
	}
	require.Eventually(t, func() bool { return len(rec.companies()) == 62 }, waitFor, 5*time.Millisecond)
	require.Equal(t, want, rec.companies())
	// 60 commits 5ms apart take under a second here, so two or three
	// passes (or a few more on a loaded machine); a pass per wake-up made
	// one per message or two.
	passes := rec.callCount() - before
	t.Logf("%d passes for 60 messages", passes)
	require.LessOrEqual(t, passes, 8, "passes for 60 messages")
}

// TestRelayIntervalAfterPartialPassOnly: full batches follow each other at
// once, and the first pass is not delayed; only a pass that found less than
// a full batch holds the next one back for Interval.
func TestRelayIntervalAfterPartialPassOnly(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	opts := slowPoll
	opts.Batch, opts.Interval = 5, time.Hour
	write(t, db, "a", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	start(t, outbox.New(db, quiet, opts).Route("a", rec))
	require.Eventually(t, func() bool { return len(rec.companies()) == 12 }, waitFor, 5*time.Millisecond,
		"5 + 5 + 2 without waiting the hour")
	require.Equal(t, 3, rec.callCount())

	// The pass of 2 was partial: a message now waits for the hour.
	write(t, db, "a", 12)
	require.Never(t, func() bool { return len(rec.companies()) > 12 }, 300*time.Millisecond, 10*time.Millisecond)
	require.Equal(t, 1, left(t, db, "a"))
}

// TestRelayLateCommit: a message whose transaction took its seq first but
// committed last is not skipped: it goes out when it commits, after the
// later seqs that committed before it. (Order holds between transactions
// that are themselves ordered, such as two changes of one locked row.)
func TestRelayLateCommit(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	ctx := context.Background()
	slow, err := db.Begin(ctx)
	require.NoError(t, err)
	defer slow.Rollback(ctx) //nolint:errcheck // committed below
	require.NoError(t, outbox.Write(ctx, slow, "a", 1, "things.happened", map[string]any{}))
	write(t, db, "a", 2)
	require.Eventually(t, func() bool { return len(rec.companies()) == 1 }, waitFor, 5*time.Millisecond)
	require.NoError(t, slow.Commit(ctx))
	require.Eventually(t, func() bool { return len(rec.companies()) == 2 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{2, 1}, rec.companies())
	require.Eventually(t, func() bool { return left(t, db, "a") == 0 }, waitFor, 5*time.Millisecond)
}

// TestRelayListensAgain: when its listening connection is cut, the relay
// reconnects, catches up with what was written meanwhile, and is woken by
// notifications again.
func TestRelayListensAgain(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	write(t, db, "a", 1)
	require.Eventually(t, func() bool { return len(rec.companies()) == 1 }, waitFor, 5*time.Millisecond)

	listener := func() int {
		var pid int
		err := db.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query ILIKE 'LISTEN%' ORDER BY backend_start DESC LIMIT 1`).Scan(&pid)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0
		}
		require.NoError(t, err)
		return pid
	}
	// The first message may be relayed by the start-up drain before the
	// listening connection is up: wait for it.
	var old int
	require.Eventually(t, func() bool { old = listener(); return old != 0 }, waitFor, 5*time.Millisecond)
	var cut bool
	require.NoError(t, db.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, old).Scan(&cut))
	require.True(t, cut)
	write(t, db, "a", 2)
	require.Eventually(t, func() bool { return len(rec.companies()) == 2 }, waitFor, 5*time.Millisecond)

	// Listening again on a new connection: a new message arrives without
	// the hour-long poll.
	require.Eventually(t, func() bool { p := listener(); return p != 0 && p != old }, waitFor, 5*time.Millisecond)
	write(t, db, "a", 3)
	require.Eventually(t, func() bool { return len(rec.companies()) == 3 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{1, 2, 3}, rec.companies())
}

func TestRelayWithoutRoutes(t *testing.T) {
	db := pgtest.New(t, migrations)
	require.Error(t, outbox.New(db, quiet, outbox.Options{}).Run(context.Background()))
}

// TestQueuedInABatch: a message queued in a transaction's batch is relayed
// like one written alone (its signal wakes the relay), and one whose batch
// failed is never relayed.
func TestQueuedInABatch(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	ctx := context.Background()
	for _, c := range []int64{1, 2} {
		require.NoError(t, postgres.WithTx(ctx, db, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`SELECT 1`)
			require.NoError(t, outbox.QueueMany(b, "a", []outbox.Entry{{CompanyID: c, Type: "things.happened", Payload: map[string]any{"company_id": c}}}))
			return tx.SendBatch(ctx, b).Close()
		}))
	}
	err := postgres.WithTx(ctx, db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		require.NoError(t, outbox.QueueMany(b, "a", []outbox.Entry{{CompanyID: 99, Type: "things.happened", Payload: map[string]any{}}}))
		b.Queue(`SELECT 1/0`)
		return tx.SendBatch(ctx, b).Close()
	})
	require.Error(t, err)
	require.Eventually(t, func() bool { return len(rec.companies()) == 2 }, waitFor, 5*time.Millisecond)
	// Deleted in the relay's transaction, which commits after Publish.
	require.Eventually(t, func() bool { return left(t, db, "a") == 0 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{1, 2}, rec.companies())
	var failed int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE company_id = 99`).Scan(&failed))
	require.Zero(t, failed, "the failed batch's message was written")
}

// TestQueuedManyInOrder: messages written by one QueueMany statement are
// relayed in the order given, with their payloads, among messages written
// alone before and after.
func TestQueuedManyInOrder(t *testing.T) {
	db := pgtest.New(t, migrations)
	rec := &recorder{}
	start(t, outbox.New(db, quiet, slowPoll).Route("a", rec))
	ctx := context.Background()
	write(t, db, "a", 1)
	require.NoError(t, postgres.WithTx(ctx, db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		var entries []outbox.Entry
		for _, c := range []int64{5, 2, 4, 3} {
			entries = append(entries, outbox.Entry{CompanyID: c, Type: "things.happened", Payload: map[string]any{"company_id": c}})
		}
		require.NoError(t, outbox.QueueMany(b, "a", entries))
		require.NoError(t, outbox.QueueMany(b, "a", nil))
		return tx.SendBatch(ctx, b).Close()
	}))
	write(t, db, "a", 6)
	require.Eventually(t, func() bool { return len(rec.companies()) == 6 }, waitFor, 5*time.Millisecond)
	require.Equal(t, []int64{1, 5, 2, 4, 3, 6}, rec.companies())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range rec.got {
		require.JSONEq(t, fmt.Sprintf(`{"company_id":%d}`, m.CompanyID), string(m.Payload))
	}
}
