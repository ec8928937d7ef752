package metrics

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"testing"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestClientMetricsAsTheMiddlewares: the same calls (unary calls answered
// OK and with errors, a canceled call, a server stream read to its end and
// one refused) give the same series, counts and bucket counts through
// ClientMetrics as through the gRPC ecosystem's middleware it replaces;
// only the observed times differ.
func TestClientMetricsAsTheMiddlewares(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	calls := func(t *testing.T, unary grpc.UnaryClientInterceptor, stream grpc.StreamClientInterceptor) {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
		require.NoError(t, err)
		defer conn.Close()
		c := healthpb.NewHealthClient(conn)
		ctx := context.Background()
		for range 3 {
			_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "up"})
			require.NoError(t, err)
		}
		for range 2 {
			_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "missing"})
			require.Equal(t, codes.NotFound, status.Code(err))
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = c.Check(canceled, &healthpb.HealthCheckRequest{Service: "up"})
		require.Error(t, err)

		watch, cancelWatch := context.WithCancel(ctx)
		s, err := c.Watch(watch, &healthpb.HealthCheckRequest{Service: "up"})
		require.NoError(t, err)
		_, err = s.Recv()
		require.NoError(t, err)
		cancelWatch()
		for err == nil {
			_, err = s.Recv()
		}
		require.Equal(t, codes.Canceled, status.Code(err))
		_, err = c.Watch(canceled, &healthpb.HealthCheckRequest{Service: "up"})
		if err == nil {
			t.Log("the canceled stream opened")
		}
	}
	exposition := func(t *testing.T, c prometheus.Collector) string {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		require.NoError(t, err)
		var out bytes.Buffer
		for _, mf := range mfs {
			_, err := expfmt.MetricFamilyToText(&out, mf)
			require.NoError(t, err)
		}
		// Times differ from run to run: their sums, not the counts.
		return regexp.MustCompile(`(?m)^(grpc_client_handling_seconds_sum\{[^}]*\}) .*$`).ReplaceAllString(out.String(), "$1 T")
	}

	theirs := grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(grpcprom.WithHistogramBuckets([]float64{10, 20})))
	calls(t, theirs.UnaryClientInterceptor(), theirs.StreamClientInterceptor())
	ours := NewClientMetrics([]float64{10, 20})
	calls(t, ours.UnaryClientInterceptor(), ours.StreamClientInterceptor())

	want := exposition(t, theirs)
	require.Contains(t, want, `grpc_client_handled_total{grpc_code="NotFound",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 2`)
	require.Contains(t, want, `grpc_type="server_stream"`)
	require.Equal(t, want, exposition(t, ours))
}
