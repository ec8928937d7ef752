package app_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/pgtest"
	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
	"switchboard.dev/services/messaging/migrations"
)

const snCompany, snConn = int64(7), int64(70)

// snConnections knows one telegram connection of snCompany.
type snConnections struct{ app.Connections }

func (snConnections) Connection(_ context.Context, company, id int64) (app.Connection, error) {
	if company != snCompany || id != snConn {
		return app.Connection{}, domain.ErrNotFound
	}
	return app.Connection{ID: snConn, Type: domain.Telegram}, nil
}

type snPaid struct{}

func (snPaid) ConnectionPaid(context.Context, int64, int64) (bool, error) { return true, nil }

// snMessenger answers sends with send (counted).
type snMessenger struct {
	app.Messenger
	calls atomic.Int32
	send  func(n int32) (string, error)
}

func (m *snMessenger) Send(context.Context, app.Connection, domain.Chat, domain.Message) (app.Sent, error) {
	id, err := m.send(m.calls.Add(1))
	return app.Sent{SourceMessageID: id}, err
}

type snFixture struct {
	s    *app.Service
	repo *postgres.Repo
	db   *pgxpool.Pool
	chat domain.Chat
}

func newSender(t *testing.T, m app.Messenger, now func() time.Time) snFixture {
	t.Helper()
	db := pgtest.New(t, migrations.FS)
	repo := postgres.New(db)
	s := app.New(app.Deps{Repo: repo, Blacklist: repo, Connections: snConnections{}, Payments: snPaid{}, Messenger: m, Now: now,
		Sender: app.SenderConfig{Lease: time.Minute, Poll: 5 * time.Millisecond, MaxAttempts: 3, Backoff: time.Millisecond,
			Batch: 10, Parallel: 4}})
	created, err := repo.FindOrCreateChat(context.Background(), domain.Chat{CompanyID: snCompany, ConnectionID: snConn,
		ConnectionType: domain.Telegram, SourceChatID: "100", Name: "Ann"},
		func(context.Context, domain.Chat, bool) (int64, bool, error) { return 1, true, nil })
	require.NoError(t, err)
	return snFixture{s: s, repo: repo, db: db, chat: created.Chat}
}

func (f snFixture) send(t *testing.T, text string, idem *app.Idempotency) (app.SendResult, error) {
	t.Helper()
	return f.s.Send(context.Background(), app.SendCmd{CompanyID: snCompany, ChatID: f.chat.ID, Type: domain.Text,
		Content: map[string]any{"text": text}, OwnerUserID: 1, OwnerName: "Owner", Idempotency: idem,
		Encode: func(s app.Saved) ([]byte, error) { return []byte(s.Message.ID), nil }})
}

