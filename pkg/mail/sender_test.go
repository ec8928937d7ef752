package mail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/mail"
	"switchboard.dev/pkg/mail/mailtest"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/pkg/postgres"
	"switchboard.dev/pkg/redisx/redistest"
)

// migrations hold the DDL of the package comment itself, read from
// mail.go: the table tested is the table documented.
var migrations = func() fstest.MapFS {
	src, err := os.ReadFile("mail.go")
	if err != nil {
		panic(err)
	}
	var ddl []string
	in := false
	for line := range strings.Lines(string(src)) {
		switch {
		case strings.HasPrefix(line, "//\tCREATE TABLE mail_outbox"):
			in = true
		case in && !strings.HasPrefix(line, "//\t"):
			in = false
		}
		if in {
			ddl = append(ddl, strings.TrimPrefix(line, "//\t"))
		}
	}
	if len(ddl) == 0 {
		panic("no CREATE TABLE mail_outbox in mail.go's comment")
	}
	return fstest.MapFS{"0001_mail_outbox.sql": {Data: []byte("-- +goose Up\n" + strings.Join(ddl, ""))}}
}()

// waitFor bounds how long a test waits for the sender to act; a correct
// sender acts in milliseconds, so only a broken one comes near it.
const waitFor = 10 * time.Second

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const defaultFrom = "Switchboard <noreply@switchboard.test>"

func enqueue(t *testing.T, db *pgxpool.Pool, m mail.Mail) {
	t.Helper()
	require.NoError(t, postgres.WithTx(context.Background(), db, func(tx pgx.Tx) error {
		return mail.Enqueue(context.Background(), tx, m)
	}))
}

func newSMTP(t *testing.T, srv *mailtest.Server) *mail.SMTP {
	t.Helper()
	s, err := mail.NewSMTP(srv.URL(), "Fallback <fallback@switchboard.test>")
	require.NoError(t, err)
	return s
}

// start runs s until the test ends.
func start(t *testing.T, s *mail.Sender) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

type row struct {
	Attempts      int
	LastError     *string
	Sent          bool
	DueInSeconds  float64
	Subject, Body string
}

func rows(t *testing.T, db *pgxpool.Pool) []row {
	t.Helper()
	rs, err := db.Query(context.Background(), `SELECT attempts, last_error, sent_at IS NOT NULL,
		extract(epoch FROM next_attempt_at - clock_timestamp())::float8, subject, body FROM mail_outbox ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.Attempts, &x.LastError, &x.Sent, &x.DueInSeconds, &x.Subject, &x.Body)
		return x, err
	})
	require.NoError(t, err)
	return out
}

func unsent(t *testing.T, db *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL`).Scan(&n))
	return n
}

// makeDue brings every unsent mail's next attempt to now.
func makeDue(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	_, err := db.Exec(context.Background(), `UPDATE mail_outbox SET next_attempt_at = now() WHERE sent_at IS NULL`)
	require.NoError(t, err)
}

// slowPoll: without notifications a sender would wait for its hour-long
// poll, so a test that sees a mail arrive sees LISTEN/NOTIFY work.
const slowPoll = time.Hour

