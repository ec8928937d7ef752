package app_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard.dev/services/messaging/internal/adapters/postgres"
	"switchboard.dev/services/messaging/internal/app"
	"switchboard.dev/services/messaging/internal/domain"
)

// TestRenewSends: a claim's lease is renewed only under its token; once it
// lapsed and another worker took the send, the first holder can neither
// renew it nor put it back.
func TestRenewSends(t *testing.T) {
	ctx := context.Background()
	f := newSender(t, &snMessenger{}, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)
	id := res.Message.ID

	first, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.NotEmpty(t, first[0].Token)
	none, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Empty(t, none, "held")
	held, err := f.repo.RenewSends(ctx, first, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{id}, held)

	// The lease runs out (its holder stopped renewing): another takes it.
	_, err = f.db.Exec(ctx, `UPDATE outbound_sends SET due_at = now()`)
	require.NoError(t, err)
	second, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, second, 1)
	require.NotEqual(t, first[0].Token, second[0].Token)
	require.Equal(t, 2, second[0].Attempts)

	held, err = f.repo.RenewSends(ctx, first, time.Hour)
	require.NoError(t, err)
	require.Empty(t, held, "the first holder lost it")
	require.NoError(t, f.repo.SendLater(ctx, first[0], time.Now().Add(-time.Minute)))
	none, err = f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Empty(t, none, "the lost claim put nothing back")

	held, err = f.repo.RenewSends(ctx, second, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{id}, held)
	require.NoError(t, f.repo.SendLater(ctx, second[0], time.Now().Add(-time.Minute)))
	again, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, again, 1, "the holder put it back")
}

// countingRepo counts the send worker's claims and renewals, so tests wait
// for them instead of for time.
type countingRepo struct {
	*postgres.Repo
	claims, renewals atomic.Int32
}

func (r *countingRepo) ClaimSends(ctx context.Context, lease time.Duration, n int) ([]app.Claim, error) {
	defer r.claims.Add(1)
	return r.Repo.ClaimSends(ctx, lease, n)
}

func (r *countingRepo) RenewSends(ctx context.Context, claims []app.Claim, lease time.Duration) ([]string, error) {
	defer r.renewals.Add(1)
	return r.Repo.RenewSends(ctx, claims, lease)
}

// gatedConnections holds the send worker in its connection lookup (before
// the messenger) until the test opens the gate.
type gatedConnections struct {
	snConnections
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedConnections) Connection(ctx context.Context, company, id int64) (app.Connection, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	return g.snConnections.Connection(ctx, company, id)
}

// worker runs a send worker of its own on f's database (another replica's)
// until the test ends.
func worker(t *testing.T, f snFixture, repo app.Repository, conns app.Connections, m app.Messenger, cfg app.SenderConfig) *app.Service {
	s := app.New(app.Deps{Repo: repo, Blacklist: f.repo, Connections: conns, Payments: snPaid{}, Messenger: m, Sender: cfg})
	f2 := f
	f2.s = s
	f2.runSender(t)
	return s
}

