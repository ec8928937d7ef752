package server

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/logging"
	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// authServer answers Authenticate according to the key hash it is given,
// so one RPC can exercise panics, plain errors, API errors and slow calls.
type authServer struct {
	identityv1.UnimplementedAuthServiceServer
	seen chan trace.SpanContext
}

func (a *authServer) Authenticate(ctx context.Context, req *identityv1.AuthenticateRequest) (*identityv1.Principal, error) {
	if a.seen != nil {
		a.seen <- trace.SpanContextFromContext(ctx)
	}
	switch req.GetKeyHash() {
	case "panic":
		panic("boom")
	case "plain":
		return nil, errors.New("db password is hunter2")
	case "api":
		return nil, apierr.CompanyNotFound.E()
	case "slow":
		time.Sleep(300 * time.Millisecond)
	}
	return &identityv1.Principal{CompanyId: 1}, nil
}

func start(t *testing.T, impl *authServer, log *syncBuffer) (identityv1.AuthServiceClient, context.CancelFunc, chan error, string) {
	t.Helper()
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	otel.SetTextMapPropagator(propagation.TraceContext{})
	a := auth.NewInterceptor(auth.Config{InternalToken: "secret"})
	srv := New(Options{Name: "test", Logger: logging.New(log, "test", "debug"), Interceptors: []grpc.UnaryServerInterceptor{a.Unary}, ShutdownTimeout: 5 * time.Second})
	identityv1.RegisterAuthServiceServer(srv.GRPC(), impl)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := DialInternal(lis.Addr().String(), "secret")
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); conn.Close() })
	return identityv1.NewAuthServiceClient(conn), cancel, done, lis.Addr().String()
}

func TestErrorsPanicsAndLogs(t *testing.T) {
	var log syncBuffer
	client, _, _, _ := start(t, &authServer{}, &log)
	ctx := context.Background()

	_, err := client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: "panic"})
	e, ok := apierr.FromError(err)
	require.True(t, ok, "a panic becomes the catalogue's 500: %v", err)
	require.Equal(t, 500, e.Status)

	_, err = client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: "plain"})
	e, ok = apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, "internal server error", e.Message, "internals never reach the client")

	_, err = client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: "api"})
	e, _ = apierr.FromError(err)
	require.EqualValues(t, 8000, e.Code)

	_, err = client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: "ok"})
	require.NoError(t, err)

	logs := log.String()
	require.Contains(t, logs, `"msg":"panic"`)
	require.Contains(t, logs, "hunter2", "the real error is logged")
	require.Contains(t, logs, `"error_code":8000`)
	require.Contains(t, logs, `"trace_id"`)
}

func TestInternalTokenAndHealth(t *testing.T) {
	var log syncBuffer
	_, _, _, addr := start(t, &authServer{}, &log)
	// A caller without the internal token is refused.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = identityv1.NewAuthServiceClient(conn).Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "ok"})
	e, ok := apierr.FromError(err)
	require.True(t, ok)
	require.Equal(t, 401, e.Status)
	// Health needs no token.
	res, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())
}

func TestTraceReachesTheService(t *testing.T) {
	var log syncBuffer
	impl := &authServer{seen: make(chan trace.SpanContext, 1)}
	client, _, _, _ := start(t, impl, &log)
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("caller").Start(context.Background(), "caller")
	defer span.End()
	_, err := client.Authenticate(ctx, &identityv1.AuthenticateRequest{KeyHash: "ok"})
	require.NoError(t, err)
	got := <-impl.seen
	require.Equal(t, span.SpanContext().TraceID(), got.TraceID(), "the callee continues the caller's trace")
	require.True(t, strings.Contains(log.String(), span.SpanContext().TraceID().String()))
}

func TestGracefulStopDrainsInFlightCalls(t *testing.T) {
	var log syncBuffer
	client, cancel, done, _ := start(t, &authServer{}, &log)
	res := make(chan error, 1)
	go func() {
		_, err := client.Authenticate(context.Background(), &identityv1.AuthenticateRequest{KeyHash: "slow"})
		res <- err
	}()
	time.Sleep(100 * time.Millisecond) // the call is in flight
	cancel()
	require.NoError(t, <-res, "the in-flight call completes")
	require.NoError(t, <-done)
	require.Contains(t, log.String(), `"msg":"stopped"`)
}
