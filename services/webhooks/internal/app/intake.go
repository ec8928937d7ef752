package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

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
	// The bodies receivers get, back to back in one buffer: one allocation
	// per call, not one per event. A body that outgrows the estimate moves
	// the buffer; the bodies taken before keep the old one.
	bodies := make([]byte, 0, bodiesSize(in))
	var scratch []byte // each event's bytes, until appended to its body
	for i, e := range in {
		// One pass over the envelope: its fields, and the connection and
		// chat read from the event, its bytes kept as they came for the
		// body (three passes and a reflective encode before:
		// BenchmarkWebhooksFanout's intake; decodeEnvelope).
		env, found, buf := decodeEnvelope(e.Payload, scratch)
		if !found {
			return invalidEnvelope(i, e.Payload)
		}
		scratch = buf
		start := len(bodies)
		bodies = appendBody(bodies, env.CompanyID, env.EventType, env.Event)
		events = append(events, domain.Event{
			ID: e.ID, CompanyID: e.CompanyID, ConnectionID: env.ConnectionID, ChatID: env.ChatID,
			Type: e.Type, Payload: bodies[start:len(bodies):len(bodies)], OccurredAt: e.OccurredAt,
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

// envelope is a spec-6 event as its emitter wrote it.
type envelope struct {
	CompanyID int64     `json:"company_id"`
	EventType string    `json:"event_type"`
	Event     eventKeys `json:"event"`
}

// eventKeys reads what the engine orders by from an envelope's event
// while the envelope is decoded, and copies the event's bytes into buf
// (the decoder's own may not be kept: json.Unmarshaler), which the intake
// reuses from one event to the next.
type eventKeys struct {
	ConnectionID int64
	ChatID       *int64
	found        bool
	buf          []byte
}

// UnmarshalJSON implements json.Unmarshaler (not called for a missing
// event; called with null for "event": null, which has no keys).
func (k *eventKeys) UnmarshalJSON(b []byte) error {
	var keys struct {
		ConnectionID int64  `json:"connection_id"`
		ChatID       *int64 `json:"chat_id"`
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	k.ConnectionID, k.ChatID, k.found, k.buf = keys.ConnectionID, keys.ChatID, true, append(k.buf[:0], b...)
	return nil
}

// invalidEnvelope is the error of the i-th event's payload, which the
// one pass did not take: the envelope's, or its event's, each named by its
// field, as two passes tell them apart. Only a bad payload pays for them.
func invalidEnvelope(i int, payload []byte) error {
	var env struct {
		CompanyID int64           `json:"company_id"`
		EventType string          `json:"event_type"`
		Event     json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		return apierr.Field(apierr.Body("events", i, "payload"), "json_invalid", "Invalid JSON: %v", err)
	}
	var keys struct {
		ConnectionID int64  `json:"connection_id"`
		ChatID       *int64 `json:"chat_id"`
	}
	err := json.Unmarshal(env.Event, &keys)
	if err == nil { // cannot happen: the one pass failed on something
		err = errUndecodable
	}
	return apierr.Field(apierr.Body("events", i, "payload", "event"), "json_invalid", "Invalid JSON: %v", err)
}

var errUndecodable = errors.New("the event does not decode")

// bodiesSize is room for the bodies of in: a body is its payload less
// what it re-spaces, plus its envelope's fields where the payload left
// them out.
func bodiesSize(in []IncomingEvent) int {
	n := 0
	for _, e := range in {
		n += len(e.Payload) + len(`{"company_id":0,"event_type":"","event":}`)
	}
	return n
}

// appendBody appends the body receivers get: the envelope's fields in the
// spec's order, compact (the emitter's outbox may have re-spaced it), "<",
// ">" and "&" as the emitter wrote them. Byte for byte what
// encoding/json's Encoder with SetEscapeHTML(false) makes of the envelope
// with the event as a json.RawMessage (TestAppendBody), without its
// reflection and its copy of the event.
func appendBody(dst []byte, company int64, kind string, event []byte) []byte {
	dst = append(dst, `{"company_id":`...)
	dst = strconv.AppendInt(dst, company, 10)
	dst = append(dst, `,"event_type":`...)
	dst = appendString(dst, kind)
	dst = append(dst, `,"event":`...)
	if bytes.ContainsAny(event, " \t\r\n") {
		var compact bytes.Buffer
		_ = json.Compact(&compact, event) // decoded above: valid JSON
		event = compact.Bytes()
	}
	return append(append(dst, event...), '}')
}

// appendString appends s as a JSON string: as it is when it needs no
// escape (event kinds do not), else as encoding/json writes it without
// HTML escaping.
func appendString(dst []byte, s string) []byte {
	plain := true
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] < utf8.RuneSelf && s[i] != '"' && s[i] != '\\'
	}
	if plain {
		return append(append(append(dst, '"'), s...), '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
