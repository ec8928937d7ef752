package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	waitFor = 5 * time.Second
	tick    = 50 * time.Millisecond
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// firstError is the first item of a 422 detail.errors.
func firstError(t *testing.T, r response) map[string]any {
	t.Helper()
	require.Equal(t, 422, r.Status, "%s", r.Body)
	errs, ok := r.JSON(t)["detail"].(map[string]any)["errors"].([]any)
	require.True(t, ok && len(errs) > 0, "no detail.errors in %s", r.Body)
	return errs[0].(map[string]any)
}
