package telemetry

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// The instrumentation below has two forms. When spans are exported, it is
// OpenTelemetry's own otelhttp and otelgrpc, with their attributes, events
// and metrics. When nothing exports (Setup's NeverSample), all of that work
// would be thrown away, and it cost about 15 % of the gateway's CPU per
// request (issue 12's profile: attribute sets for metrics nobody reads,
// message events on non-recording spans). The light form keeps what logs
// and other services use: the incoming traceparent is honoured, each hop
// gets its own span id, and the context travels on to the next service.

var tracer = otel.Tracer("switchboard/telemetry")

// HTTPHandler traces the requests next serves; name gives a span's name.
func HTTPHandler(next http.Handler, operation string, name func(*http.Request) string) http.Handler {
	if Exporting() {
		return otelhttp.NewHandler(next, operation,
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name(r) }))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, operation, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// ServerOptions traces the calls a gRPC server serves. They go before the
// server's own interceptors, so the request log sees the span.
func ServerOptions() []grpc.ServerOption {
	if Exporting() {
		return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, span := serverSpan(ctx, info.FullMethod)
			defer span.End()
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, span := serverSpan(ss.Context(), info.FullMethod)
			defer span.End()
			return handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

// DialOptions carries the caller's trace to the gRPC services it calls.
func DialOptions() []grpc.DialOption {
	if Exporting() {
		return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler())}
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(outgoing(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(outgoing(ctx), desc, cc, method, opts...)
		}),
	}
}

func serverSpan(ctx context.Context, method string) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, incomingCarrier{ctx})
	return tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
}

// outgoing adds the span in ctx to the call's metadata. The propagator's
// fields are appended to the metadata already there, not set in a copy of
// it (a copy of the whole map per call was 3 % of the gateway's CPU per
// read, issue 32): the caller's metadata must not hold them already. No
// service forwards its incoming metadata, and the gateway does not forward
// the HTTP headers of the trace context (the tracing handler reads them).
func outgoing(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	var kv appendCarrier
	otel.GetTextMapPropagator().Inject(ctx, &kv)
	if len(kv) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// appendCarrier collects what a propagator injects as metadata key-value
// pairs (keys lower-case, as metadata keys are).
type appendCarrier []string

func (c *appendCarrier) Get(key string) string {
	key = strings.ToLower(key)
	for i := 0; i+1 < len(*c); i += 2 {
		if (*c)[i] == key {
			return (*c)[i+1]
		}
	}
	return ""
}

func (c *appendCarrier) Set(key, value string) {
	key = strings.ToLower(key)
	for i := 0; i+1 < len(*c); i += 2 {
		if (*c)[i] == key {
			(*c)[i+1] = value
			return
		}
	}
	*c = append(*c, key, value)
}

func (c *appendCarrier) Keys() []string {
	keys := make([]string, 0, len(*c)/2)
	for i := 0; i < len(*c); i += 2 {
		keys = append(keys, (*c)[i])
	}
	return keys
}

// mdCarrier lets a propagator read and write gRPC metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// incomingCarrier lets a propagator read a call's incoming metadata one
// key at a time, without the copy of the whole map FromIncomingContext
// makes.
type incomingCarrier struct{ ctx context.Context }

func (c incomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set is never called: extraction only reads.
func (incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	return mdCarrier(md).Keys()
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *contextStream) Context() context.Context { return s.ctx }
