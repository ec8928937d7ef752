package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/webhooks/internal/domain"
)

// IntakeRepository stores events and plans their deliveries.
type IntakeRepository interface {
	// IngestEvents stores the events not stored yet and, for each, one
	// delivery per subscription of its company, connection and kind and
	// one per integration target of its company and connection, in one
	// transaction.
	IngestEvents(ctx context.Context, events []domain.Event, targets []domain.IntegrationTarget) error
}

// IntegrationTargets are the v1 webhook integrations (the identity
// service's) that events of connections go to, as they are now: every
// event kind, no filter.
type IntegrationTargets interface {
	Targets(ctx context.Context, connections []domain.CompanyConnection) ([]domain.IntegrationTarget, error)
}

// IncomingEvent is an event as a service's relay hands it over.
type IncomingEvent struct {
	ID         string
	CompanyID  int64
	Type       string
	Payload    []byte
	OccurredAt time.Time
}

// Ingest takes in events (idempotent by id). What the engine orders by,
// the connection and the chat, is read from the spec-6 envelope.
func (s *Service) Ingest(ctx context.Context, in []IncomingEvent) error {
	events := make([]domain.Event, 0, len(in))
	for i, e := range in {
		var env struct {
			CompanyID int64           `json:"company_id"`
			EventType string          `json:"event_type"`
			Event     json.RawMessage `json:"event"`
		}
		var keys struct {
			ConnectionID int64  `json:"connection_id"`
			ChatID       *int64 `json:"chat_id"`
		}
		if err := json.Unmarshal(e.Payload, &env); err != nil {
			return apierr.Field(apierr.Body("events", i, "payload"), "json_invalid", "Invalid JSON: %v", err)
		}
		if err := json.Unmarshal(env.Event, &keys); err != nil {
			return apierr.Field(apierr.Body("events", i, "payload", "event"), "json_invalid", "Invalid JSON: %v", err)
		}
		// The body receivers get: the envelope's fields in the spec's order,
		// compact (the emitter's outbox may have re-spaced it).
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false) // "<" stays "<", as the emitter wrote it
		if err := enc.Encode(env); err != nil {
			return fmt.Errorf("event %s: %w", e.ID, err)
		}
		events = append(events, domain.Event{
			ID: e.ID, CompanyID: e.CompanyID, ConnectionID: keys.ConnectionID, ChatID: keys.ChatID,
			Type: e.Type, Payload: bytes.TrimSuffix(body.Bytes(), []byte("\n")), OccurredAt: e.OccurredAt,
		})
	}
	// Where the events go besides subscriptions is fixed now: an
	// integration disabled, unbound or without a URL at this moment never
	// gets them.
	var targets []domain.IntegrationTarget
	if s.targets != nil {
		pairs := make([]domain.CompanyConnection, 0, len(events))
		seen := make(map[domain.CompanyConnection]bool, len(events))
		for _, e := range events {
			p := domain.CompanyConnection{CompanyID: e.CompanyID, ConnectionID: e.ConnectionID}
			if !seen[p] {
				seen[p] = true
				pairs = append(pairs, p)
			}
		}
		var err error
		if targets, err = s.targets.Targets(ctx, pairs); err != nil {
			return err
		}
	}
	return s.intake.IngestEvents(ctx, events, targets)
}
