package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard.dev/services/webhooks/internal/app"
	"switchboard.dev/services/webhooks/internal/domain"
)

var _ app.IntakeRepository = (*Repo)(nil)

// IngestEvents implements app.IntakeRepository: one statement per batch,
// however long, so one round trip and the statement's own transaction (it
// was five: begin, the integration targets, the batch, the notification,
// and commit; the relay waits for each call, so the intake's rate is its
// latency). An event already stored (the relay handing a batch over
// again) plans nothing more. Events take their seq, the order their lanes
// deliver in, in the batch's order (the emitter's, oldest first).
// Integration targets get their delivery id (integration_targets) first,
// in the same statement; the notification is sent when it commits, if it
// planned anything. Each delivery keeps where its event was written
// (event_at), so its claim reads the payload there (Queue's eventOf).
//
// The events go in with a plain INSERT first: a batch is handed over again
// only after the relay lost an answer (a timeout, a restart), and checking
// every event for a conflict (ON CONFLICT's speculative insertion) cost
// about 1.5 µs per event, an eighth of the statement, to find nothing. A
// batch holding an event stored already fails on events' primary key,
// rolls back whole, and is taken in again with ON CONFLICT DO NOTHING,
// which plans nothing twice (TestIngestAgainPlansNothingTwice). The
// primary key decides either way, so two replicas taking the same batch at
// once store it once: the second waits for the first's row, then fails
// and goes the second way.
func (r *Repo) IngestEvents(ctx context.Context, events []domain.Event, targets []domain.IntegrationTarget) error {
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
	// The integrations once each (their delivery id and secret), and the
	// targets as the columns the intake joins.
	iCompanies, iIDs, iSecrets := []int64{}, []int64{}, []string{}
	tCompanies, tConnections, tIntegrations, tURLs := []int64{}, []int64{}, []int64{}, []string{}
	seen := map[int64]bool{}
	for _, t := range targets {
		if !seen[t.IntegrationID] {
			seen[t.IntegrationID] = true
			iCompanies, iIDs, iSecrets = append(iCompanies, t.CompanyID), append(iIDs, t.IntegrationID), append(iSecrets, t.Secret)
		}
		tCompanies, tConnections = append(tCompanies, t.CompanyID), append(tConnections, t.ConnectionID)
		tIntegrations, tURLs = append(tIntegrations, t.IntegrationID), append(tURLs, t.URL)
	}
	args := []any{ids, companies, connections, chats, types, payloads, occurred,
		iCompanies, iIDs, iSecrets,
		tCompanies, tConnections, tIntegrations, tURLs, domain.IntegrationEventTypes,
		DeliveriesChannel}
	var planned int64
	err := r.db.QueryRow(ctx, ingestFresh, args...).Scan(&planned)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "events_pkey" {
		err = r.db.QueryRow(ctx, ingestAgain, args...).Scan(&planned)
	}
	if err != nil {
		return fmt.Errorf("store %d events from %s: %w", n, ids[0], err)
	}
	return nil
}

// ingest is IngestEvents' statement, with what it does with an event
// stored already: nothing (onConflict "ON CONFLICT (id) DO NOTHING"), or
// fail (""), so the whole batch rolls back.
func ingest(onConflict string) string {
	return `WITH integrations AS (
			-- A v1 integration's delivery id is made once and kept with
			-- the secret that signs its deliveries.
			INSERT INTO integration_targets (id, company_id, integration_id, secret)
			SELECT gen_random_uuid(), u.company_id, u.integration_id, u.secret
			FROM unnest($8::bigint[], $9::bigint[], $10::text[]) AS u(company_id, integration_id, secret)
			ORDER BY u.integration_id
			ON CONFLICT (integration_id) DO UPDATE SET secret = EXCLUDED.secret
			RETURNING integration_id, id),
		stored AS (
			INSERT INTO events (id, company_id, connection_id, chat_id, event_type, payload, occurred_at)
			SELECT u.id, u.company_id, u.connection_id, u.chat_id, u.event_type, u.payload::json, u.occurred_at
			FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::timestamptz[])
				WITH ORDINALITY AS u(id, company_id, connection_id, chat_id, event_type, payload, occurred_at, n)
			ORDER BY u.n
			` + onConflict + `
			RETURNING id, company_id, connection_id, chat_id, event_type, seq, ctid),
		-- The subscriptions of the batch's connections, locked once each
		-- (not once per event joined to them): a URL change moves what
		-- waits in its own transaction, and must not miss deliveries being
		-- planned on the old URL.
		locked AS (
			SELECT s.id, s.company_id, s.connection_id, s.url, s.events, s.created_at FROM subscriptions s
			WHERE (s.company_id, s.connection_id) IN (SELECT * FROM unnest($2::bigint[], $3::bigint[]))
			FOR SHARE),
		subs AS (
			INSERT INTO deliveries (event_id, event_at, subscription_id, url, lane, seq)
			SELECT e.id, e.ctid, s.id, s.url, coalesce(e.chat_id, 0), e.seq
			FROM stored e JOIN locked s
				ON s.company_id = e.company_id AND s.connection_id = e.connection_id AND e.event_type = ANY (s.events)
			ORDER BY e.seq, s.created_at, s.id
			RETURNING 1),
		integs AS (
			INSERT INTO deliveries (event_id, event_at, subscription_id, url, lane, seq)
			SELECT e.id, e.ctid, i.id, t.url, coalesce(e.chat_id, 0), e.seq
			FROM stored e
				JOIN unnest($11::bigint[], $12::bigint[], $13::bigint[], $14::text[]) AS t(company_id, connection_id, integration_id, url)
					ON t.company_id = e.company_id AND t.connection_id = e.connection_id
				JOIN integrations i ON i.integration_id = t.integration_id
			WHERE e.event_type = ANY ($15::text[])
			ORDER BY e.seq, i.id
			RETURNING 1),
		planned AS (
			SELECT (SELECT count(*) FROM subs) + (SELECT count(*) FROM integs) AS n),
		notified AS (
			SELECT pg_notify($16, '') FROM planned WHERE n > 0)
		SELECT planned.n FROM planned LEFT JOIN notified ON true`
}

var (
	ingestFresh = ingest("")
	ingestAgain = ingest("ON CONFLICT (id) DO NOTHING")
)

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
