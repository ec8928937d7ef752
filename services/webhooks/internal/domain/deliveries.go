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

// Delivery is one row of a subscription's deliveries log: one attempt of
// a delivery (probes included), the retention giving a delivery up, or a
// delivery still waiting for its first attempt (a ping or a redelivery is
// answered as such a row).
type Delivery struct {
	// ID is the delivery's (every row of one delivery has it): what a
	// redelivery names.
	ID int64
	// EventID is the event's uuid (WebhookID gives what receivers see).
	EventID   string
	EventType string
	// Attempt is the attempt's number, from 1; 0 on the row of a delivery
	// not attempted yet; the retention's row repeats the number made.
	Attempt int
	// Status is the delivery's as this row left it: one of StatusPending
	// (a failed attempt that will be retried), StatusSucceeded,
	// StatusFailed, StatusDropped.
	Status string
	// ResponseStatus, Error and DurationMS are the attempt's; nil when it
	// had none (no answer, no error) and on a row that is no attempt.
	ResponseStatus *int
	Error          *string
	DurationMS     *int
	// CreatedAt is when the attempt's result was recorded (the delivery's
	// creation for a row of one not attempted yet).
	CreatedAt time.Time
	// NextAttemptAt is when the delivery's next attempt was due as this
	// row left it: nil unless Status is pending.
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
