package unavailable

import (
	"context"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/services/connections/internal/domain"
)

// Verify implements app.Verifier: no provider is reachable outside test
// mode yet, so no connection that needs one can be created.
func (Provider) Verify(_ context.Context, t domain.Type, _ map[string]any) (map[string]any, error) {
	return nil, apierr.ServiceUnavailable.Msg("%s connections cannot be checked with the provider: no provider is configured", t)
}
