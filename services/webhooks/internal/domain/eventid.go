package domain

import (
	"encoding/base32"
	"fmt"

	"github.com/google/uuid"
)

// crockford is Crockford's base32 alphabet in lower case: no i, l, o, u,
// so an id read aloud or retyped is not mistaken.
var crockford = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// WebhookID is the event's id as receivers see it (header webhook-id, the
// deliveries log): "evt_" and the 16 bytes of its uuid in 26 characters.
// The same event keeps it in every retry and for every subscription.
func WebhookID(eventID string) (string, error) {
	u, err := uuid.Parse(eventID)
	if err != nil {
		return "", fmt.Errorf("event id %q: %w", eventID, err)
	}
	// One allocation (the string): the sender makes this per request.
	var out [4 + 26]byte
	copy(out[:], "evt_")
	crockford.Encode(out[4:], u[:])
	return string(out[:]), nil
}
