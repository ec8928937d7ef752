package httpapi

import (
	"context"
	"net/http"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"switchboard.dev/pkg/apierr"
)

// NewServeMux is a grpc-gateway mux speaking the API's JSON contract:
// Marshaler for every media type, QueryParser, ErrorHandler,
// RoutingErrorHandler, 204 for google.protobuf.Empty, IncomingHeaderMatcher
// and no response metadata as headers or trailers. The path-length fallback
// (a form POST served by a GET route) is off: a POST to a GET-only route is
// a 404 like any other wrong method. extra options are applied last and can
// override any of these.
//
// The query parser is process-wide in grpc-gateway
// (runtime.SetQueryParameterParser sets a package variable), so building a
// mux installs QueryParser for every mux of the process.
func NewServeMux(extra ...runtime.ServeMuxOption) *runtime.ServeMux {
	opts := []runtime.ServeMuxOption{
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &Marshaler{}),
		runtime.SetQueryParameterParser(&QueryParser{}),
		runtime.WithErrorHandler(ErrorHandler),
		runtime.WithRoutingErrorHandler(RoutingErrorHandler),
		runtime.WithForwardResponseOption(NoContentForEmpty),
		runtime.WithIncomingHeaderMatcher(IncomingHeaderMatcher),
		runtime.WithOutgoingHeaderMatcher(dropHeader),
		runtime.WithOutgoingTrailerMatcher(dropHeader),
		runtime.WithDisablePathLengthFallback(),
	}
	return runtime.NewServeMux(append(opts, extra...)...)
}

// Handler serves mux with one trailing slash stripped from the path (never
// from "/" itself), so a collection is served with and without its slash
// and GET .../connections/ cannot match .../connections/{id} with an empty
// id. A path that is not valid UTF-8 or has an empty segment ("//",
// including ".../things//") is 404: grpc-gateway would otherwise bind the
// empty segment to a path variable.
func Handler(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !utf8.ValidString(r.URL.Path) || strings.Contains(r.URL.Path, "//") {
			WriteError(w, apierr.NotFound.E())
			return
		}
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path = p[:len(p)-1]
			if rp := u.RawPath; len(rp) > 1 && strings.HasSuffix(rp, "/") {
				u.RawPath = rp[:len(rp)-1]
			}
			r2.URL = &u
			r = r2
		}
		mux.ServeHTTP(w, r)
	})
}

// NoContentForEmpty is the forward-response option that answers
// google.protobuf.Empty with 204 and no body (Marshaler writes no bytes for
// it).
func NoContentForEmpty(_ context.Context, w http.ResponseWriter, m proto.Message) error {
	if _, ok := m.(*emptypb.Empty); ok {
		w.Header().Del("Content-Type")
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// IncomingHeaderMatcher decides which request headers reach the services as
// gRPC metadata: X-Api-Key as x-api-key, the W3C trace context (traceparent,
// tracestate, baggage), and grpc-gateway's default permanent headers
// (grpcgateway-accept, grpcgateway-user-agent, ...). Authorization is
// forwarded as "authorization" by grpc-gateway itself whatever the matcher
// says, so the matcher skips it to avoid a second copy. Grpc-Metadata-*
// headers are not forwarded: clients must not set arbitrary metadata.
func IncomingHeaderMatcher(key string) (string, bool) {
	switch key = textproto.CanonicalMIMEHeaderKey(key); key {
	case "X-Api-Key", "Traceparent", "Tracestate", "Baggage":
		return strings.ToLower(key), true
	case "Authorization":
		return "", false
	}
	if strings.HasPrefix(key, runtime.MetadataHeaderPrefix) {
		return "", false
	}
	return runtime.DefaultHeaderMatcher(key)
}

// dropHeader forwards no gRPC response metadata to the HTTP response (no
// Grpc-Metadata-* headers, no Grpc-Trailer-* trailers).
func dropHeader(string) (string, bool) { return "", false }
