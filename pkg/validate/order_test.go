package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"switchboard.dev/pkg/apierr"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// unary runs the interceptor on req as method, with a handler that calls
// Deferred the way a validate_in_handler method's does; it answers the
// interceptor's error, and whether the handler ran with Deferred's.
func unary(t *testing.T, ctx context.Context, method string, req proto.Message) (err error, ran bool, deferred error) {
	t.Helper()
	i, err := New()
	require.NoError(t, err)
	_, err = i.Unary(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, req any) (any, error) {
		ran = true
		deferred = Deferred(ctx, req.(proto.Message))
		return nil, nil
	})
	return err, ran, deferred
}

func apiErr(t *testing.T, err error) *apierr.Error {
	t.Helper()
	var e *apierr.Error
	require.True(t, errors.As(err, &e), "%v", err)
	return e
}

const bind = "/switchboard.identity.v1.V1ManagementIntegrationsService/BindV1Integration"

// TestDeferredValidation: a validate_in_handler method reaches its handler
// with a broken body, and Deferred answers the 422 there; another method
// is refused before its handler, and Deferred checks nothing in it.
func TestDeferredValidation(t *testing.T) {
	err, ran, deferred := unary(t, context.Background(), bind, &identityv1.BindV1IntegrationRequest{IntegrationId: 1})
	require.NoError(t, err)
	require.True(t, ran)
	e := apiErr(t, deferred)
	require.Equal(t, int32(1), e.Code)
	require.Equal(t, []apierr.FieldError{{Location: []any{"body", "connection_id"}, Message: "Field required", Type: "missing"}},
		e.Detail.(map[string]any)["errors"])

	conn := int64(5)
	err, ran, deferred = unary(t, context.Background(), bind, &identityv1.BindV1IntegrationRequest{IntegrationId: 1, ConnectionId: &conn})
	require.NoError(t, err)
	require.True(t, ran)
	require.NoError(t, deferred)

	err, ran, _ = unary(t, context.Background(), "/switchboard.identity.v1.V1ManagementIntegrationsService/CreateV1Integration",
		&identityv1.CreateV1IntegrationRequest{Type: identityv1.V1IntegrationType_V1_INTEGRATION_TYPE_WEBHOOK})
	require.False(t, ran, "validated before the handler")
	require.Equal(t, []any{"body", "name"}, apiErr(t, err).Detail.(map[string]any)["errors"].([]apierr.FieldError)[0].Location)
	require.NoError(t, Deferred(context.Background(), &identityv1.CreateV1IntegrationRequest{}), "outside a deferred call")
}

// TestBodyErrorHeader: the body error the gateway passes on is the 422,
// before the handler and before any rule; one that does not parse is
// still a 422 at the body.
func TestBodyErrorHeader(t *testing.T) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(BodyErrorHeader,
		`{"location":["body","name"],"message":"Input should be a valid string","type":"string_type"}`))
	conn := int64(5)
	err, ran, _ := unary(t, ctx, bind, &identityv1.BindV1IntegrationRequest{IntegrationId: 1, ConnectionId: &conn})
	require.False(t, ran)
	e := apiErr(t, err)
	require.Equal(t, 422, e.Status)
	require.Equal(t, []apierr.FieldError{{Location: []any{"body", "name"}, Message: "Input should be a valid string", Type: "string_type"}},
		e.Detail.(map[string]any)["errors"])

	ctx = metadata.NewIncomingContext(context.Background(), metadata.Pairs(BodyErrorHeader, "not json"))
	err, ran, _ = unary(t, ctx, bind, &identityv1.BindV1IntegrationRequest{IntegrationId: 1, ConnectionId: &conn})
	require.False(t, ran)
	require.Equal(t, []apierr.FieldError{{Location: []any{"body"}, Message: "Invalid JSON", Type: "json_invalid"}},
		apiErr(t, err).Detail.(map[string]any)["errors"])
}
