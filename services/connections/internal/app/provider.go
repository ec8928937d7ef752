package app

import (
	"context"

	"switchboard.dev/services/connections/internal/domain"
)

// Verifier is the provider side of a new connection (adapters/sandbox in
// test mode, adapters/unavailable otherwise): it checks the credentials
// given on create and answers the params only the provider knows (bot ids
// and names, group names, the whatsapp qr_url).
type Verifier interface {
	// Verify gets every checked create param of a type (public and private)
	// and answers the provider's params, or a 422 naming the refused
	// field (body.params.<field>).
	Verify(ctx context.Context, t domain.Type, given map[string]any) (map[string]any, error)
}
