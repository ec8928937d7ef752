package validate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard.dev/pkg/apierr"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

func TestViolationsBecome422WithLocations(t *testing.T) {
	v, err := New()
	require.NoError(t, err)

	zero := int32(0)
	err = v.Check("/switchboard.identity.v1.IdentityService/ListIntegrations", &identityv1.ListIntegrationsRequest{CompanyId: 1, Limit: &zero, Offset: -1})
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, 422, e.Status)
	require.EqualValues(t, 1, e.Code)
	errs := e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Len(t, errs, 2)
	require.Equal(t, []any{"query", "limit"}, errs[0].Location)
	require.Equal(t, "out_of_range", errs[0].Type)
	require.Equal(t, []any{"query", "offset"}, errs[1].Location)
	require.Equal(t, "greater_than_equal", errs[1].Type)

	empty := ""
	err = v.Check("/switchboard.identity.v1.IdentityService/UpdateIntegration", &identityv1.UpdateIntegrationRequest{CompanyId: 1, IntegrationId: 2, Name: &empty})
	e, _ = apierr.FromError(err)
	errs = e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Equal(t, []any{"body", "name"}, errs[0].Location)
	require.Equal(t, "string_too_short", errs[0].Type)

	err = v.Check("/switchboard.identity.v1.OperatorService/CreateMember", &identityv1.CreateMemberRequest{CompanyId: 1, Email: "x@example.com", DisplayName: "X"})
	e, _ = apierr.FromError(err)
	errs = e.Detail.(map[string]any)["errors"].([]apierr.FieldError)
	require.Equal(t, []any{"body", "role"}, errs[0].Location)
	require.Equal(t, "missing", errs[0].Type)

	require.NoError(t, v.Check("/switchboard.identity.v1.IdentityService/ListIntegrations", &identityv1.ListIntegrationsRequest{CompanyId: 1}))
}
