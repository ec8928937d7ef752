package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

var _ app.IntakeRepository = (*Repo)(nil)

// IngestEvents implements app.IntakeRepository: two statements per
// batch, however long. An event already stored (the relay handing a batch
// over again) plans nothing more. Events take their seq, the order their
// lanes deliver in, in the batch's order (the emitter's, oldest first).
func (r *Repo) IngestEvents(ctx context.Context, events []domain.Event) error {
	n := len(events)
	if n == 0 {
		return nil
	}
	ids, types, payloads := make([]string, n), make([]string, n), make([]string, n)
	companies, connections := make([]int64, n), make([]int64, n)
	chats := make([]*int64, n)
	occurred := make([]time.Time, n)
	for i, e := range events {
		ids[i], types[i], payloads[i] = e.ID, e.Type, string(e.Payload)
		companies[i], connections[i], chats[i], occurred[i] = e.CompanyID, e.ConnectionID, e.ChatID, e.OccurredAt
	}
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `WITH stored AS (
				INSERT INTO events (id, company_id, connection_id, chat_id, event_type, payload, occurred_at)
				SELECT u.id, u.company_id, u.connection_id, u.chat_id, u.event_type, u.payload::json, u.occurred_at
				FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::timestamptz[])
					WITH ORDINALITY AS u(id, company_id, connection_id, chat_id, event_type, payload, occurred_at, n)
				ORDER BY u.n
				ON CONFLICT (id) DO NOTHING
				RETURNING id, company_id, connection_id, chat_id, event_type, seq)
			INSERT INTO deliveries (event_id, subscription_id, url, lane, seq)
			SELECT e.id, s.id, s.url, coalesce(e.chat_id, 0), e.seq
			FROM stored e JOIN subscriptions s
				ON s.company_id = e.company_id AND s.connection_id = e.connection_id AND e.event_type = ANY (s.events)
			ORDER BY e.seq, s.created_at, s.id
			-- A URL change moves what waits in its own transaction: it must
			-- not miss deliveries being planned on the old URL.
			FOR SHARE OF s`,
			ids, companies, connections, chats, types, payloads, occurred)
		if err != nil {
			return fmt.Errorf("store %d events from %s: %w", n, ids[0], err)
		}
		if tag.RowsAffected() > 0 {
			return notifyDeliveries(ctx, tx)
		}
		return nil
	})
}

// DeliveriesChannel is the notification a transaction that queues
// deliveries sends when it commits, so every replica's engine claims at
// once instead of on its timer.
const DeliveriesChannel = "webhook_deliveries"

func notifyDeliveries(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, DeliveriesChannel); err != nil {
		return fmt.Errorf("notify deliveries: %w", err)
	}
	return nil
}
