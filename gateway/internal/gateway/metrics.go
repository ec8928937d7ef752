package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"

	"switchboard.dev/pkg/metrics"
)

// The API's requests by route: the route is the pattern the mux matched
// ("/v2/companies/{company_id}/contacts/"), never the path, so ids do not
// make a series each. A request no route matched is counted under
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

// routeNamed is the mux middleware that tells the request's route to the
// access log, which counts the request once it is answered.
func routeNamed(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if p, ok := runtime.HTTPPathPattern(r.Context()); ok {
			if holder, ok := r.Context().Value(routeKey{}).(*string); ok {
				*holder = p
			}
		}
		next(w, r, params)
	}
}

// withRoute gives the request a place for its route.
func withRoute(r *http.Request) (*http.Request, *string) {
	route := "unmatched"
	return r.WithContext(context.WithValue(r.Context(), routeKey{}, &route)), &route
}

func observe(method, route string, status int, seconds float64) {
	httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	httpDuration.WithLabelValues(method, route).Observe(seconds)
}
