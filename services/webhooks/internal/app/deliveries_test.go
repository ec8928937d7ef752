package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/webhooks/internal/adapters/postgres"
	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
	"switchboard.dev/services/webhooks/migrations"
)

func requireAPIError(t *testing.T, err error, want apierr.Def, msgAndArgs ...any) {
	t.Helper()
	e, ok := apierr.FromError(err)
	require.True(t, ok, "not an API error: %v", err)
	require.Equal(t, want.Code, e.Code, msgAndArgs...)
}

// listen holds a connection listening on the engine's channel; next
// reports whether a notification came within a second.
func listen(t *testing.T, db *pgxpool.Pool) (next func() bool) {
	ctx := context.Background()
	conn, err := db.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	_, err = conn.Exec(ctx, `LISTEN `+postgres.DeliveriesChannel)
	require.NoError(t, err)
	return func() bool {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		return err == nil && n.Channel == postgres.DeliveriesChannel
	}
}

// deliveryRow is what the engine reads of a delivery.
type deliveryRow struct {
	EventID, Subscription, URL, Status string
	Lane, Seq                          int64
	First                              bool
	Attempt                            int
	Due                                time.Time
}

func readDelivery(t *testing.T, db *pgxpool.Pool, id int64) deliveryRow {
	t.Helper()
	var r deliveryRow
	require.NoError(t, db.QueryRow(context.Background(), `SELECT event_id::text, subscription_id::text, url, status, lane, seq, first, attempt, next_attempt_at
		FROM deliveries WHERE id = $1`, id).Scan(&r.EventID, &r.Subscription, &r.URL, &r.Status, &r.Lane, &r.Seq, &r.First, &r.Attempt, &r.Due))
	return r
}