// runSender runs the worker until the test ends.
func (f snFixture) runSender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.s.RunSender(ctx, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (f snFixture) waitMessage(t *testing.T, id string, ok func(domain.Message) bool) domain.Message {
	t.Helper()
	var m domain.Message
	require.Eventually(t, func() bool {
		var err error
		m, err = f.repo.Message(context.Background(), snCompany, id)
		require.NoError(t, err)
		return ok(m)
	}, 10*time.Second, 5*time.Millisecond)
	return m
}

func (f snFixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// TestSenderRetriesThenFails: a messenger that cannot be reached is tried
// MaxAttempts times, then the message fails with GENERIC_ERROR and one
// error event.
func TestSenderRetriesThenFails(t *testing.T) {
	m := &snMessenger{send: func(int32) (string, error) { return "", errors.New("connection refused") }}
	f := newSender(t, m, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)
	f.runSender(t)
	failed := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.ErrorAt != nil })
	require.Equal(t, domain.ErrGeneric, *failed.ErrorType)
	require.EqualValues(t, 3, m.calls.Load())
	require.Zero(t, f.count(t, `SELECT count(*) FROM outbound_sends`))
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox WHERE event_type = 'messages.delivery.error'`))
}

// TestSenderRecovers: transient failures are retried; the messenger's id
// is recorded once it takes the message; a refusal is final at once.
func TestSenderRecovers(t *testing.T) {
	m := &snMessenger{send: func(n int32) (string, error) {
		if n < 3 {
			return "", errors.New("timeout")
		}
		return "src-1", nil
	}}
	f := newSender(t, m, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)
	f.runSender(t)
	sent := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.SourceMessageID != nil })
	require.Equal(t, "src-1", *sent.SourceMessageID)
	require.Nil(t, sent.ErrorAt)
	require.EqualValues(t, 3, m.calls.Load())

	m.send = func(int32) (string, error) {
		return "", &app.SendError{Type: domain.ErrMessengerUserNotFound, Text: "gone"}
	}
	res, err = f.send(t, "again", nil)
	require.NoError(t, err)
	f.s.WakeSender()
	refused := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.ErrorAt != nil })
	require.Equal(t, domain.ErrMessengerUserNotFound, *refused.ErrorType)
	require.EqualValues(t, 4, m.calls.Load(), "a refusal is not retried")
}

// TestClaimSendsLeases: workers claiming at once never take one send twice.
func TestClaimSendsLeases(t *testing.T) {
	f := newSender(t, &snMessenger{}, nil)
	const n = 60
	for i := range n {
		_, err := f.send(t, string(rune('a'+i%26)), nil)
		require.NoError(t, err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				claims, err := f.repo.ClaimSends(context.Background(), time.Minute, 7)
				require.NoError(t, err)
				if len(claims) == 0 {
					return
				}
				mu.Lock()
				for _, c := range claims {
					seen[c.MessageID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, n)
	for id, times := range seen {
		require.Equal(t, 1, times, id)
	}
}

// TestIdempotencyKeyExpires: within 24 hours a key answers its first
// answer (another body: 409 15014); after, it is free again.
func TestIdempotencyKeyExpires(t *testing.T) {
	var shift atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	f := newSender(t, &snMessenger{}, now)
	key := func(hash string) *app.Idempotency { return &app.Idempotency{Key: "k", Hash: []byte(hash)} }
	first, err := f.send(t, "one", key("h1"))
	require.NoError(t, err)
	again, err := f.send(t, "one", key("h1"))
	require.NoError(t, err)
	require.Equal(t, []byte(first.Message.ID), again.Replay)
	_, err = f.send(t, "two", key("h2"))
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, apierr.MessagingIdempotencyKeyReused.Code, ae.Code)

	shift.Store(int64(25 * time.Hour))
	later, err := f.send(t, "two", key("h2"))
	require.NoError(t, err)
	require.Nil(t, later.Replay)
	require.NotEqual(t, first.Message.ID, later.Message.ID)
	require.Equal(t, 2, f.count(t, `SELECT count(*) FROM messages`))
}

// snAnswers answers each send with the next of its answers.
type snAnswers struct {
	app.Messenger
	calls   atomic.Int32
	answers []func() (app.Sent, error)
}

func (m *snAnswers) Send(context.Context, app.Connection, domain.Chat, domain.Message) (app.Sent, error) {
	n := int(m.calls.Add(1))
	return m.answers[min(n, len(m.answers))-1]()
}

// TestSenderWaitsWithoutCounting: a messenger's "wait" (a rate limit's
// retry_after) puts the send off without using up an attempt, so more
// waits than MaxAttempts and then failures within it still end sent; and
// a send the messenger says is delivered is delivered at once, with its
// event.
func TestSenderWaitsWithoutCounting(t *testing.T) {
	wait := func() (app.Sent, error) {
		return app.Sent{}, &app.RetryAfter{Wait: time.Millisecond, Err: errors.New("429 Too Many Requests")}
	}
	down := func() (app.Sent, error) { return app.Sent{}, errors.New("connection refused") }
	m := &snAnswers{answers: []func() (app.Sent, error){wait, wait, wait, wait, down, down,
		func() (app.Sent, error) { return app.Sent{SourceMessageID: "100:7", Delivered: true}, nil }}}
	f := newSender(t, m, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)
	f.runSender(t)
	sent := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.DeliveredAt != nil || m.ErrorAt != nil })
	require.Nil(t, sent.ErrorAt, "the send gave up")
	require.Equal(t, "100:7", *sent.SourceMessageID)
	require.NotNil(t, sent.DeliveredAt)
	require.EqualValues(t, 7, m.calls.Load())
	require.Equal(t, 1, f.count(t, `SELECT count(*) FROM outbox WHERE event_type = 'messages.delivery.delivered'`))
	require.Zero(t, f.count(t, `SELECT count(*) FROM outbound_sends`))
}
