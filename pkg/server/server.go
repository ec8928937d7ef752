// Package server is the gRPC bootstrap every service shares: interceptors in
// one order (request log, panic recovery, auth, validation), OpenTelemetry,
// health and reflection, and a graceful stop on shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"switchboard.dev/pkg/apierr"
	"switchboard.dev/pkg/auth"
	"switchboard.dev/pkg/metrics"
	"switchboard.dev/pkg/telemetry"
)

// Options of a service's server.
type Options struct {
	Name   string
	Logger *slog.Logger
	// Interceptors run after logging and recovery, in order: usually auth,
	// then validation.
	Interceptors []grpc.UnaryServerInterceptor
	// StreamInterceptors are the same for streaming RPCs, in the same
	// order, after the stream's logging and recovery.
	StreamInterceptors []grpc.StreamServerInterceptor
	// ShutdownTimeout bounds the graceful stop.
	ShutdownTimeout time.Duration
}

// streamWorkers bounds the goroutines kept for serving calls; past it,
// calls get a goroutine of their own. Idle workers cost a parked goroutine.
const streamWorkers = 256

// Server is a gRPC server with health and reflection.
type Server struct {
	opts   Options
	grpc   *grpc.Server
	health *health.Server
}

// New builds the server; register services on GRPC() before Run.
func New(opts Options) *Server {
	// The metrics come first: they count the code the client gets, after
	// the request log has turned a plain error into the catalogue's 500.
	chain := append([]grpc.UnaryServerInterceptor{
		metrics.GRPCServer().UnaryServerInterceptor(),
		requestLog(opts.Logger),
		recovery(opts.Logger),
	}, opts.Interceptors...)
	streamChain := append([]grpc.StreamServerInterceptor{
		metrics.GRPCServer().StreamServerInterceptor(),
		streamLog(opts.Logger),
		streamRecovery(opts.Logger),
	}, opts.StreamInterceptors...)
	s := &Server{
		opts: opts,
		grpc: grpc.NewServer(append(telemetry.ServerOptions(),
			// Calls run on a pool of goroutines whose stacks have already
			// grown, instead of a new goroutine per call growing its stack
			// again. The pool is sized for calls in flight, not for CPUs:
			// a call spends most of its time waiting on PostgreSQL, and
			// when every worker is busy grpc-go starts a fresh goroutine,
			// so a pool of GOMAXPROCS left 13 % of the contacts service's
			// CPU in stack copying at 32 concurrent reads (issue 12).
			grpc.NumStreamWorkers(streamWorkers),
			// Clients find replicas by DNS (ClientOptions) and look again
			// only when a connection ends: closing each after a while
			// (GOAWAY, calls in flight finish) makes them see replicas
			// added since, such as a rolling restart's new pods.
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: MaxConnectionAge}),
			// The clients' keepalive pings (ClientOptions) are welcome.
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: clientPing / 2}),
			// Fixed windows, no bandwidth-delay PINGs (StreamWindow).
			grpc.InitialWindowSize(StreamWindow),
			grpc.InitialConnWindowSize(ConnWindow),
			grpc.ChainUnaryInterceptor(chain...),
			grpc.ChainStreamInterceptor(streamChain...),
		)...),
		health: health.NewServer(),
	}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s
}

// GRPC is the server to register services on.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Run serves on addr until ctx ends, then drains in-flight calls for at most
// the shutdown timeout. Health turns NOT_SERVING first so that load
// balancers stop sending new calls.
func (s *Server) Run(ctx context.Context, addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return s.Serve(ctx, lis)
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	// Every method's series exist from the start, at zero.
	metrics.GRPCServer().InitializeMetrics(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.opts.Logger.Info("serving", "addr", lis.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.health.Shutdown()
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	timeout := s.opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	select {
	case <-stopped:
	case <-time.After(timeout):
		s.opts.Logger.Warn("graceful stop timed out; closing connections")
		s.grpc.Stop()
	}
	s.opts.Logger.Info("stopped")
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// requestLog writes one line per call: method, status, duration, company.
func requestLog(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		return resp, logCall(ctx, log, info.FullMethod, start, err)
	}
}

// streamLog is requestLog for streaming RPCs: one line when the stream ends.
func streamLog(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		return logCall(ss.Context(), log, info.FullMethod, start, err)
	}
}

// logCall logs one finished call and answers the error the client gets.
// A call that succeeded is logged at debug level: the gateway's access log
// already has a line for every API request, and writing a second one per
// call cost a tenth of a service's CPU on a plain read (issue 12's
// profile). Refused calls are logged at info, failures at error.
func logCall(ctx context.Context, log *slog.Logger, method string, start time.Time, err error) error {
	level := slog.LevelDebug
	e, isAPI := apierr.FromError(err)
	switch {
	case err == nil:
	case isAPI && e.Status < 500:
		level = slog.LevelInfo
	default:
		level = slog.LevelError
	}
	if log.Enabled(ctx, level) {
		writeCall(ctx, log, level, method, start, err)
	}
	if !isAPI && err != nil && status.Code(err) == codes.Unknown {
		// A plain Go error is a bug or an outage, never something to
		// show the client: it becomes the catalogue's 500 (logged above).
		err = apierr.Internal.E()
	}
	return err
}

func writeCall(ctx context.Context, log *slog.Logger, level slog.Level, method string, start time.Time, err error) {
	attrs := []any{
		"method", method,
		"code", status.Code(err).String(),
		"duration_ms", float64(time.Since(start).Microseconds()) / 1000,
	}
	if e, ok := apierr.FromError(err); ok {
		attrs = append(attrs, "http_status", e.Status, "error_code", e.Code)
		if e.Status >= 500 {
			attrs = append(attrs, "error", err.Error())
		}
	} else if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	if v := metadata.ValueFromIncomingContext(ctx, "x-request-id"); len(v) > 0 {
		attrs = append(attrs, "request_id", v[0])
	}
	if p, ok := auth.PrincipalFrom(ctx); ok {
		attrs = append(attrs, "company_id", p.GetCompanyId(), "integration_id", p.GetIntegrationId())
	}
	log.Log(ctx, level, "rpc", attrs...)
}

// recovery turns a panic into the 500 body instead of killing the process.
func recovery(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = apierr.Internal.E()
			}
		}()
		return handler(ctx, req)
	}
}

// streamRecovery is recovery for streaming RPCs.
func streamRecovery(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ss.Context(), "panic", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = apierr.Internal.E()
			}
		}()
		return handler(srv, ss)
	}
}

// MaxAnswerBytes bounds an answer a client of ours takes from a service.
// gRPC's default, 4 MiB, is less than answers the API allows (a page of
// contacts each with many long notes), and past it the call fails after
// the service did the work; the bound stays so a runaway answer cannot
// take the caller's memory.
const MaxAnswerBytes = 64 << 20

// DialInternal connects to another service: every replica behind target
// (ClientOptions), OpenTelemetry propagation and the internal token on
// every call.
func DialInternal(target, token string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(target, append(ClientOptions(),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx = metadata.AppendToOutgoingContext(ctx, auth.HeaderInternalToken, token)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return conn, nil
}
