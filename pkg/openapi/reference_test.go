package openapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/proto/openapi"
)

// Issue 26: the reference as a client reads it.

var methods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// TestPathItemsHoldOnlyMethods: a path item holds methods and the fields
// OpenAPI gives it; anything else (an x- extension) is listed by Redoc as
// one more operation (it showed X-MULTI-SEGMENT-VARIABLES). The mark of a
// variable spanning segments is on each operation, which the e2e
// validation reads.
func TestPathItemsHoldOnlyMethods(t *testing.T) {
	allowed := map[string]bool{"$ref": true, "summary": true, "description": true, "servers": true, "parameters": true}
	for name, raw := range map[string][]byte{"public": openapi.Public(), "operator": openapi.Operator()} {
		doc := load(t, raw)
		for path, item := range at(t, doc, "paths").(map[string]any) {
			for key := range item.(map[string]any) {
				require.True(t, methods[key] || allowed[key], "%s: path %s has the key %q", name, path, key)
			}
		}
	}
	doc := load(t, openapi.Public())
	for _, verb := range []string{"get", "post", "put", "patch", "delete"} {
		require.Equal(t, []any{"path"}, at(t, doc, "paths", "/v2/users/me/{path}", verb, "x-multi-segment-variables"), verb)
		require.NotContains(t, at(t, doc, "paths", "/v2/users/me/profile", verb), "x-multi-segment-variables",
			"the literal path's copy has no variable")
	}
}
