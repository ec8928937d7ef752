package outbox

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Entry is one message of QueueMany.
type Entry struct {
	CompanyID int64
	Type      string
	// Payload is encoded with encoding/json (a string or []byte too, as a
	// JSON string; Write passes those through as JSON text).
	Payload any
}

// QueueMany adds to b, for a transaction that sends its writes in one
// round trip (tx.SendBatch), one statement writing entries in their order
// (their seq follows it) with their signal, as Write would one by one: a
// worker that records many changes in one transaction writes their
// messages in one statement. The batch's Close reports its error.
func QueueMany(b *pgx.Batch, topic string, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	companies := make([]int64, len(entries))
	types := make([]string, len(entries))
	payloads := make([]string, len(entries))
	for i, e := range entries {
		p, err := json.Marshal(e.Payload)
		if err != nil {
			return fmt.Errorf("outbox: encode %s %s: %w", topic, e.Type, err)
		}
		companies[i], types[i], payloads[i] = e.CompanyID, e.Type, string(p)
	}
	b.Queue(`INSERT INTO outbox (topic, company_id, event_type, payload)
		SELECT $1, u.company_id, u.event_type, u.payload
		FROM unnest($2::bigint[], $3::text[], $4::jsonb[]) WITH ORDINALITY AS u (company_id, event_type, payload, n)
		ORDER BY u.n
		RETURNING pg_notify($5, topic)`, topic, companies, types, payloads, Channel)
	return nil
}
