package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
	"switchboard.dev/services/webhooks/migrations"
)

const lease = time.Minute

// queued inserts n deliveries of one subscription's lane, in event order.
func queued(t *testing.T, db *pgxpool.Pool, sub string, lane int64, n int) {
	t.Helper()
	for range n {
		_, err := db.Exec(context.Background(), `WITH e AS (
				INSERT INTO events (id, company_id, connection_id, chat_id, event_type, payload, occurred_at)
				VALUES (gen_random_uuid(), 1, 1, $2, 'messages.create', '{}', now()) RETURNING id, seq)
			INSERT INTO deliveries (event_id, subscription_id, url, lane, seq)
			SELECT e.id, s.id, s.url, $2, e.seq FROM e, subscriptions s WHERE s.id = $1`, sub, lane)
		require.NoError(t, err)
	}
}

func subscription(t *testing.T, db *pgxpool.Pool, url string) string {
	t.Helper()
	id := uuid.NewString()
	_, err := db.Exec(context.Background(), `INSERT INTO subscriptions (id, company_id, connection_id, url, events, secret)
		VALUES ($1, 1, 1, $2, '{messages.create}', 'whsec_c2VjcmV0')`, id, url)
	require.NoError(t, err)
	return id
}

func sent(a domain.Attempt, res domain.Result) app.Recording {
	return app.Recording{Attempt: a, Result: res, Decision: domain.Decide(a, res, []time.Duration{time.Minute})}
}

func batch(chain int, unsent []domain.Attempt, recs ...app.Recording) app.Batch {
	return app.Batch{Sent: recs, Unsent: unsent, Chain: chain, Lease: lease, PauseAfter: 5, Probes: []time.Duration{time.Minute}}
}

