package grpc

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/protoapi"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
	"switchboard.dev/services/identity/internal/domain"
)

// TestListLimitsHoldEveryName: the item limits of the operator's key and
// role creates (issue 25) are each name once; a new scope or permission
// must raise them, or a valid request would be refused.
func TestListLimitsHoldEveryName(t *testing.T) {
	limit := func(m protoreflect.ProtoMessage, field string) uint64 {
		t.Helper()
		n, ok, err := protoapi.MaxItems(m.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(field)))
		require.NoError(t, err)
		require.True(t, ok, field)
		return n
	}
	require.EqualValues(t, 2*len(auth.Scopes), limit(&identityv1.CreateApiKeyRequest{}, "scopes"), "each scope, plain or :read")
	require.EqualValues(t, len(domain.Permissions), limit(&identityv1.CreateRoleRequest{}, "permissions"))
}
