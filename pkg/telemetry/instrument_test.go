package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

const (
	traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanID  = "00f067aa0ba902b7"
)

// install sets what Setup sets when nothing exports.
func install(t *testing.T) {
	t.Helper()
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
}

// Both forms: the light one (nothing exports) and OpenTelemetry's own.
var modes = map[string]string{"light": "none", "otel": "console"}

func TestHTTPHandlerContinuesTheCallersTrace(t *testing.T) {
	install(t)
	for mode, exporter := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_EXPORTER", exporter)
			var seen trace.SpanContext
			h := HTTPHandler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				seen = trace.SpanContextFromContext(r.Context())
			}), "test", func(r *http.Request) string { return r.URL.Path })
			r := httptest.NewRequest("GET", "/x", nil)
			r.Header.Set("Traceparent", "00-"+traceID+"-"+spanID+"-01")
			h.ServeHTTP(httptest.NewRecorder(), r)
			require.Equal(t, traceID, seen.TraceID().String())
			require.NotEqual(t, spanID, seen.SpanID().String(), "the hop has its own span")

			// Without a traceparent the request starts a trace of its own.
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
			require.True(t, seen.IsValid())
			require.NotEqual(t, traceID, seen.TraceID().String())
		})
	}
}

// A call through DialOptions reaches a server built with ServerOptions in
// the caller's trace, for unary and streaming calls.
func TestGRPCCarriesTheTrace(t *testing.T) {
	install(t)
	for mode, exporter := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_EXPORTER", exporter)
			seen := make(chan trace.SpanContext, 2)
			record := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				seen <- trace.SpanContextFromContext(ctx)
				return handler(ctx, req)
			})
			recordStream := grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				seen <- trace.SpanContextFromContext(ss.Context())
				return handler(srv, ss)
			})
			conn := serveHealth(t, record, recordStream)

			parent := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: mustTraceID(t), SpanID: mustSpanID(t), TraceFlags: trace.FlagsSampled, Remote: true,
			})
			ctx := trace.ContextWithSpanContext(context.Background(), parent)
			client := healthpb.NewHealthClient(conn)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			require.NoError(t, err)
			got := <-seen
			require.Equal(t, traceID, got.TraceID().String())
			require.NotEqual(t, spanID, got.SpanID().String())

			stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
			require.NoError(t, err)
			_, err = stream.Recv()
			require.NoError(t, err)
			got = <-seen
			require.Equal(t, traceID, got.TraceID().String())
		})
	}
}

// The trace goes with a call's own metadata, once: the light form appends
// it to what the caller set (the gateway's forwarded headers), the
// baggage with it.
func TestGRPCTraceBesideTheCallersMetadata(t *testing.T) {
	install(t)
	for mode, exporter := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_EXPORTER", exporter)
			seen := make(chan metadata.MD, 1)
			record := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				seen <- md
				return handler(ctx, req)
			})
			conn := serveHealth(t, record)

			parent := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: mustTraceID(t), SpanID: mustSpanID(t), TraceFlags: trace.FlagsSampled, Remote: true,
			})
			member, err := baggage.NewMember("tenant", "42")
			require.NoError(t, err)
			bag, err := baggage.New(member)
			require.NoError(t, err)
			ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(context.Background(), parent), bag)
			ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs("x-api-key", "k"))
			_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			require.NoError(t, err)
			md := <-seen
			require.Equal(t, []string{"k"}, md.Get("x-api-key"))
			require.Len(t, md.Get("traceparent"), 1)
			require.Contains(t, md.Get("traceparent")[0], traceID)
			require.Equal(t, []string{"tenant=42"}, md.Get("baggage"))
		})
	}
}

func mustTraceID(t *testing.T) trace.TraceID {
	id, err := trace.TraceIDFromHex(traceID)
	require.NoError(t, err)
	return id
}

func mustSpanID(t *testing.T) trace.SpanID {
	id, err := trace.SpanIDFromHex(spanID)
	require.NoError(t, err)
	return id
}

// serveHealth serves the health service over loopback with ServerOptions
// and extra, and answers a connection to it made with DialOptions.
func serveHealth(t *testing.T, extra ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer(append(ServerOptions(), extra...)...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), append(DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