// TestRecordGroup: the batches of several workers recorded in one
// transaction each get their own lane's next deliveries (a lane whose next
// head is locked elsewhere gets none; the others are not held back by it),
// their results, and their URLs' health. A run's head alone is claimed;
// the rest of the run are held by its claim: recorded only with their
// head, nothing to release, and nothing recorded when the head's claim
// was taken by another holder.
func TestRecordGroup(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ok, down := "https://ok.example/hook", "https://down.example/hook"
	s1, s2 := subscription(t, db, ok), subscription(t, db, down)
	queued(t, db, s1, 1, 5) // lane A
	queued(t, db, s2, 2, 3) // lane B
	queued(t, db, s1, 3, 3) // lane C

	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 3, "one head per lane")
	head := map[int64]domain.Attempt{}
	for _, h := range heads {
		head[h.Lane] = h
	}
	seqs := func(as []domain.Attempt) []int64 {
		var out []int64
		for _, a := range as {
			out = append(out, a.Seq)
		}
		return out
	}
	laneSeqs := func(sub string, lane int64) []int64 {
		rows, err := db.Query(ctx, `SELECT seq FROM deliveries WHERE subscription_id = $1 AND lane = $2 ORDER BY seq`, sub, lane)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return out
	}
	leased := func() []int64 {
		rows, err := db.Query(ctx, `SELECT seq FROM deliveries WHERE claimed_until > now() ORDER BY seq`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return out
	}
	a, b, c := laneSeqs(s1, 1), laneSeqs(s2, 2), laneSeqs(s1, 3)

	// Another holder has lane C's next delivery locked: C's chain takes
	// nothing; A's and B's are not held back.
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM deliveries WHERE seq = $1 FOR UPDATE`, c[1])
	require.NoError(t, err)

	delivered := domain.Result{Outcome: domain.Delivered, Status: 200, Duration: time.Millisecond}
	failed := domain.Result{Outcome: domain.Unreachable, Status: 500, Duration: time.Millisecond}
	next, err := q.Record(ctx, []app.Batch{
		batch(app.LaneBatch, nil, sent(head[1], delivered)),
		batch(app.LaneBatch, nil, sent(head[2], failed)),
		batch(app.LaneBatch, nil, sent(head[3], delivered)),
	})
	require.NoError(t, err)
	require.Len(t, next, 3)
	require.Equal(t, a[1:], seqs(next[0]), "lane A: the rest of the lane")
	require.Equal(t, b[1:3], seqs(next[1]), "lane B: the rest, though its head failed")
	require.Empty(t, next[2], "lane C: its next head is locked elsewhere")
	require.NoError(t, tx.Rollback(ctx))
	for _, run := range next[:2] {
		require.Zero(t, run[0].Head, "a run's head is claimed")
		require.NotEmpty(t, run[0].Token)
		for _, r := range run[1:] {
			require.Equal(t, []any{run[0].ID, run[0].Token}, []any{r.Head, r.Token}, "the rest are held by the head's claim")
		}
	}
	require.Equal(t, []int64{a[1], b[1]}, leased(), "only the runs' heads are leased")

	status := func(seq int64) (st string, first bool, attempts int) {
		require.NoError(t, db.QueryRow(ctx, `SELECT status, first, attempt FROM deliveries WHERE seq = $1`, seq).Scan(&st, &first, &attempts))
		return
	}
	st, first, n := status(a[0])
	require.Equal(t, []any{"succeeded", false, 1}, []any{st, first, n})
	st, first, n = status(b[0])
	require.Equal(t, []any{"pending", false, 1}, []any{st, first, n}, "a failed first attempt goes to the retry path")
	st, _, _ = status(c[0])
	require.Equal(t, "succeeded", st)
	var failures int
	require.NoError(t, db.QueryRow(ctx, `SELECT failures FROM targets WHERE url = $1`, down).Scan(&failures))
	require.Equal(t, 1, failures)
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM targets WHERE url = $1 AND failures > 0`, ok).Scan(&failures))
	require.Zero(t, failures)

	// The second round: A's first two succeed and its last two were not
	// sent (the lease ran short), the chain asked for; B's first succeeds
	// and the second goes unsent. The rest of a run hold no lease, so
	// what was not sent needs no release: A's chain goes on from it, and
	// B's is its lane's head again.
	next, err = q.Record(ctx, []app.Batch{
		batch(app.LaneBatch, next[0][2:], sent(next[0][0], delivered), sent(next[0][1], delivered)),
		batch(0, next[1][1:], sent(next[1][0], delivered)),
	})
	require.NoError(t, err)
	require.Equal(t, a[3:], seqs(next[0]), "lane A goes on from what was not sent")
	require.Empty(t, next[1])
	require.NoError(t, db.QueryRow(ctx, `SELECT failures FROM targets WHERE url = $1`, down).Scan(&failures))
	require.Zero(t, failures, "a success clears the URL's failures")
	again, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	var got []int64
	for _, h := range again {
		got = append(got, h.Seq)
	}
	require.ElementsMatch(t, []int64{b[2], c[1]}, got, "B's unsent delivery is its head again; C's next is claimable; A's run is held")

	// A run whose head's lease another holder took records nothing, head
	// or rest, and its chain takes nothing that holder has.
	stale := next[0]
	_, err = db.Exec(ctx, `UPDATE deliveries SET claim_token = gen_random_uuid() WHERE id = $1`, stale[0].ID)
	require.NoError(t, err)
	next, err = q.Record(ctx, []app.Batch{batch(app.LaneBatch, nil, sent(stale[0], delivered), sent(stale[1], delivered))})
	require.NoError(t, err)
	require.Empty(t, next[0], "the lane's head is held by the other holder")
	for _, a := range stale {
		st, _, n = status(a.Seq)
		require.Equal(t, []any{"pending", 0}, []any{st, n}, "delivery %d", a.Seq)
	}

	// The log has a row for each result recorded (3, then 3), with its
	// answer, and none for the discarded ones.
	var rows, staleRows, failedRows int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE delivery_id = ANY ($1)),
			count(*) FILTER (WHERE response_status = 500 AND status = 'pending' AND attempt = 1 AND next_attempt_at IS NOT NULL)
		FROM delivery_log`, []int64{stale[0].ID, stale[1].ID}).Scan(&rows, &staleRows, &failedRows))
	require.Equal(t, []int{6, 0, 1}, []int{rows, staleRows, failedRows})
}

// TestRetentionLeavesHeldRuns: the retention gives up what waited too long
// on the ordered path, but not a run in flight: the rest of a run hold no
// lease of their own, their head's claim holds them, and a worker may be
// sending them.
func TestRetentionLeavesHeldRuns(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sub := subscription(t, db, "https://ok.example/hook")
	queued(t, db, sub, 1, 3)
	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 1)
	next, err := q.Record(ctx, []app.Batch{batch(app.LaneBatch, nil, sent(heads[0], domain.Result{Outcome: domain.Delivered, Status: 200}))})
	require.NoError(t, err)
	require.Len(t, next[0], 2)
	require.Equal(t, next[0][0].ID, next[0][1].Head)
	_, err = db.Exec(ctx, `UPDATE deliveries SET created_at = now() - interval '90 minutes'`)
	require.NoError(t, err)

	expired, err := q.Expire(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, expired, "the run is in flight")
	// Its result still counts.
	_, err = q.Record(ctx, []app.Batch{batch(0, nil, sent(next[0][0], domain.Result{Outcome: domain.Delivered, Status: 200}),
		sent(next[0][1], domain.Result{Outcome: domain.Delivered, Status: 200}))})
	require.NoError(t, err)
	var succeeded int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'succeeded'`).Scan(&succeeded))
	require.Equal(t, 3, succeeded)
}

