package domain

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// ErrDeliveryNotFound is a delivery that is not one of the subscription's.
var ErrDeliveryNotFound = errors.New("delivery not found")

// PingEventType is the kind of the test event POST .../actions/ping
// sends; no subscription names it, and it goes to one subscription only.
const PingEventType = "webhooks.ping"

// DeliveriesPageSize is the default and largest page of the deliveries
// log.
const DeliveriesPageSize = 100

// Delivery is one delivery of an event to a subscription, with what its
// last attempt gave (the deliveries log).
type Delivery struct {
	ID int64
	// EventID is the event's uuid (WebhookID gives what receivers see).
	EventID   string
	EventType string
	// Attempt counts the attempts made.
	Attempt int
	// Status is one of StatusPending, StatusSucceeded, StatusFailed,
	// StatusDropped.
	Status string
	// ResponseStatus, Error and DurationMS are the last attempt's; nil
	// before it, or when it had none (no answer, no error).
	ResponseStatus *int
	Error          *string
	DurationMS     *int
	CreatedAt      time.Time
	// NextAttemptAt is when the next attempt is due: nil unless pending.
	NextAttemptAt *time.Time
}

// ParseDeliveryID reads a delivery id from the path: a positive decimal
// number written the canonical way. Anything else names no delivery (0).
func ParseDeliveryID(s string) int64 {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != s {
		return 0
	}
	return id
}

type pingEnvelope struct {
	CompanyID int64     `json:"company_id"`
	EventType string    `json:"event_type"`
	Event     pingEvent `json:"event"`
}

type pingEvent struct {
	WebhookID    string `json:"webhook_id"`
	ConnectionID int64  `json:"connection_id"`
}

// PingPayload is the body of a ping to sub, compact, shaped like the
// spec-6 envelope: {"company_id","event_type","event":{"webhook_id",
// "connection_id"}}.
func PingPayload(sub Subscription) ([]byte, error) {
	return json.Marshal(pingEnvelope{
		CompanyID: sub.CompanyID, EventType: PingEventType,
		Event: pingEvent{WebhookID: sub.ID, ConnectionID: sub.ConnectionID},
	})
}
