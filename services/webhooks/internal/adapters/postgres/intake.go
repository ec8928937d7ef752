package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

var _ app.IntakeRepository = (*Repo)(nil)

// IngestEvents implements app.IntakeRepository. An event already stored
// (the relay handing a batch over again) plans nothing more.
func (r *Repo) IngestEvents(ctx context.Context, events []domain.Event) error {
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var planned int64
		for _, e := range events {
			var seq int64
			err := tx.QueryRow(ctx, `INSERT INTO events (id, company_id, connection_id, chat_id, event_type, payload, occurred_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING RETURNING seq`,
				e.ID, e.CompanyID, e.ConnectionID, e.ChatID, e.Type, string(e.Payload), e.OccurredAt).Scan(&seq)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("store event %s: %w", e.ID, err)
			}
			tag, err := tx.Exec(ctx, `INSERT INTO deliveries (event_id, subscription_id, url, lane, seq)
				SELECT $1, s.id, s.url, $5, $6 FROM subscriptions s
				WHERE s.company_id = $2 AND s.connection_id = $3 AND $4 = ANY (s.events)
				ORDER BY s.created_at, s.id
				-- A URL change moves what waits in its own transaction: it
				-- must not miss deliveries being planned on the old URL.
				FOR SHARE OF s`, e.ID, e.CompanyID, e.ConnectionID, e.Type, e.Lane(), seq)
			if err != nil {
				return fmt.Errorf("plan deliveries of %s: %w", e.ID, err)
			}
			planned += tag.RowsAffected()
		}
		if planned > 0 {
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
