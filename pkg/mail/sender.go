package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"switchboard.dev/pkg/postgres"
)

// Transport delivers one mail: to an SMTP server (SMTP), to the test
// mode's mailbox (Mailbox). An error leaves the mail queued for a later
// attempt through every transport.
type Transport interface {
	Send(ctx context.Context, m Mail) error
}

// ErrNoTransport is Drain's answer when the Sender has no transport: the
// mails stay queued.
var ErrNoTransport = errors.New("mail: no transport configured")

// SenderOptions tune a Sender; the zero value of each field takes its
// default.
type SenderOptions struct {
	// From is the sender's address of a mail queued without one.
	From string
	// Transports each get every mail, in this order. None makes a Sender
	// that sends nothing (Deliverable is false) and leaves mails queued.
	Transports []Transport
	// Poll is how often the outbox is read without a notification, the
	// safety net for a lost one (5s).
	Poll time.Duration
	// Batch is how many due mails are read at a time (20). Each is then
	// claimed and sent in a transaction of its own.
	Batch int
	// Backoff is the pause after a mail's 1st, 2nd, ... failed attempt,
	// its last entry repeating for ever: a mail is never given up (10s,
	// 30s, 1m, 5m, 15m, then every 30m). A non-positive entry counts as
	// one second.
	Backoff []time.Duration
	// Keep is how long a sent mail's row stays after it was sent (7
	// days): long enough to look up what went out and when, short enough
	// that the table does not grow with every mail ever sent, nor keep
	// their bodies (addresses, amounts, names) for ever.
	Keep time.Duration
}

// DefaultBackoff is the pause after a mail's successive failures when
// SenderOptions.Backoff is empty; the last entry repeats.
var DefaultBackoff = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute,
	5 * time.Minute, 15 * time.Minute, 30 * time.Minute}

// DefaultKeep is how long a sent mail's row stays when SenderOptions.Keep
// is not set.
const DefaultKeep = 7 * 24 * time.Hour

const (
	// purgeEvery is how often a running Sender deletes the sent mails
	// older than Keep (and once when it starts); purgeBatch how many rows
	// a statement deletes, so that none holds many rows for long.
	purgeEvery = time.Hour
	purgeBatch = 1000
	// sendTimeout bounds one attempt of one mail through all transports;
	// the mail's row stays locked meanwhile.
	sendTimeout = 2 * time.Minute
	// markTimeout bounds recording an attempt's outcome. It runs even
	// when the Sender is stopping, so that a mail just sent is marked
	// sent rather than sent again.
	markTimeout = 10 * time.Second
	// minWait is the least pause between passes when a due mail is
	// left (another replica is sending it): it keeps a replica from
	// spinning on a row it cannot claim.
	minWait = 200 * time.Millisecond
	// dbMinBackoff and dbMaxBackoff bound the pause after a pass that
	// failed on the database, doubling from the first to the second.
	dbMinBackoff, dbMaxBackoff = 100 * time.Millisecond, 5 * time.Second
)

func (o SenderOptions) withDefaults() SenderOptions {
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 20
	}
	if len(o.Backoff) == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	backoff := make([]time.Duration, len(o.Backoff))
	for i, d := range o.Backoff {
		if d <= 0 {
			d = time.Second
		}
		backoff[i] = d
	}
	o.Backoff = backoff
	o.Transports = append([]Transport(nil), o.Transports...)
	return o
}

// Sender sends the mails queued in a service's mail_outbox. Every replica
// of a mailing service runs one: each mail is claimed with FOR UPDATE SKIP
// LOCKED in a transaction of its own, held while it is sent and until it is
// marked sent, so two replicas never send one mail at the same time.
//
// Delivery is at least once. A mail sent but not marked sent (the process
// dies, the database connection breaks between the send and the commit)
// is sent again later; so is a mail whose first transports took it and a
// later one failed: it is retried through every transport.
//
// Each attempt adds one to the mail's attempts, the successful one too; a
// failed one stores its error in last_error and sets next_attempt_at by
// Backoff; a sent mail gets sent_at and keeps its row, body included, for
// Keep, after which a running Sender (any replica) deletes it (Purge).
type Sender struct {
	db   *pgxpool.Pool
	log  *slog.Logger
	opts SenderOptions
}

// NewSender makes a Sender over the mail_outbox of db.
func NewSender(db *pgxpool.Pool, log *slog.Logger, opts SenderOptions) *Sender {
	return &Sender{db: db, log: log, opts: opts.withDefaults()}
}