func TestSenderSendsCommittedMailThroughSMTP(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	s := mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv)}, Poll: slowPoll})
	require.True(t, s.Deliverable())
	start(t, s)

	// A rolled-back change takes its mail with it.
	err := postgres.WithTx(context.Background(), db, func(tx pgx.Tx) error {
		require.NoError(t, mail.Enqueue(context.Background(), tx, mail.Mail{To: []string{"ghost@example.com"}, Subject: "never", Text: "never"}))
		return errors.New("the change failed")
	})
	require.EqualError(t, err, "the change failed")

	text := "Здравствуйте, Анна!\n\nВаш код: 123456.\nA line with a dot:\n.\nand = signs, tabs\tand a long line " + strings.Repeat("x", 200) + "\n\nend"
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Добро пожаловать в Switchboard", Text: text})
	enqueue(t, db, mail.Mail{From: "billing@switchboard.test", To: []string{"bob@example.com", "Carol <carol@example.com>"}, Subject: "Invoice 42", Text: "Pay, please."})

	require.Eventually(t, func() bool { return len(srv.Messages()) == 2 }, waitFor, 5*time.Millisecond)
	msgs := srv.Messages()

	first := msgs[0]
	require.NoError(t, first.DecodeErr)
	require.Equal(t, "noreply@switchboard.test", first.From, "the sender's default address")
	require.Equal(t, []string{"ann@example.com"}, first.To)
	require.Equal(t, `"Switchboard" <noreply@switchboard.test>`, first.Header.Get("From"))
	require.Equal(t, "<ann@example.com>", first.Header.Get("To"))
	require.Equal(t, "Добро пожаловать в Switchboard", first.Subject)
	require.Equal(t, text, first.Text)
	require.Contains(t, first.Header.Get("Content-Type"), "text/plain")
	require.Contains(t, strings.ToLower(first.Header.Get("Content-Type")), "charset=utf-8")
	require.False(t, first.TLS, "the test server offers no TLS: plain, as allowed")

	second := msgs[1]
	require.NoError(t, second.DecodeErr)
	require.Equal(t, "billing@switchboard.test", second.From, "the mail's own address")
	require.Equal(t, []string{"bob@example.com", "carol@example.com"}, second.To)
	require.Equal(t, "Invoice 42", second.Subject)
	require.Equal(t, "Pay, please.", second.Text)

	// Marked sent by the transaction that sent it, just after; the body is
	// kept.
	require.Eventually(t, func() bool { return unsent(t, db) == 0 }, waitFor, 5*time.Millisecond)
	rs := rows(t, db)
	require.Len(t, rs, 2, "the rolled back mail never was")
	for _, r := range rs {
		require.True(t, r.Sent)
		require.Equal(t, 1, r.Attempts)
		require.Nil(t, r.LastError)
	}
	require.Equal(t, text, rs[0].Body)
	require.Len(t, srv.Messages(), 2)
}

// TestSenderBacksOff: each failure reschedules the mail by the next pause
// of Backoff, the last repeating; a mail not due is not tried; once the
// server takes mail again the mail is sent, once.
func TestSenderBacksOff(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	srv.Fail(451)
	s := mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv)},
		Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}})
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Hello", Text: "Hi"})
	ctx := context.Background()

	for i, wantPause := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour, time.Hour} {
		n, err := s.Drain(ctx)
		require.NoError(t, err, "a failed mail is not a failed drain")
		require.Zero(t, n)
		r := rows(t, db)[0]
		require.Equal(t, i+1, r.Attempts)
		require.False(t, r.Sent)
		require.NotNil(t, r.LastError)
		require.Contains(t, *r.LastError, "451")
		require.InDelta(t, wantPause.Seconds(), r.DueInSeconds, 30, "attempt %d", i+1)
		require.Equal(t, i+1, srv.Refused())

		// Not due: not tried.
		n, err = s.Drain(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, i+1, srv.Refused())
		makeDue(t, db)
	}

	srv.Recover()
	n, err := s.Drain(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r := rows(t, db)[0]
	require.True(t, r.Sent)
	require.Equal(t, 5, r.Attempts, "four failures and the success")
	n, err = s.Drain(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, srv.Messages(), 1)
	require.Equal(t, "Hello", srv.Messages()[0].Subject)
}

// TestSenderRetriesUntilTheServerRecovers: a running sender retries a
// refused mail on its own when the pause is over, and sends it once after
// the server recovers.
func TestSenderRetriesUntilTheServerRecovers(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	srv.Fail(554)
	start(t, mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv)},
		Poll: slowPoll, Backoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}))
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Hello", Text: "Hi"})

	// Retried by the sender's own timer: the hour-long poll never fires.
	require.Eventually(t, func() bool { return srv.Refused() >= 3 }, waitFor, 5*time.Millisecond)
	require.Empty(t, srv.Messages())
	srv.Recover()
	require.Eventually(t, func() bool { return unsent(t, db) == 0 }, waitFor, 5*time.Millisecond)
	// Marked sent: no attempt can follow.
	require.Len(t, srv.Messages(), 1)
	r := rows(t, db)[0]
	require.GreaterOrEqual(t, r.Attempts, 4)
	require.Contains(t, *r.LastError, "554", "the last failure is kept")
}

// TestSenderReplicas: two senders on one database, draining at the same
// moment, send each mail once between them.
func TestSenderReplicas(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	const mails = 40
	for i := range mails {
		enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: fmt.Sprintf("mail %d", i), Text: "Hi"})
	}
	counter := &counting{}
	opts := mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{counter, newSMTP(t, srv)}, Batch: 3}
	replicas := []*mail.Sender{mail.NewSender(db, quiet, opts), mail.NewSender(db, quiet, opts)}

	var wg sync.WaitGroup
	sent := make([]int, len(replicas))
	ready := make(chan struct{})
	for i, s := range replicas {
		wg.Go(func() {
			<-ready
			n, err := s.Drain(context.Background())
			require.NoError(t, err)
			sent[i] = n
		})
	}
	close(ready)
	wg.Wait()

	require.Equal(t, mails, sent[0]+sent[1])
	require.Equal(t, 0, unsent(t, db))
	seen := map[string]int{}
	for _, m := range srv.Messages() {
		seen[m.Subject]++
	}
	require.Len(t, seen, mails)
	for subject, n := range seen {
		require.Equal(t, 1, n, subject)
	}
	require.Equal(t, int64(mails), counter.sent.Load())
	t.Logf("replica split: %d + %d", sent[0], sent[1])
}

