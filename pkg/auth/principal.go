// Package auth authenticates every public RPC the same way, for REST callers
// (through the gateway) and direct gRPC callers alike: X-Api-Key -> principal
// through the identity service (cached in Redis), then the company, scope and
// permission rules that each RPC declares in its proto (see pkg/protoapi).
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// Scopes an API key can be granted (spec part 5). "x:read" grants x
// read-only.
var Scopes = []string{
	"connections", "integrations", "messaging", "members",
	"sales", "webhooks", "partners", "subscriptions",
}

// ReadSuffix marks a read-only grant.
const ReadSuffix = ":read"

// ValidScope reports whether s is a scope or a read-only grant of one.
func ValidScope(s string) bool {
	return slices.Contains(Scopes, strings.TrimSuffix(s, ReadSuffix))
}

// HashKey is how keys are stored and looked up: keys are long random
// strings, so a plain SHA-256 is enough (no password stretching needed).
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Granted reports whether the principal may use scope, for a write or a read.
func Granted(p *identityv1.Principal, scope string, write bool) bool {
	for _, s := range p.GetScopes() {
		if s == scope || (!write && s == scope+ReadSuffix) {
			return true
		}
	}
	return false
}

// HasPermission compares permission names case-insensitively.
func HasPermission(p *identityv1.Principal, perm string) bool {
	for _, have := range p.GetPermissions() {
		if strings.EqualFold(have, perm) {
			return true
		}
	}
	return false
}

type principalKey struct{}

// WithPrincipal stores the authenticated principal in the context.
func WithPrincipal(ctx context.Context, p *identityv1.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal of an authenticated public call.
func PrincipalFrom(ctx context.Context) (*identityv1.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*identityv1.Principal)
	return p, ok
}
