package metrics

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClientMetrics are the gRPC client series of the gRPC ecosystem's
// Prometheus middleware (go-grpc-middleware's providers/prometheus
// ClientMetrics with its handling-time histogram): the same names, labels,
// help and counts, with each method's series looked up once. The
// middleware builds a reporter and its label slices and hashes the labels
// of four series on every call: 3 % of the gateway's CPU per read (issue
// 32), which calls a service for every request. TestClientMetricsAsTheMiddlewares
// holds the two to the same output.
type ClientMetrics struct {
	started, handled, msgReceived, msgSent *prometheus.CounterVec
	handling                               *prometheus.HistogramVec
	methods                                sync.Map // methodKey -> *methodSeries
}

// NewClientMetrics makes the series (register the ClientMetrics: it is a
// prometheus.Collector); buckets are the handling-time histogram's.
func NewClientMetrics(buckets []float64) *ClientMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	return &ClientMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_client_started_total", Help: "Total number of RPCs started on the client.",
		}, labels),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_client_handled_total", Help: "Total number of RPCs completed by the client, regardless of success or failure.",
		}, append(labels[:3:3], "grpc_code")),
		msgReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_client_msg_received_total", Help: "Total number of RPC stream messages received by the client.",
		}, labels),
		msgSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grpc_client_msg_sent_total", Help: "Total number of gRPC stream messages sent by the client.",
		}, labels),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grpc_client_handling_seconds",
			Help:    "Histogram of response latency (seconds) of the gRPC until it is finished by the application.",
			Buckets: buckets,
		}, labels),
	}
}

// Describe implements prometheus.Collector.
func (m *ClientMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.started.Describe(ch)
	m.handled.Describe(ch)
	m.msgReceived.Describe(ch)
	m.msgSent.Describe(ch)
	m.handling.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *ClientMetrics) Collect(ch chan<- prometheus.Metric) {
	m.started.Collect(ch)
	m.handled.Collect(ch)
	m.msgReceived.Collect(ch)
	m.msgSent.Collect(ch)
	m.handling.Collect(ch)
}

// The middleware's grpc_type values.
const (
	typeUnary        = "unary"
	typeClientStream = "client_stream"
	typeServerStream = "server_stream"
	typeBidiStream   = "bidi_stream"
)

type methodKey struct{ typ, fullMethod string }

// methodSeries are one method's series; handled by code, made on a code's
// first call (as the middleware makes them).
type methodSeries struct {
	m                             *ClientMetrics
	labels                        [3]string
	started, msgReceived, msgSent prometheus.Counter
	handling                      prometheus.Observer
	handled                       [codes.Unauthenticated + 1]atomic.Pointer[prometheus.Counter]
}

func (m *ClientMetrics) series(typ, fullMethod string) *methodSeries {
	k := methodKey{typ, fullMethod}
	if s, ok := m.methods.Load(k); ok {
		return s.(*methodSeries)
	}
	service, method := splitMethod(fullMethod)
	s := &methodSeries{m: m, labels: [3]string{typ, service, method}}
	s.started = m.started.WithLabelValues(s.labels[:]...)
	s.msgReceived = m.msgReceived.WithLabelValues(s.labels[:]...)
	s.msgSent = m.msgSent.WithLabelValues(s.labels[:]...)
	s.handling = m.handling.WithLabelValues(s.labels[:]...)
	v, _ := m.methods.LoadOrStore(k, s)
	return v.(*methodSeries)
}

// splitMethod is the middleware's service and method of "/pkg.Service/Method".
func splitMethod(fullMethod string) (string, string) {
	fullMethod = strings.TrimPrefix(fullMethod, "/")
	if i := strings.Index(fullMethod, "/"); i >= 0 {
		return fullMethod[:i], fullMethod[i+1:]
	}
	return "unknown", "unknown"
}

// done counts a finished call by its code and observes its time.
func (s *methodSeries) done(err error, start time.Time) {
	code := codeOf(err)
	var c prometheus.Counter
	if code <= codes.Unauthenticated {
		if p := s.handled[code].Load(); p != nil {
			c = *p
		} else {
			c = s.m.handled.WithLabelValues(s.labels[0], s.labels[1], s.labels[2], code.String())
			s.handled[code].Store(&c)
		}
	} else {
		c = s.m.handled.WithLabelValues(s.labels[0], s.labels[1], s.labels[2], code.String())
	}
	c.Inc()
	s.handling.Observe(time.Since(start).Seconds())
}

// codeOf is the middleware's code of an error: its status, or a context
// error's (as the gRPC server itself converts them).
func codeOf(err error) codes.Code {
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	return st.Code()
}

// UnaryClientInterceptor counts unary calls.
func (m *ClientMetrics) UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		s := m.series(typeUnary, method)
		s.started.Inc()
		s.msgSent.Inc()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil {
			s.msgReceived.Inc()
		}
		s.done(err, start)
		return err
	}
}

// StreamClientInterceptor counts streams and their messages.
func (m *ClientMetrics) StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		start := time.Now()
		s := m.series(streamType(desc), method)
		s.started.Inc()
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			s.done(err, start)
			return nil, err
		}
		return &monitoredStream{ClientStream: cs, s: s, start: start}, nil
	}
}

func streamType(desc *grpc.StreamDesc) string {
	switch {
	case desc.ClientStreams && !desc.ServerStreams:
		return typeClientStream
	case !desc.ClientStreams && desc.ServerStreams:
		return typeServerStream
	}
	return typeBidiStream
}

type monitoredStream struct {
	grpc.ClientStream
	s     *methodSeries
	start time.Time
}

func (ms *monitoredStream) SendMsg(m any) error {
	err := ms.ClientStream.SendMsg(m)
	if err == nil {
		ms.s.msgSent.Inc()
	}
	return err
}

// RecvMsg counts a message, or the stream's end: io.EOF is OK.
func (ms *monitoredStream) RecvMsg(m any) error {
	err := ms.ClientStream.RecvMsg(m)
	if err == nil {
		ms.s.msgReceived.Inc()
		return nil
	}
	var end error
	if err != io.EOF {
		end = err
	}
	ms.s.done(end, ms.start)
	return err
}
