// Package outbox carries what a service must tell others about a change it
// commits: the service writes a message to its own `outbox` table in the
// transaction of the change (Write), and a Relay running in the same
// service hands the committed messages, oldest first, to where they go (the
// webhooks service, another service's internal API) and deletes them, in
// the transaction that read them, once handed over. A change and its
// message therefore commit or fail together, and a receiver that is down
// only delays the message: the relay retries with a growing pause until it
// is taken.
//
// Order is commit order as far as it can be told: messages go out by seq,
// and a message whose transaction took its seq early but committed late is
// sent when it commits, never skipped. So two changes that are themselves
// ordered (both lock one row: one connection's status changes) go out in
// their order; unrelated concurrent changes have no order to keep.
//
// Delivery is at least once: a batch whose publisher succeeded is sent
// again if deleting it fails, so publishers must be idempotent (by Message
// ID, or by the nature of the change).
//
// The table each emitting service creates in its own migrations:
//
//	CREATE TABLE outbox (
//	    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
//	    id           uuid        NOT NULL DEFAULT gen_random_uuid(),
//	    topic        text        NOT NULL,
//	    company_id   bigint      NOT NULL,
//	    event_type   text        NOT NULL,
//	    payload      jsonb       NOT NULL,
//	    created_at   timestamptz NOT NULL DEFAULT now(),
//	    published_at timestamptz
//	);
//	CREATE INDEX outbox_unpublished_idx ON outbox (topic, seq) WHERE published_at IS NULL;
//
// seq is the key the relay reads and deletes by; id, which receivers
// deduplicate by, needs no index of its own (a random uuid's would cost a
// random page of its tree per message). The relay deletes what it
// publishes; published_at stays for replicas of releases that marked rows
// instead (they run beside this one during a rolling deploy), and the
// relay reads only rows where it is null.
//
// A topic is one destination with its own order: a receiver that is down
// holds back only its own topic.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the PostgreSQL notification channel Write signals on, with
// the topic as payload, so a relay wakes at once instead of on its timer.
const Channel = "outbox"

// Message is one row of the outbox.
type Message struct {
	// ID is unique and stable: receivers deduplicate by it.
	ID    string
	Seq   int64
	Topic string
	// CompanyID is the company the message is about.
	CompanyID int64
	Type      string
	// Payload is the message body as JSON.
	Payload   json.RawMessage
	CreatedAt time.Time
}

// Write adds a message to the outbox in tx, the transaction of the change it
// tells, and signals the relays; the signal is delivered when tx commits
// and dropped if it rolls back. payload is encoded as JSON.
//
// One statement, one round trip: the signal is sent from RETURNING, so only
// for a row written. PostgreSQL folds identical notifications of one
// transaction into one.
func Write(ctx context.Context, tx pgx.Tx, topic string, companyID int64, eventType string, payload any) error {
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (topic, company_id, event_type, payload) VALUES ($1, $2, $3, $4)
		RETURNING pg_notify($5, topic)`,
		topic, companyID, eventType, payload, Channel); err != nil {
		return fmt.Errorf("outbox: write %s %s: %w", topic, eventType, err)
	}
	return nil
}
