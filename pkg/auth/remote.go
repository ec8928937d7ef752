package auth

import (
	"context"

	"google.golang.org/grpc"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// Remote asks the identity service's internal AuthService.
type Remote struct {
	client identityv1.AuthServiceClient
}

// NewRemote uses conn, which must carry the internal token (see
// server.DialInternal).
func NewRemote(conn grpc.ClientConnInterface) *Remote {
	return &Remote{client: identityv1.NewAuthServiceClient(conn)}
}

// Authenticate implements Source.
func (r *Remote) Authenticate(ctx context.Context, keyHash string) (*identityv1.Principal, error) {
	// identity answers the catalogue's 401 for unknown keys, which passes
	// through as is.
	return r.client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: keyHash})
}