// TestSendLeaseLostIsNotSent: a worker whose claim was taken over while it
// was busy with the send (its lease lapsed, as when the process stalled)
// learns so at its next renewal and does not send: the new holder alone
// sends the message.
func TestSendLeaseLostIsNotSent(t *testing.T) {
	ctx := context.Background()
	f := newSender(t, &snMessenger{}, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)

	repo := &countingRepo{Repo: f.repo}
	conns := &gatedConnections{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	m := &snMessenger{send: func(int32) (string, error) { return "src-a", nil }}
	worker(t, f, repo, conns, m, app.SenderConfig{Lease: time.Hour, Renew: 5 * time.Millisecond, Poll: 5 * time.Millisecond,
		MaxAttempts: 3, Backoff: time.Millisecond, Batch: 10, Parallel: 1})
	<-conns.entered

	// The lease lapses and another worker takes the send. The first
	// holder still renews every 5 ms and may push the due time back
	// between the two statements (the lease is still its own then): try
	// again until the takeover wins.
	var taken []app.Claim
	require.Eventually(t, func() bool {
		_, err := f.db.Exec(ctx, `UPDATE outbound_sends SET due_at = now()`)
		require.NoError(t, err)
		taken, err = f.repo.ClaimSends(ctx, time.Hour, 10)
		require.NoError(t, err)
		return len(taken) == 1
	}, 10*time.Second, time.Millisecond, "another worker takes the send")
	seen := repo.renewals.Load()
	require.Eventually(t, func() bool { return repo.renewals.Load() >= seen+2 }, 10*time.Second, time.Millisecond,
		"a renewal after the takeover")

	claims := repo.claims.Load()
	close(conns.gate)
	require.Eventually(t, func() bool { return repo.claims.Load() > claims }, 10*time.Second, time.Millisecond,
		"the worker is done with its batch")
	require.Zero(t, m.calls.Load(), "the first holder did not send")
	var token string
	require.NoError(t, f.db.QueryRow(ctx, `SELECT claim_token::text FROM outbound_sends WHERE message_id = $1`, res.Message.ID).Scan(&token))
	require.Equal(t, taken[0].Token, token, "the new holder's claim is untouched")
}

// TestSendLeaseRenewedWhileSending: a send that takes longer than the
// lease stays its worker's own while the worker lives (renewed), so
// another worker does not take it; the message is sent once.
func TestSendLeaseRenewedWhileSending(t *testing.T) {
	ctx := context.Background()
	f := newSender(t, &snMessenger{}, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)

	release := make(chan struct{})
	sending := make(chan struct{}, 1)
	m := &snMessenger{send: func(int32) (string, error) {
		sending <- struct{}{}
		<-release
		return "src-a", nil
	}}
	const lease = 500 * time.Millisecond
	worker(t, f, f.repo, snConnections{}, m, app.SenderConfig{Lease: lease, Renew: 20 * time.Millisecond, Poll: 5 * time.Millisecond,
		MaxAttempts: 3, Backoff: time.Millisecond, Batch: 10, Parallel: 1})
	<-sending
	var claimed time.Time
	require.NoError(t, f.db.QueryRow(ctx, `SELECT now()`).Scan(&claimed))
	// Wait (by the database's clock) until the first lease would have
	// run out three times over.
	require.Eventually(t, func() bool {
		var past bool
		require.NoError(t, f.db.QueryRow(ctx, `SELECT now() > $1`, claimed.Add(3*lease)).Scan(&past))
		return past
	}, 10*time.Second, 10*time.Millisecond)
	other, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Empty(t, other, "the lease was renewed")

	close(release)
	sent := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.SourceMessageID != nil })
	require.Equal(t, "src-a", *sent.SourceMessageID)
	require.EqualValues(t, 1, m.calls.Load())
	require.Zero(t, f.count(t, `SELECT count(*) FROM outbound_sends`))
}

// TestSendTakenOverAfterKill: a send claimed by a worker that then died
// (claimed, never renewed) is sent by another worker once the lease runs
// out, once.
func TestSendTakenOverAfterKill(t *testing.T) {
	ctx := context.Background()
	f := newSender(t, &snMessenger{}, nil)
	res, err := f.send(t, "hi", nil)
	require.NoError(t, err)
	dead, err := f.repo.ClaimSends(ctx, 300*time.Millisecond, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)

	m := &snMessenger{send: func(int32) (string, error) { return "src-b", nil }}
	worker(t, f, f.repo, snConnections{}, m, app.SenderConfig{Lease: time.Hour, Poll: 5 * time.Millisecond,
		MaxAttempts: 3, Backoff: time.Millisecond, Batch: 10, Parallel: 1})
	sent := f.waitMessage(t, res.Message.ID, func(m domain.Message) bool { return m.SourceMessageID != nil })
	require.Equal(t, "src-b", *sent.SourceMessageID)
	require.EqualValues(t, 1, m.calls.Load())
}

// TestSenderStopFinishesTheSendUnderWay: the worker stopped (its context
// cancelled) while the messenger has a send finishes and records that
// send, so no other worker sends it again; the sends of the batch not yet
// started go back to the queue at once, not after their leases.
func TestSenderStopFinishesTheSendUnderWay(t *testing.T) {
	ctx := context.Background()
	f := newSender(t, &snMessenger{}, nil)
	first, err := f.send(t, "one", nil)
	require.NoError(t, err)
	_, err = f.send(t, "two", nil)
	require.NoError(t, err)

	release := make(chan struct{})
	sending := make(chan struct{}, 1)
	m := &snMessenger{send: func(int32) (string, error) {
		sending <- struct{}{}
		<-release
		return "src-a", nil
	}}
	s := app.New(app.Deps{Repo: f.repo, Blacklist: f.repo, Connections: snConnections{}, Payments: snPaid{}, Messenger: m,
		Sender: app.SenderConfig{Lease: time.Hour, Poll: 5 * time.Millisecond, MaxAttempts: 3, Backoff: time.Millisecond, Batch: 10, Parallel: 1}})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.RunSender(wctx, slog.New(slog.DiscardHandler)) }()
	<-sending
	stop()
	close(release)
	<-done

	sent, err := f.repo.Message(ctx, snCompany, first.Message.ID)
	require.NoError(t, err)
	require.NotNil(t, sent.SourceMessageID, "the send under way was recorded")
	require.EqualValues(t, 1, m.calls.Load(), "the second was not started")
	again, err := f.repo.ClaimSends(ctx, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, again, 1, "the second is free for another worker at once")
	require.Equal(t, 1, again[0].Attempts, "putting it back did not count an attempt")
}