// TestSenderReplicasRunning: the same with two running senders and mails
// arriving while they run.
func TestSenderReplicasRunning(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	opts := mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv)}, Batch: 3, Poll: slowPoll}
	start(t, mail.NewSender(db, quiet, opts))
	start(t, mail.NewSender(db, quiet, opts))
	const mails = 30
	for i := range mails {
		enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: fmt.Sprintf("mail %d", i), Text: "Hi"})
	}
	require.Eventually(t, func() bool { return unsent(t, db) == 0 }, waitFor, 5*time.Millisecond)
	seen := map[string]int{}
	for _, m := range srv.Messages() {
		seen[m.Subject]++
	}
	require.Len(t, seen, mails)
	for subject, n := range seen {
		require.Equal(t, 1, n, subject)
	}
}

// TestSenderSMTPAndMailbox: a sender with both transports delivers to
// both.
func TestSenderSMTPAndMailbox(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	rdb, prefix := redistest.New(t)
	box := mail.NewMailboxAt(rdb, prefix+mail.MailboxKey, mail.MailboxLimit)
	s := mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv), box}})
	enqueue(t, db, mail.Mail{To: []string{"Ann@Example.com"}, Subject: "Your code", Text: "123456"})

	n, err := s.Drain(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.Len(t, srv.Messages(), 1)
	require.Equal(t, "Your code", srv.Messages()[0].Subject)
	require.Equal(t, "123456", srv.Messages()[0].Text)
	got, err := box.List(context.Background(), "ann@example.com")
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, defaultFrom, got[0].From)
	require.Equal(t, []string{"Ann@Example.com"}, got[0].To)
	require.Equal(t, "Your code", got[0].Subject)
	require.Equal(t, "123456", got[0].Text)
}

// TestSenderFailingTransportStopsTheAttempt: when one transport fails the
// mail is rescheduled whole, and the next attempt goes through every
// transport again (at least once).
func TestSenderFailingTransportStopsTheAttempt(t *testing.T) {
	db := pgtest.New(t, migrations)
	first, second := &counting{}, &counting{}
	second.fail.Store(true)
	s := mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{first, second}})
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Hi", Text: "Hi"})

	n, err := s.Drain(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, int64(1), first.sent.Load())
	r := rows(t, db)[0]
	require.Contains(t, *r.LastError, "transport 2 (*mail_test.counting): transport down")

	second.fail.Store(false)
	makeDue(t, db)
	n, err = s.Drain(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int64(2), first.sent.Load(), "sent again through the first transport")
	require.Equal(t, int64(1), second.sent.Load())
}

// TestSenderWithoutTransport: nothing to send through, nothing sent; the
// mails wait.
func TestSenderWithoutTransport(t *testing.T) {
	db := pgtest.New(t, migrations)
	s := mail.NewSender(db, quiet, mail.SenderOptions{})
	require.False(t, s.Deliverable())
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Hi", Text: "Hi"})
	n, err := s.Drain(context.Background())
	require.ErrorIs(t, err, mail.ErrNoTransport)
	require.Zero(t, n)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned before its context ended: %v", err)
	default:
	}
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, 1, unsent(t, db))
}

// TestSenderStopsCleanly: a sender stopped while a transport hangs leaves
// the mail due, neither sent nor counted as failed.
func TestSenderStopsCleanly(t *testing.T) {
	db := pgtest.New(t, migrations)
	hang := &hanging{entered: make(chan struct{}, 1)}
	s := mail.NewSender(db, quiet, mail.SenderOptions{Transports: []mail.Transport{hang}, Poll: slowPoll})
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "Hi", Text: "Hi"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-hang.entered:
	case <-time.After(waitFor):
		t.Fatal("the sender never tried the mail")
	}
	cancel()
	require.NoError(t, <-done)
	r := rows(t, db)[0]
	require.False(t, r.Sent)
	require.Zero(t, r.Attempts)
	require.Nil(t, r.LastError)
	require.LessOrEqual(t, r.DueInSeconds, 0.0)
}

