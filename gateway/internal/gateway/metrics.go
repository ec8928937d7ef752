package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"switchboard.dev/pkg/metrics"
)

// The API's requests by route: the route is the path pattern of the API
// method the request called ("/v2/companies/{company_id}/contacts/"),
// never the path, so ids do not make a series each. A route that calls a
// service without a pattern of its own (file uploads and links, payment
// notifications) is named by the gRPC method it calls; one that calls none
// (health, the reference pages) is "other"; a request no route matched,
// "unmatched".
var (
	httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "http_requests_total",
		Help: "API requests answered, by method, route and HTTP status.",
	}, []string{"method", "route", "code"})
	httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Name: "http_request_duration_seconds",
		Help:    "Time to answer an API request, by method and route.",
		Buckets: metrics.Buckets(),
	}, []string{"method", "route"})
)

func init() { metrics.MustRegister(httpRequests, httpDuration) }

// routeKey holds where the mux writes the route it matched.
type routeKey struct{}

// routeMatched is the mux middleware: the request matched a route.
func routeMatched(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		setRoute(r.Context(), "other")
		next(w, r, params)
	}
}

// routeOfCall names the route by the call it makes: the generated
// handlers annotate the call's context with their path pattern.
func routeOfCall(ctx context.Context, method string) {
	if p, ok := runtime.HTTPPathPattern(ctx); ok {
		setRoute(ctx, p)
		return
	}
	setRoute(ctx, method)
}

func setRoute(ctx context.Context, route string) {
	if holder, ok := ctx.Value(routeKey{}).(*string); ok {
		*holder = route
	}
}

// routeUnary and routeStream tell the access log the route of each call.
func routeUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	routeOfCall(ctx, method)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func routeStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	routeOfCall(ctx, method)
	return streamer(ctx, desc, cc, method, opts...)
}

// routeHolder gives the request's context the access log's place for
// its route, in the statusRecorder the access log passed on as w, from
// httpapi.HandlerWithContext, which copies the request with its context
// once for both (a copy of its own here was a second 320-byte request per
// request, issue 32). Without the recorder the route is not recorded.
func routeHolder(ctx context.Context, w http.ResponseWriter) context.Context {
	if s, ok := w.(*statusRecorder); ok {
		return context.WithValue(ctx, routeKey{}, &s.route)
	}
	return ctx
}

// series are one route's and status's two series, looked up once: the
// labels' hashing and checks on every request were a few per cent of the
// gateway's CPU per read (issue 32's profile).
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

type seriesKey struct {
	method, route string
	status        int
}

var seriesCache sync.Map // seriesKey -> series

func observe(method, route string, status int, seconds float64) {
	k := seriesKey{method, route, status}
	v, ok := seriesCache.Load(k)
	if !ok {
		v, _ = seriesCache.LoadOrStore(k, series{
			requests: httpRequests.WithLabelValues(method, route, strconv.Itoa(status)),
			duration: httpDuration.WithLabelValues(method, route),
		})
	}
	s := v.(series)
	s.requests.Inc()
	s.duration.Observe(seconds)
}