// TestPingAndRedeliver: a ping stores a webhooks.ping event (the compact
// envelope, no chat) and one delivery for that subscription only, on the
// retry path and due now, and wakes the engine; a redelivery copies the
// event, lane and order of a delivery to the subscription's current url
// as a new pending delivery, leaving the old one as it was; the log lists
// every attempt (each with its answer) and the deliveries not attempted
// yet, newest first, page by page.
func TestPingAndRedeliver(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	s := app.New(postgres.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})
	sub := func(company, conn int64, events ...string) domain.Subscription {
		w, err := s.Create(ctx, app.CreateCmd{CompanyID: company, ConnectionID: conn, URL: "http://127.0.0.1/" + uuid.NewString(), Events: events})
		require.NoError(t, err)
		return w
	}
	a := sub(1, 10, "messages.create")
	b := sub(1, 10, "messages.create") // the same connection and kind: the intake plans for both
	sub(2, 10, "messages.create")
	notified := listen(t, db)

	list, err := s.Deliveries(ctx, 1, a.ID, 0, 0)
	require.NoError(t, err)
	require.Empty(t, list)
	require.NotNil(t, list)

	before := time.Now()
	ping, err := s.Ping(ctx, 1, a.ID)
	require.NoError(t, err)
	require.True(t, notified(), "a ping wakes the engine")
	require.Equal(t, domain.PingEventType, ping.EventType)
	require.Equal(t, domain.StatusPending, ping.Status)
	require.Zero(t, ping.Attempt)
	require.Nil(t, ping.ResponseStatus)
	require.Nil(t, ping.Error)
	require.Nil(t, ping.DurationMS)
	require.NotNil(t, ping.NextAttemptAt)
	require.WithinDuration(t, before, *ping.NextAttemptAt, 5*time.Second)
	require.WithinDuration(t, before, ping.CreatedAt, 5*time.Second)

	var (
		company, conn, seq int64
		chat               *int64
		typ, payload       string
	)
	require.NoError(t, db.QueryRow(ctx, `SELECT company_id, connection_id, chat_id, event_type, payload::text, seq FROM events WHERE id = $1`,
		ping.EventID).Scan(&company, &conn, &chat, &typ, &payload, &seq))
	require.Equal(t, int64(1), company)
	require.Equal(t, int64(10), conn)
	require.Nil(t, chat)
	require.Equal(t, "webhooks.ping", typ)
	require.Equal(t, `{"company_id":1,"event_type":"webhooks.ping","event":{"webhook_id":"`+a.ID+`","connection_id":10}}`, payload)
	row := readDelivery(t, db, ping.ID)
	require.Equal(t, deliveryRow{EventID: ping.EventID, Subscription: a.ID, URL: a.URL, Status: "pending", Lane: 0, Seq: seq, First: false, Due: row.Due}, row)
	var planned int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE event_id = $1`, ping.EventID).Scan(&planned))
	require.Equal(t, 1, planned, "a ping goes to its subscription only")
	list, err = s.Deliveries(ctx, 1, b.ID, 0, 0)
	require.NoError(t, err)
	require.Empty(t, list)

	// An event of a chat, planned by the intake for both subscriptions.
	require.NoError(t, s.Ingest(ctx, []app.IncomingEvent{{ID: uuid.NewString(), CompanyID: 1, Type: "messages.create",
		Payload: envelope(1, 10, "messages.create", 77), OccurredAt: time.Now()}}))
	require.True(t, notified())
	list, err = s.Deliveries(ctx, 1, a.ID, 0, 0)
	require.NoError(t, err)
	require.Len(t, list, 2)
	msg := list[0]
	require.Equal(t, "messages.create", msg.EventType)
	require.Equal(t, ping, list[1])
	planned0 := readDelivery(t, db, msg.ID)
	require.True(t, planned0.First)
	require.Equal(t, int64(77), planned0.Lane)

	// The engine tries it, through its queue: a 500 after 120 ms, retried;
	// the retry a 503 after 80 ms, and the schedule (one retry) is used up.
	q := postgres.NewQueue(db, quietLog())
	retries := []time.Duration{time.Minute}
	record := func(a domain.Attempt, res domain.Result) {
		t.Helper()
		_, err := q.Record(ctx, []app.Batch{{
			Sent:  []app.Recording{{Attempt: a, Result: res, Decision: domain.Decide(a, res, retries)}},
			Lease: time.Minute, PauseAfter: 5, Probes: []time.Duration{time.Minute},
		}})
		require.NoError(t, err)
	}
	claimed, err := q.ClaimFirst(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 2, "the event's deliveries to both subscriptions")
	for _, c := range claimed {
		if c.ID == msg.ID {
			record(c, domain.Result{Outcome: domain.Unreachable, Status: 500, Error: "answered 500", Duration: 120 * time.Millisecond})
		}
	}
	// Its retry is due before the ping's (so claimed first).
	_, err = db.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = $1`, msg.ID)
	require.NoError(t, err)
	claimed, err = q.ClaimRetries(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, msg.ID, claimed[0].ID)
	record(claimed[0], domain.Result{Outcome: domain.Unreachable, Status: 503, Error: "answered 503", Duration: 80 * time.Millisecond})
	oldRow := readDelivery(t, db, msg.ID)

	// The subscription moved since: the redelivery goes to its new url.
	newURL := "http://127.0.0.1/moved"
	a, err = s.Update(ctx, 1, a.ID, &newURL, nil)
	require.NoError(t, err)
	notified() // whatever the move sent, so that the next is the redelivery's
	_, err = db.Exec(ctx, `UPDATE events SET received_at = now() - interval '2 days' WHERE id = $1`, msg.EventID)
	require.NoError(t, err)
	again, err := s.Redeliver(ctx, 1, a.ID, strconv.FormatInt(msg.ID, 10))
	require.NoError(t, err)
	var received time.Time
	require.NoError(t, db.QueryRow(ctx, `SELECT received_at FROM events WHERE id = $1`, msg.EventID).Scan(&received))
	require.WithinDuration(t, time.Now(), received, 5*time.Second,
		"a redelivery renews its event (the retention keeps an event by age alone)")
	require.True(t, notified(), "a redelivery wakes the engine")
	require.Greater(t, again.ID, msg.ID)
	require.Equal(t, msg.EventID, again.EventID)
	require.Equal(t, "messages.create", again.EventType)
	require.Equal(t, domain.StatusPending, again.Status)
	require.Zero(t, again.Attempt)
	require.Nil(t, again.ResponseStatus)
	require.NotNil(t, again.NextAttemptAt)
	row = readDelivery(t, db, again.ID)
	require.Equal(t, deliveryRow{EventID: msg.EventID, Subscription: a.ID, URL: newURL, Status: "pending", Lane: 77, Seq: planned0.Seq,
		First: false, Due: row.Due}, row)
	require.Equal(t, oldRow, readDelivery(t, db, msg.ID), "the old delivery is left as it was")
	// A redelivery of a redelivery (first = false rows may repeat a pair).
	again2, err := s.Redeliver(ctx, 1, a.ID, strconv.FormatInt(again.ID, 10))
	require.NoError(t, err)
	require.True(t, notified())

	// The log: a row per attempt, newest first, each with its own answer;
	// the delivery's id on both (what a redelivery takes).
	list, err = s.Deliveries(ctx, 1, a.ID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{again2.ID, again.ID, msg.ID, msg.ID, ping.ID}, ids(list))
	failed, retried := list[2], list[3]
	require.Equal(t, []any{2, domain.StatusFailed, 503, "answered 503", 80}, []any{failed.Attempt, failed.Status,
		*failed.ResponseStatus, *failed.Error, *failed.DurationMS})
	require.Nil(t, failed.NextAttemptAt, "next_attempt_at only while pending")
	require.Equal(t, []any{1, domain.StatusPending, 500, "answered 500", 120}, []any{retried.Attempt, retried.Status,
		*retried.ResponseStatus, *retried.Error, *retried.DurationMS})
	require.NotNil(t, retried.NextAttemptAt, "the retry it left due")
	require.WithinDuration(t, retried.CreatedAt.Add(time.Minute), *retried.NextAttemptAt, time.Second)
	require.True(t, failed.CreatedAt.After(retried.CreatedAt))
	for _, row := range list[2:4] {
		require.Equal(t, msg.EventID, row.EventID)
		require.Equal(t, "messages.create", row.EventType)
	}

	// Pages.
	for _, tc := range []struct {
		limit, offset int
		want          []int64
	}{
		{1, 0, []int64{again2.ID}},
		{2, 1, []int64{again.ID, msg.ID}},
		{2, 3, []int64{msg.ID, ping.ID}},
		{100, 4, []int64{ping.ID}},
		{0, 5, []int64{}},
		{0, 1000, []int64{}},
	} {
		list, err := s.Deliveries(ctx, 1, a.ID, tc.limit, tc.offset)
		require.NoError(t, err)
		require.Equal(t, tc.want, ids(list), "limit %d offset %d", tc.limit, tc.offset)
	}
}