func TestEnqueueValidates(t *testing.T) {
	db := pgtest.New(t, migrations)
	for _, m := range []mail.Mail{
		{Subject: "no one"},
		{To: []string{"not an address"}},
		{To: []string{"ann@example.com", ""}},
		{From: "nobody", To: []string{"ann@example.com"}},
	} {
		err := postgres.WithTx(context.Background(), db, func(tx pgx.Tx) error {
			return mail.Enqueue(context.Background(), tx, m)
		})
		require.Error(t, err, "%+v", m)
	}
	require.Empty(t, rows(t, db))
}

// counting is a transport that counts what it takes, and fails while told
// to.
type counting struct {
	sent atomic.Int64
	fail atomic.Bool
}

func (c *counting) Send(context.Context, mail.Mail) error {
	if c.fail.Load() {
		return errors.New("transport down")
	}
	c.sent.Add(1)
	return nil
}

// hanging is a transport that never answers before its context ends.
type hanging struct{ entered chan struct{} }

func (h *hanging) Send(ctx context.Context, _ mail.Mail) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// outboxSubjects answers the subjects of the outbox's rows, in id order.
func outboxSubjects(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	rs, err := db.Query(context.Background(), `SELECT subject FROM mail_outbox ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rs, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// sentAgo stores n mails sent age ago with subjects prefix 1..n.
func sentAgo(t *testing.T, db *pgxpool.Pool, prefix string, n int, age time.Duration) {
	t.Helper()
	_, err := db.Exec(context.Background(), `INSERT INTO mail_outbox (from_addr, to_addrs, subject, body, attempts, sent_at, created_at)
		SELECT '', ARRAY['ann@example.com'], $1 || g, 'Hi', 1, now() - $3 * interval '1 second', now() - $3 * interval '1 second'
		FROM generate_series(1, $2) g`, prefix, n, age.Seconds())
	require.NoError(t, err)
}

// TestSenderPurgesSentMails: sent mails older than Keep go, in batches and
// by any replica; newer ones stay, and unsent ones stay however old.
func TestSenderPurgesSentMails(t *testing.T) {
	db := pgtest.New(t, migrations)
	ctx := context.Background()
	sentAgo(t, db, "old ", 2500, 8*24*time.Hour) // past the default week, more than two batches
	sentAgo(t, db, "recent ", 1, 6*24*time.Hour)
	enqueue(t, db, mail.Mail{To: []string{"bob@example.com"}, Subject: "failing", Text: "Hi"})
	_, err := db.Exec(ctx, `UPDATE mail_outbox SET created_at = now() - interval '30 days', attempts = 9,
		next_attempt_at = now() + interval '1 hour' WHERE subject = 'failing'`)
	require.NoError(t, err)

	// Two replicas at once: every old row goes exactly once.
	opts := mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{&counting{}}}
	replicas := []*mail.Sender{mail.NewSender(db, quiet, opts), mail.NewSender(db, quiet, opts)}
	var wg sync.WaitGroup
	purged := make([]int64, len(replicas))
	for i, s := range replicas {
		wg.Go(func() {
			n, err := s.Purge(ctx)
			require.NoError(t, err)
			purged[i] = n
		})
	}
	wg.Wait()
	require.Equal(t, int64(2500), purged[0]+purged[1])
	require.Equal(t, []string{"recent 1", "failing"}, outboxSubjects(t, db))

	// A shorter Keep takes the recent one too; the unsent one stays.
	n, err := mail.NewSender(db, quiet, mail.SenderOptions{Transports: opts.Transports, Keep: 24 * time.Hour}).Purge(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Equal(t, []string{"failing"}, outboxSubjects(t, db))
}

// TestSenderPurgesWhenRunning: a running Sender purges as it starts, besides
// sending what is due.
func TestSenderPurgesWhenRunning(t *testing.T) {
	db := pgtest.New(t, migrations)
	srv := mailtest.Start(t)
	sentAgo(t, db, "old ", 3, 8*24*time.Hour)
	enqueue(t, db, mail.Mail{To: []string{"ann@example.com"}, Subject: "new", Text: "Hi"})
	start(t, mail.NewSender(db, quiet, mail.SenderOptions{From: defaultFrom, Transports: []mail.Transport{newSMTP(t, srv)}, Poll: slowPoll}))
	require.Eventually(t, func() bool {
		s := outboxSubjects(t, db)
		return len(s) == 1 && s[0] == "new" && unsent(t, db) == 0
	}, waitFor, 10*time.Millisecond, "the old sent mails purged, the new one sent and kept")
}
