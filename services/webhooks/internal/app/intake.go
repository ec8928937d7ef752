package app

import (
	"context"
	"encoding/json"
	"time"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/webhooks/internal/domain"
)

// IntakeRepository stores events and plans their deliveries.
type IntakeRepository interface {
	// IngestEvents stores the events not stored yet and, for each, one
	// delivery per subscription of its company, connection and kind, in one
	// transaction.
	IngestEvents(ctx context.Context, events []domain.Event) error
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
			Event struct {
				ConnectionID int64  `json:"connection_id"`
				ChatID       *int64 `json:"chat_id"`
			} `json:"event"`
		}
		if err := json.Unmarshal(e.Payload, &env); err != nil {
			return apierr.Field(apierr.Body("events", i, "payload"), "json_invalid", "Invalid JSON: %v", err)
		}
		events = append(events, domain.Event{
			ID: e.ID, CompanyID: e.CompanyID, ConnectionID: env.Event.ConnectionID, ChatID: env.Event.ChatID,
			Type: e.Type, Payload: e.Payload, OccurredAt: e.OccurredAt,
		})
	}
	return s.intake.IngestEvents(ctx, events)
}
