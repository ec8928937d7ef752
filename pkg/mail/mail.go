// Package mail is a durable mail outbox: a service queues a mail in the
// transaction of what the mail reports (Enqueue), so the two commit or
// fail together, and a Sender running in every replica sends queued mails
// with retries, so an SMTP outage delays mail and never loses it.
//
// A Sender claims each due mail in a transaction of its own (FOR UPDATE
// SKIP LOCKED), hands it to every Transport (SMTP: a mail server; Mailbox:
// the test mode's mailbox in Redis) and marks it sent; a failed mail is
// tried again after a growing pause, for ever. Delivery is at least once:
// a crash between sending a mail and marking it sent sends it again.
//
// The table each mailing service creates in its own migrations:
//
//	CREATE TABLE mail_outbox (
//	    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
//	    from_addr       text        NOT NULL,
//	    to_addrs        text[]      NOT NULL,
//	    subject         text        NOT NULL,
//	    body            text        NOT NULL,
//	    created_at      timestamptz NOT NULL DEFAULT now(),
//	    attempts        integer     NOT NULL DEFAULT 0,
//	    next_attempt_at timestamptz NOT NULL DEFAULT now(),
//	    last_error      text,
//	    sent_at         timestamptz
//	);
//	CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;
package mail

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"

	"github.com/jackc/pgx/v5"
)

// Mail is one message, plain text.
type Mail struct {
	// From is the sender's address; "" takes the Sender's default.
	From    string
	To      []string
	Subject string
	Text    string
}

// Channel is the PostgreSQL notification channel Enqueue signals on, so
// a Sender wakes at once instead of on its timer.
const Channel = "mail_outbox"

// Enqueue queues m in tx, the transaction of what the mail reports; it is
// sent once tx commits, and never if tx rolls back. Its addresses
// ("addr@host" or "Name <addr@host>") must parse: a mail that could never
// be sent is refused here rather than retried for ever.
func Enqueue(ctx context.Context, tx pgx.Tx, m Mail) error {
	if len(m.To) == 0 {
		return errors.New("mail: no recipient")
	}
	if m.From != "" {
		if _, err := netmail.ParseAddress(m.From); err != nil {
			return fmt.Errorf("mail: sender address %q: %w", m.From, err)
		}
	}
	for _, to := range m.To {
		if _, err := netmail.ParseAddress(to); err != nil {
			return fmt.Errorf("mail: recipient address %q: %w", to, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO mail_outbox (from_addr, to_addrs, subject, body) VALUES ($1, $2, $3, $4)`,
		m.From, m.To, m.Subject, m.Text); err != nil {
		return fmt.Errorf("mail: enqueue: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil {
		return fmt.Errorf("mail: notify: %w", err)
	}
	return nil
}