func ids(list []domain.Delivery) []int64 {
	out := []int64{}
	for _, d := range list {
		out = append(out, d.ID)
	}
	return out
}

// TestDeliveriesNotFound: an unknown webhook (or another company's, or
// not a uuid) is 33000 on all three, checked before the delivery; a
// delivery of another subscription, an unknown one or an id that is not
// a canonical positive number is 33001; none of them writes or notifies.
func TestDeliveriesNotFound(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	s := app.New(postgres.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})
	mk := func(company int64) domain.Subscription {
		w, err := s.Create(ctx, app.CreateCmd{CompanyID: company, ConnectionID: 10, URL: "http://127.0.0.1/x", Events: []string{"messages.create"}})
		require.NoError(t, err)
		return w
	}
	a, b, theirs := mk(1), mk(1), mk(2)
	pa, err := s.Ping(ctx, 1, a.ID)
	require.NoError(t, err)
	pb, err := s.Ping(ctx, 1, b.ID)
	require.NoError(t, err)
	pt, err := s.Ping(ctx, 2, theirs.ID)
	require.NoError(t, err)
	notified := listen(t, db)
	count := func() (n int) {
		require.NoError(t, db.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM events)`).Scan(&n))
		return n
	}
	rows := count()

	id := func(d domain.Delivery) string { return strconv.FormatInt(d.ID, 10) }
	for _, w := range []string{uuid.NewString(), theirs.ID, "not-a-uuid", ""} {
		_, err := s.Deliveries(ctx, 1, w, 0, 0)
		requireAPIError(t, err, apierr.WebhookNotFound, "list %q", w)
		_, err = s.Ping(ctx, 1, w)
		requireAPIError(t, err, apierr.WebhookNotFound, "ping %q", w)
		for _, d := range []string{id(pa), id(pt), "abc", "0"} {
			_, err = s.Redeliver(ctx, 1, w, d)
			requireAPIError(t, err, apierr.WebhookNotFound, "redeliver %q/%q", w, d)
		}
	}
	for _, d := range []string{id(pb), id(pt), "999999", "abc", "0", "-1", "+" + id(pa), "0" + id(pa), id(pa) + " ", "1e3", "9223372036854775808", ""} {
		_, err := s.Redeliver(ctx, 1, a.ID, d)
		requireAPIError(t, err, apierr.WebhookDeliveryNotFound, "redeliver %q", d)
	}
	require.Equal(t, rows, count(), "nothing written")
	require.False(t, notified(), "nothing notified")
}

// TestPingRacesMove: pings and redeliveries racing changes of the url
// leave nothing waiting for an old url, and pings racing the delete are
// either refused (33000) or dropped with the rest: nothing waits for a
// subscription that is gone.
func TestPingRacesMove(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, migrations.FS)
	s := app.New(postgres.New(db), anyConnection{}, app.Config{AllowPrivateTargets: true})
	sub, err := s.Create(ctx, app.CreateCmd{CompanyID: 1, ConnectionID: 10, URL: "http://127.0.0.1/0", Events: []string{"messages.create"}})
	require.NoError(t, err)
	first, err := s.Ping(ctx, 1, sub.ID)
	require.NoError(t, err)
	done := make(chan error, 40)
	for i := range 20 {
		go func() {
			_, err := s.Ping(ctx, 1, sub.ID)
			if err == nil {
				_, err = s.Redeliver(ctx, 1, sub.ID, strconv.FormatInt(first.ID, 10))
			}
			done <- err
		}()
		go func() {
			u := "http://127.0.0.1/" + strconv.Itoa(i+1)
			_, err := s.Update(ctx, 1, sub.ID, &u, nil)
			done <- err
		}()
	}
	for range 40 {
		require.NoError(t, <-done)
	}
	now, err := s.Get(ctx, 1, sub.ID)
	require.NoError(t, err)
	var stale int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND status = 'pending' AND url <> $2`,
		sub.ID, now.URL).Scan(&stale))
	require.Zero(t, stale, "pending deliveries left on an old url")

	for range 10 {
		go func() {
			_, err := s.Ping(ctx, 1, sub.ID)
			done <- err
		}()
	}
	require.NoError(t, s.Delete(ctx, 1, sub.ID))
	for range 10 {
		if err := <-done; err != nil {
			requireAPIError(t, err, apierr.WebhookNotFound)
		}
	}
	var waiting int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE subscription_id = $1 AND status = 'pending'`, sub.ID).Scan(&waiting))
	require.Zero(t, waiting, "deliveries waiting for a deleted subscription")
}
