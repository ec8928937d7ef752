package outbox

import "github.com/jackc/pgx/v5"

// Queue adds Write's statement to b, for a transaction that sends its
// writes in one round trip (tx.SendBatch): the message and its signal
// commit with the batch's transaction like Write's. The batch's Close
// reports the statement's error.
func Queue(b *pgx.Batch, topic string, companyID int64, eventType string, payload any) {
	b.Queue(`INSERT INTO outbox (topic, company_id, event_type, payload) VALUES ($1, $2, $3, $4)
		RETURNING pg_notify($5, topic)`, topic, companyID, eventType, payload, Channel)
}
