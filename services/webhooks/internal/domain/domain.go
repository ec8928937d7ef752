// Package domain holds the webhooks service's types and the rules that
// need no storage.
package domain

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"
)

// ErrNotFound is a subscription that does not exist in the company.
var ErrNotFound = errors.New("not found")

// EventTypes are the event kinds a subscription may name: spec 6's five,
// and waba_templates.status_changed, the provider's moderation of a
// business template (docs/architecture.md "Events").
var EventTypes = []string{
	"messages.create", "messages.delivery.delivered", "messages.delivery.read",
	"messages.delivery.error", "connections.status_changed", "waba_templates.status_changed",
}

// IsEventType reports whether s is one of EventTypes.
func IsEventType(s string) bool {
	for _, t := range EventTypes {
		if t == s {
			return true
		}
	}
	return false
}

// Subscription sends the events of its kinds of one connection to a URL.
type Subscription struct {
	ID           string
	CompanyID    int64
	ConnectionID int64
	URL          string
	Events       []string
	Secret       string
	CreatedAt    time.Time
}

// NewSecret is a signing secret the Standard Webhooks way: "whsec_" and
// the base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// Event is one event of spec 6 taken in from a service's outbox.
type Event struct {
	ID           string
	CompanyID    int64
	ConnectionID int64
	// ChatID is the chat of a message event (nil otherwise): one chat's
	// first deliveries go in order.
	ChatID     *int64
	Type       string
	Payload    []byte
	OccurredAt time.Time
}

// Lane is the order the event's first deliveries keep: one chat's events
// go one at a time; events of the connection itself (no chat) form lane 0.
func (e Event) Lane() int64 {
	if e.ChatID != nil {
		return *e.ChatID
	}
	return 0
}