// TestRetentionKeeps: a finished delivery is kept until twice the
// retention after it was taken in (at least the retention after it
// finished: it waits at most the retention), its event three times the
// retention after it was taken in (by when every delivery of it is gone);
// neither needs an index of its own. What waits stays.
func TestRetentionKeeps(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sub := subscription(t, db, "http://127.0.0.1:9/ok")
	queued(t, db, sub, 1, 2)
	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 1)
	_, err = q.Record(ctx, []app.Batch{batch(0, nil, sent(heads[0], domain.Result{Outcome: domain.Delivered, Status: 200}))})
	require.NoError(t, err)
	done := heads[0]
	kept := func() (deliveries, events []int64) {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT seq FROM deliveries ORDER BY seq`)
		require.NoError(t, err)
		deliveries, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		rows, err = db.Query(ctx, `SELECT seq FROM events ORDER BY seq`)
		require.NoError(t, err)
		events, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return deliveries, events
	}
	age := func(seq int64, ago string) {
		t.Helper()
		_, err := db.Exec(ctx, `UPDATE events SET received_at = now() - $2::interval WHERE seq = $1`, seq, ago)
		require.NoError(t, err)
		_, err = db.Exec(ctx, `UPDATE deliveries SET created_at = now() - $2::interval WHERE seq = $1`, seq, ago)
		require.NoError(t, err)
	}
	expire := func() {
		t.Helper()
		_, err := q.Expire(ctx, time.Hour)
		require.NoError(t, err)
	}
	all := []int64{done.Seq, done.Seq + 1}

	// The succeeded one taken in 1 h 50 min ago: kept (a retention of an
	// hour).
	age(done.Seq, "1 hour 50 minutes")
	expire()
	d, e := kept()
	require.Equal(t, [][]int64{all, all}, [][]int64{d, e})
	// 2 h 10 min ago: the delivery goes, the event stays.
	age(done.Seq, "2 hours 10 minutes")
	expire()
	d, e = kept()
	require.Equal(t, [][]int64{all[1:], all}, [][]int64{d, e})
	// 3 h 10 min ago: the event goes too.
	age(done.Seq, "3 hours 10 minutes")
	expire()
	d, e = kept()
	require.Equal(t, [][]int64{all[1:], all[1:]}, [][]int64{d, e})

	// The other still waits (for 59 minutes, so not given up): it and its
	// event stay, and a failed delivery behind it, taken in 2 h 10 min ago,
	// goes all the same.
	age(all[1], "59 minutes")
	queued(t, db, sub, 2, 1)
	later := all[1] + 1
	_, err = db.Exec(ctx, `UPDATE deliveries SET status = 'failed', first = false, finished_at = now() WHERE seq = $1`, later)
	require.NoError(t, err)
	age(later, "2 hours 10 minutes")
	expire()
	d, e = kept()
	require.Equal(t, [][]int64{{all[1]}, {all[1], later}}, [][]int64{d, e})
}

// TestRecordMovedRow: a result is written where its claim left the row;
// one whose row was rewritten since (a URL change moves what waits, held
// or not) is found by its id, and one whose claim another holder took is
// not recorded either way.
func TestRecordMovedRow(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sub := subscription(t, db, "http://127.0.0.1:9/old")
	queued(t, db, sub, 1, 1)
	queued(t, db, sub, 2, 1)
	queued(t, db, sub, 3, 1)
	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 3)
	moved, stale, kept := heads[0], heads[1], heads[2]
	var before, after string
	require.NoError(t, db.QueryRow(ctx, `SELECT ctid::text FROM deliveries WHERE id = $1`, moved.ID).Scan(&before))
	require.Equal(t, moved.Row, before, "the claim says where it left the row")
	_, err = db.Exec(ctx, `UPDATE deliveries SET url = 'http://127.0.0.1:9/new' WHERE id = $1`, moved.ID)
	require.NoError(t, err)
	require.NoError(t, db.QueryRow(ctx, `SELECT ctid::text FROM deliveries WHERE id = $1`, moved.ID).Scan(&after))
	require.NotEqual(t, before, after, "the URL change rewrote the row elsewhere")
	_, err = db.Exec(ctx, `UPDATE deliveries SET claim_token = gen_random_uuid() WHERE id = $1`, stale.ID)
	require.NoError(t, err)

	ok := domain.Result{Outcome: domain.Delivered, Status: 200}
	_, err = q.Record(ctx, []app.Batch{batch(0, nil, sent(moved, ok)), batch(0, nil, sent(stale, ok)), batch(0, nil, sent(kept, ok))})
	require.NoError(t, err)
	rows, err := db.Query(ctx, `SELECT d.id, d.status, count(l.*) FROM deliveries d LEFT JOIN delivery_log l ON l.delivery_id = d.id
		GROUP BY d.id, d.status ORDER BY d.id`)
	require.NoError(t, err)
	type state struct {
		ID     int64
		Status string
		Rows   int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[state])
	require.NoError(t, err)
	require.Equal(t, []state{{moved.ID, "succeeded", 1}, {stale.ID, "pending", 0}, {kept.ID, "succeeded", 1}}, got)
}

// TestClaimReadsEventWhereWritten: a claim reads each payload where the
// intake wrote its event (event_at), and only if the row there is that
// event: one moved since (a redelivery renews it), a place now holding
// another event, and no place at all (a ping, a redelivery) are found by
// the event's id. On every claim path: lane heads, a lane's run claimed by
// the chain, retries. Without the id check the second delivery would carry
// the other event's payload; without the fallback the first and third
// would not be claimed.
func TestClaimReadsEventWhereWritten(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	repo := postgres.New(db)
	subscription(t, db, "https://ok.example/hook")
	chat := int64(7)
	var events []domain.Event
	for i := range 8 {
		events = append(events, domain.Event{
			ID: uuid.NewString(), CompanyID: 1, ConnectionID: 1, ChatID: &chat, Type: "messages.create",
			Payload: fmt.Appendf(nil, `{"n":%d}`, i), OccurredAt: time.Now(),
		})
	}
	require.NoError(t, repo.IngestEvents(ctx, events, nil))
	payloadOf := map[string]string{}
	for _, e := range events {
		payloadOf[e.ID] = string(e.Payload)
	}
	var hinted int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM deliveries d JOIN events e ON e.ctid = d.event_at AND e.id = d.event_id`).Scan(&hinted))
	require.Equal(t, len(events), hinted, "the intake notes where each event went")

	// Spoil the hints of deliveries 0, 1 and 2 (the head, the chain's
	// first), and of 5, 6 and 7 (retries below): moved, another event's
	// place, none.
	spoil := func(i int) {
		t.Helper()
		var err error
		switch i % 3 {
		case 0:
			_, err = db.Exec(ctx, `UPDATE events SET received_at = now() WHERE id = $1`, events[i].ID)
		case 1:
			_, err = db.Exec(ctx, `UPDATE deliveries SET event_at = (SELECT ctid FROM events WHERE id = $2) WHERE event_id = $1`,
				events[i].ID, events[len(events)-1-i].ID)
		case 2:
			_, err = db.Exec(ctx, `UPDATE deliveries SET event_at = NULL WHERE event_id = $1`, events[i].ID)
		}
		require.NoError(t, err)
	}
	for _, i := range []int{0, 1, 2, 5, 6, 7} {
		spoil(i)
	}
	check := func(as []domain.Attempt) {
		t.Helper()
		for _, a := range as {
			require.Equal(t, payloadOf[a.EventID], string(a.Payload), "delivery %d", a.ID)
		}
	}

	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 1)
	check(heads)
	next, err := q.Record(ctx, []app.Batch{batch(app.LaneBatch, nil,
		sent(heads[0], domain.Result{Outcome: domain.Delivered, Status: 200}))})
	require.NoError(t, err)
	require.Len(t, next[0], len(events)-1, "the chain takes the rest of the lane")
	check(next[0])

	// The rest fail and go to the retry path, due at once.
	failed := domain.Result{Outcome: domain.Unreachable, Status: 500}
	var recs []app.Recording
	for _, a := range next[0] {
		recs = append(recs, sent(a, failed))
	}
	_, err = q.Record(ctx, []app.Batch{batch(0, nil, recs[0]), batch(0, nil, recs[1:]...)})
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now() - interval '1 second' WHERE status = 'pending'`)
	require.NoError(t, err)
	retries, err := q.ClaimRetries(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, retries, len(events)-1)
	check(retries)
}

// TestClaimFirstPassesOverHeldLanes: ClaimFirst takes no head of a lane
// the caller says it holds (its worker is delivering that lane's run),
// and still takes the others'.
func TestClaimFirstPassesOverHeldLanes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s1, s2 := subscription(t, db, "https://one.example/hook"), subscription(t, db, "https://two.example/hook")
	queued(t, db, s1, 1, 2)
	queued(t, db, s1, 2, 2)
	queued(t, db, s2, 1, 2) // the same chat, another subscription: another lane

	heads, err := q.ClaimFirst(ctx, 10, lease, app.Lane{Subscription: s1, Lane: 1})
	require.NoError(t, err)
	var got []app.Lane
	for _, h := range heads {
		got = append(got, app.Lane{Subscription: h.SubscriptionID, Lane: h.Lane})
	}
	require.ElementsMatch(t, []app.Lane{{Subscription: s1, Lane: 2}, {Subscription: s2, Lane: 1}}, got)
	heads, err = q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 1, "the lane passed over is taken once not held")
	require.Equal(t, app.Lane{Subscription: s1, Lane: 1}, app.Lane{Subscription: heads[0].SubscriptionID, Lane: heads[0].Lane})
}

// TestIngestAgainPlansNothingTwice: a batch handed over again, whole or in
// part and mixed with new events, stores each event once and plans one
// delivery per event and subscription, however often it comes; so does a
// batch naming an event twice. The intake's first statement has no
// conflict handling (IngestEvents): without its second way, the second
// call fails.
func TestIngestAgainPlansNothingTwice(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	repo := postgres.New(db)
	sub := subscription(t, db, "https://ok.example/hook")
	chat := int64(3)
	event := func(n int) domain.Event {
		return domain.Event{ID: uuid.NewString(), CompanyID: 1, ConnectionID: 1, ChatID: &chat, Type: "messages.create",
			Payload: fmt.Appendf(nil, `{"n":%d}`, n), OccurredAt: time.Now()}
	}
	a := []domain.Event{event(1), event(2), event(3)}
	require.NoError(t, repo.IngestEvents(ctx, a, nil))
	require.NoError(t, repo.IngestEvents(ctx, a, nil))
	fresh := event(4)
	require.NoError(t, repo.IngestEvents(ctx, []domain.Event{a[1], fresh, a[2]}, nil))
	twice := event(5)
	require.NoError(t, repo.IngestEvents(ctx, []domain.Event{twice, twice}, nil))

	rows, err := db.Query(ctx, `SELECT e.id::text, count(d.id) FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
		AND d.subscription_id = $1 GROUP BY e.id, e.seq ORDER BY e.seq`, sub)
	require.NoError(t, err)
	type planned struct {
		Event      string
		Deliveries int
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[planned])
	require.NoError(t, err)
	require.Equal(t, []planned{{a[0].ID, 1}, {a[1].ID, 1}, {a[2].ID, 1}, {fresh.ID, 1}, {twice.ID, 1}}, got)
	var inOrder bool
	require.NoError(t, db.QueryRow(ctx, `SELECT bool_and(d.seq = e.seq) AND count(DISTINCT d.seq) = 5 FROM deliveries d
		JOIN events e ON e.id = d.event_id`).Scan(&inOrder))
	require.True(t, inOrder, "each delivery in its event's order")
}

// TestRecordLogsWhatWasNot: the log keeps an attempt without an answer
// with no response_status, and one without an error with no error (NULL,
// as the list shows them: null), though the recording passes them as 0
// and "" in plain arrays.
func TestRecordLogsWhatWasNot(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	q := postgres.NewQueue(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := subscription(t, db, "https://log.example/hook")
	queued(t, db, s, 1, 1)
	queued(t, db, s, 2, 1)
	queued(t, db, s, 3, 1)
	heads, err := q.ClaimFirst(ctx, 10, lease)
	require.NoError(t, err)
	require.Len(t, heads, 3)
	byLane := map[int64]domain.Attempt{}
	for _, h := range heads {
		byLane[h.Lane] = h
	}
	_, err = q.Record(ctx, []app.Batch{
		batch(0, nil, sent(byLane[1], domain.Result{Outcome: domain.Delivered, Status: 204, Duration: time.Millisecond})),
		batch(0, nil, sent(byLane[2], domain.Result{Outcome: domain.Unreachable, Error: "dial tcp: connection refused",
			Cause: domain.CauseRefused, Duration: 2 * time.Millisecond})),
		batch(0, nil, sent(byLane[3], domain.Result{Outcome: domain.Unreachable, Status: 502, Error: "answered 502",
			Duration: 3 * time.Millisecond})),
	})
	require.NoError(t, err)
	type logged struct {
		Answer *int32
		Error  *string
	}
	got := map[int64]logged{}
	for lane, a := range byLane {
		var l logged
		require.NoError(t, db.QueryRow(ctx, `SELECT response_status, error FROM delivery_log WHERE delivery_id = $1`, a.ID).
			Scan(&l.Answer, &l.Error))
		got[lane] = l
	}
	answer := func(n int32) *int32 { return &n }
	text := func(s string) *string { return &s }
	require.Equal(t, map[int64]logged{
		1: {Answer: answer(204)},
		2: {Error: text("dial tcp: connection refused")},
		3: {Answer: answer(502), Error: text("answered 502")},
	}, got)
}