// Deliverable reports whether the Sender has a transport to send through.
func (s *Sender) Deliverable() bool { return len(s.opts.Transports) > 0 }

// Run sends queued mails until ctx ends, and returns nil then: a failing
// transport or database is retried, never fatal. It drains the outbox on
// start, on every notification of Channel, every Poll, and when the next
// failed mail is due again. Without a transport it only waits for ctx,
// leaving the mails queued.
func (s *Sender) Run(ctx context.Context) error {
	if !s.Deliverable() {
		s.log.Warn("mail: no transport configured, queued mails are not sent")
		<-ctx.Done()
		return nil
	}
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default: // already due to run
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		postgres.Listen(ctx, s.db, postgres.ListenOptions{
			Channel:    Channel,
			Notified:   func(string) { signal() },
			Listening:  signal,
			MinBackoff: dbMinBackoff, MaxBackoff: dbMaxBackoff, Log: s.log,
		})
	}()
	defer func() { <-done }()

	backoff := dbMinBackoff
	failures := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	var purged time.Time // never: the first pass purges
	for {
		_, err := s.Drain(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil && time.Since(purged) >= purgeEvery {
			if _, err = s.Purge(ctx); err == nil {
				purged = time.Now()
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		var wait time.Duration
		if err == nil {
			wait, err = s.nextDue(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			failures++
			s.log.Warn("mail: sender failed, will retry", "attempt", failures,
				"retry_in", backoff.String(), "error", err.Error())
			wait = backoff
			backoff = min(2*backoff, dbMaxBackoff)
		} else if failures > 0 {
			s.log.Info("mail: sender recovered", "failed_attempts", failures)
			failures, backoff = 0, dbMinBackoff
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-timer.C:
		}
	}
}

// nextDue answers how long to wait before the next pass: until the
// earliest unsent mail is due, within [minWait, Poll].
func (s *Sender) nextDue(ctx context.Context) (time.Duration, error) {
	var secs *float64
	// The database's clock decides when a mail is due: compare with it.
	if err := s.db.QueryRow(ctx, `SELECT extract(epoch FROM min(next_attempt_at) - clock_timestamp())::float8
		FROM mail_outbox WHERE sent_at IS NULL`).Scan(&secs); err != nil {
		return 0, fmt.Errorf("mail: next due: %w", err)
	}
	if secs == nil {
		return s.opts.Poll, nil
	}
	wait := time.Duration(*secs * float64(time.Second))
	return min(max(wait, minWait), s.opts.Poll), nil
}

// Drain makes one pass over the outbox: it tries each mail due at the
// moment once, oldest first, and answers how many it sent. A mail that
// fails is not an error: it is rescheduled (attempts, last_error,
// next_attempt_at) and Drain goes on. The error is the database's, or
// ErrNoTransport, or ctx's.
func (s *Sender) Drain(ctx context.Context) (sent int, err error) {
	if !s.Deliverable() {
		return 0, ErrNoTransport
	}
	var after int64 // ids are read in ascending order: each mail once per pass
	for {
		rows, err := s.db.Query(ctx, `SELECT id FROM mail_outbox
			WHERE sent_at IS NULL AND next_attempt_at <= now() AND id > $1
			ORDER BY id LIMIT $2`, after, s.opts.Batch)
		if err != nil {
			return sent, fmt.Errorf("mail: read due: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return sent, fmt.Errorf("mail: read due: %w", err)
		}
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return sent, err
			}
			ok, err := s.attempt(ctx, id)
			if err != nil {
				return sent, err
			}
			if ok {
				sent++
			}
			after = id
		}
		if len(ids) < s.opts.Batch {
			return sent, nil
		}
	}
}

// Purge deletes the mails sent more than Keep ago, a statement per batch,
// and answers how many it deleted. Replicas may purge at the same time:
// each row goes once, and unsent mails are never touched, however old.
func (s *Sender) Purge(ctx context.Context) (int64, error) {
	var n int64
	for {
		// The database's clock decides, as it stamped sent_at. By id: rows
		// are sent roughly in id order, so the old ones come first, and a
		// table kept to Keep's worth of mail needs no index by sent_at.
		tag, err := s.db.Exec(ctx, `DELETE FROM mail_outbox WHERE id IN (
				SELECT id FROM mail_outbox WHERE sent_at < clock_timestamp() - $1 * interval '1 microsecond'
				ORDER BY id LIMIT $2)`, s.opts.Keep.Microseconds(), purgeBatch)
		if err != nil {
			return n, fmt.Errorf("mail: purge sent mails: %w", err)
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			if n > 0 {
				s.log.Info("mail: purged sent mails", "mails", n, "older_than", s.opts.Keep.String())
			}
			return n, nil
		}
	}
}

// attempt claims mail id, sends it through every transport and records
// the outcome, in one transaction. It answers false, nil when the mail is
// no longer due or another replica holds it, and false, nil too when a
// transport failed (the mail is rescheduled).
func (s *Sender) attempt(ctx context.Context, id int64) (sent bool, err error) {
	// The transaction outlives a cancelled ctx by markTimeout: a mail just
	// handed to the transports must get its sent_at.
	dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout+markTimeout)
	defer cancel()
	err = postgres.WithTx(dbctx, s.db, func(tx pgx.Tx) error {
		var m Mail
		var attempts int
		err := tx.QueryRow(ctx, `SELECT from_addr, to_addrs, subject, body, attempts FROM mail_outbox
			WHERE id = $1 AND sent_at IS NULL AND next_attempt_at <= now()
			FOR UPDATE SKIP LOCKED`, id).Scan(&m.From, &m.To, &m.Subject, &m.Text, &attempts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // sent, rescheduled or being sent by another replica
		}
		if err != nil {
			return fmt.Errorf("mail: claim %d: %w", id, err)
		}
		if m.From == "" {
			m.From = s.opts.From
		}
		sendErr := s.send(ctx, m)
		if sendErr != nil && ctx.Err() != nil {
			// Stopping, not failing: roll back, the mail stays due.
			return ctx.Err()
		}
		mctx, cancel := context.WithTimeout(dbctx, markTimeout)
		defer cancel()
		if sendErr == nil {
			if _, err := tx.Exec(mctx, `UPDATE mail_outbox SET sent_at = clock_timestamp(), attempts = attempts + 1
				WHERE id = $1`, id); err != nil {
				return fmt.Errorf("mail: mark %d sent: %w", id, err)
			}
			sent = true
			s.log.Debug("mail: sent", "mail_id", id, "attempts", attempts+1)
			if attempts > 0 {
				s.log.Info("mail: sent after retries", "mail_id", id, "attempts", attempts+1)
			}
			return nil
		}
		retryIn := s.opts.Backoff[min(attempts, len(s.opts.Backoff)-1)]
		if _, err := tx.Exec(mctx, `UPDATE mail_outbox SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = clock_timestamp() + $3 * interval '1 microsecond' WHERE id = $1`,
			id, errorText(sendErr), retryIn.Microseconds()); err != nil {
			return fmt.Errorf("mail: reschedule %d: %w", id, err)
		}
		s.log.Warn("mail: send failed, will retry", "mail_id", id, "attempt", attempts+1,
			"retry_in", retryIn.String(), "error", sendErr.Error())
		return nil
	})
	if err != nil {
		return false, err
	}
	return sent, nil
}

// send hands m to each transport in turn; the first failure ends the
// attempt.
func (s *Sender) send(ctx context.Context, m Mail) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	for i, t := range s.opts.Transports {
		if err := t.Send(ctx, m); err != nil {
			return fmt.Errorf("transport %d (%T): %w", i+1, t, err)
		}
	}
	return nil
}

// maxErrorLen caps last_error: an SMTP server's answer can be long.
const maxErrorLen = 2000

// errorText is err as last_error can store it: PostgreSQL text takes
// neither invalid UTF-8 nor NUL, which a server's answer may hold, and a
// mail whose failure could not be recorded would block the outbox.
func errorText(err error) string {
	s := strings.ToValidUTF8(err.Error(), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > maxErrorLen {
		s = strings.ToValidUTF8(s[:maxErrorLen], "") + "..."
	}
	return s
}

// Transports are a service's: SMTP when smtpURL is set (from is the
// sender address), and the sandbox mailbox in test mode, so test mode
// keeps every mail whether or not a server is configured. None: mail
// cannot be delivered (Deliverable is false).
func Transports(smtpURL, from string, sandbox bool, rdb redis.UniversalClient) ([]Transport, error) {
	var out []Transport
	if smtpURL != "" {
		smtp, err := NewSMTP(smtpURL, from)
		if err != nil {
			return nil, err
		}
		out = append(out, smtp)
	}
	if sandbox {
		out = append(out, NewMailbox(rdb))
	}
	return out, nil
}
