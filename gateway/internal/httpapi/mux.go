package httpapi

import (
	"context"
	"math"
	"mime"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"switchboard.dev/pkg/apierr"
)

// NewServeMux is a grpc-gateway mux speaking the API's JSON contract:
// Marshaler for every media type, QueryParser, ErrorHandler,
// RoutingErrorHandler, 204 for google.protobuf.Empty, IncomingHeaderMatcher,
// no response metadata as headers or trailers, and the routed method told
// to the request's record of what was sent (recordMethod). The path-length fallback
// (a form POST served by a GET route) is off, and a response carries its
// Content-Length. A POST to a GET-only route is
// a 404 like any other wrong method. extra options are applied last and can
// override any of these.
//
// The query parser is process-wide in grpc-gateway
// (runtime.SetQueryParameterParser sets a package variable), so building a
// mux installs QueryParser for every mux of the process.
func NewServeMux(extra ...runtime.ServeMuxOption) *runtime.ServeMux {
	return newServeMux(true, extra...)
}

// newServeMux is NewServeMux, with recordMethod only when annotate: the
// Router tells the record itself on the routes it indexes, since
// grpc-gateway copies the call's whole metadata for every annotator a mux
// has (metadata.Join), even one that adds nothing.
func newServeMux(annotate bool, extra ...runtime.ServeMuxOption) *runtime.ServeMux {
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
		// The body is marshaled whole before it is written: its length is
		// known, so a body past net/http's 2 KiB buffer goes out in one
		// write with a Content-Length rather than chunked in several.
		runtime.WithWriteContentLength(),
	}
	if annotate {
		opts = append(opts, runtime.WithMetadata(recordMethod))
	}
	return runtime.NewServeMux(append(opts, extra...)...)
}

// MaxBodyBytes bounds a request body (1 MiB). A larger one is 413
// PAYLOAD_TOO_LARGE with detail {"max_bytes": MaxBodyBytes}: at once when
// Content-Length says so, else when the decoder reads past the bound.
const MaxBodyBytes = 1 << 20

// tooLarge is the answer to a body over MaxBodyBytes.
func tooLarge() *apierr.Error {
	return apierr.PayloadTooLarge.E().WithDetail(map[string]any{"max_bytes": MaxBodyBytes})
}

// Handler serves mux with the request checks every route shares:
//
//   - The path must be clean: valid UTF-8, no control character (a NUL
//     cannot be stored anywhere), no empty segment ("//", which
//     grpc-gateway would bind to a path variable) and no "." or ".."
//     segment (also written %2e). Anything else is 404 NOT_FOUND, never a
//     redirect to a cleaned path, which could name another resource.
//   - One trailing slash is stripped (never from "/" itself), so a
//     collection is served with and without its slash and GET
//     .../connections/ cannot match .../connections/{id} with an empty id.
//   - Authorization and Grpc-Timeout hold what gRPC can carry (checkHeaders).
//   - The body is at most MaxBodyBytes, except on the requests ownBody
//     reports (a route that streams a larger body, the file upload, and
//     bounds it itself).
//   - What the client sent is kept for SentEmptyInterceptor (sent.go),
//     on every request whose body the decoder reads.
//   - Form bodies are never parsed: the generated handlers call
//     Request.ParseForm to read the query string, and ParseForm would also
//     consume an application/x-www-form-urlencoded body (the JSON decoder
//     then sees none) or fail on a malformed Content-Type. The API reads
//     only JSON bodies, whatever the Content-Type says (a malformed one is
//     dropped).
func Handler(mux http.Handler, ownBody ...func(*http.Request) bool) http.Handler {
	return HandlerWithContext(mux, nil, ownBody...)
}

// HandlerWithContext is Handler with with's context: with, when not nil,
// adds to the request's context what the caller's own layer needs there
// (it is given the ResponseWriter Handler was called with). Handler copies
// the request once anyway, so a layer outside it need not copy it again
// for one context value (a copy of the request is 320 bytes).
func HandlerWithContext(mux http.Handler, with func(context.Context, http.ResponseWriter) context.Context, ownBody ...func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cleanPath(r.URL.Path) {
			WriteError(w, apierr.NotFound.E())
			return
		}
		own := false
		for _, f := range ownBody {
			own = own || f(r)
		}
		if !own && r.ContentLength > MaxBodyBytes {
			WriteError(w, tooLarge())
			return
		}
		// One shallow copy of the request, with its context, that Handler
		// may change.
		var rec *sentRecord
		ctx := r.Context()
		if with != nil {
			ctx = with(ctx, w)
		}
		if !own {
			rec = &sentRecord{rawQuery: r.URL.RawQuery}
			ctx = context.WithValue(ctx, sentKey{}, rec)
		}
		r2 := r.WithContext(ctx)
		if e := checkHeaders(r2); e != nil {
			WriteError(w, e)
			return
		}
		if !own {
			r2.Body = &recordingBody{ReadCloser: http.MaxBytesReader(w, r.Body, MaxBodyBytes), rec: rec}
		}
		r2.PostForm = url.Values{}
		for _, ct := range r.Header.Values("Content-Type") {
			if _, _, err := mime.ParseMediaType(ct); err != nil {
				// Ignored anyway (one JSON marshaler serves every type);
				// dropped so that grpc-gateway does not log an error line
				// for each such request.
				r2.Header = r.Header.Clone()
				r2.Header.Del("Content-Type")
				break
			}
		}
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			u := *r.URL
			u.Path = p[:len(p)-1]
			if rp := u.RawPath; len(rp) > 1 && strings.HasSuffix(rp, "/") {
				u.RawPath = rp[:len(rp)-1]
			}
			r2.URL = &u
		}
		mux.ServeHTTP(w, r2)
	})
}

// grpcTimeout is the gRPC wire form of a timeout: at most 8 digits and a
// unit (hours, minutes, seconds, milli-, micro-, nanoseconds).
var grpcTimeout = regexp.MustCompile(`^[0-9]{1,8}[HMSmun]$`)

var timeoutUnits = map[byte]time.Duration{
	'H': time.Hour, 'M': time.Minute, 'S': time.Second,
	'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond,
}

// checkHeaders vets the request headers grpc-gateway acts on, on a request
// Handler owns (r's Header may be replaced, never changed in place):
//
//   - Authorization is forwarded by grpc-gateway as gRPC metadata whatever
//     it holds, and grpc-go refuses a value that is not printable ASCII,
//     which surfaced as a 500. Such a value cannot be a credential: it is
//     dropped, and a route that needs one answers 401.
//   - Grpc-Timeout (a client's deadline) must be the gRPC form: 422 at
//     ["header","grpc-timeout"] otherwise (grpc-gateway takes any signed
//     number, and a negative one expired every call into a 503). A valid
//     value longer than time.Duration holds (about 292 years) is no
//     deadline, and is dropped rather than overflowing into a past one.
func checkHeaders(r *http.Request) *apierr.Error {
	drop := func(name string) {
		h := r.Header.Clone()
		h.Del(name)
		r.Header = h
	}
	for _, v := range r.Header.Values("Authorization") {
		if !printableASCII(v) {
			drop("Authorization")
			break
		}
	}
	for _, v := range r.Header.Values("Grpc-Timeout") {
		if !grpcTimeout.MatchString(v) {
			return newErrMsg([]any{"header", "grpc-timeout"}, typeValueError, "Value error, invalid grpc-timeout").APIError()
		}
		n, _ := strconv.ParseInt(v[:len(v)-1], 10, 64)
		if unit := timeoutUnits[v[len(v)-1]]; n > math.MaxInt64/int64(unit) {
			drop("Grpc-Timeout")
			break
		}
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// cleanPath reports whether a decoded request path may be routed.
func cleanPath(p string) bool {
	if !utf8.ValidString(p) || strings.Contains(p, "//") {
		return false
	}
	for _, c := range []byte(p) {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
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
// gRPC metadata: X-Api-Key as x-api-key, Idempotency-Key (message sends)
// as idempotency-key, X-Telegram-Bot-Api-Secret-Token (Telegram's proof on
// the bot webhook) as x-telegram-bot-api-secret-token, and grpc-gateway's
// default permanent headers (grpcgateway-accept, grpcgateway-user-agent,
// ...). Authorization is forwarded as "authorization" by grpc-gateway
// itself whatever the matcher says, so the matcher skips it to avoid a
// second copy. The W3C trace context (traceparent, tracestate, baggage) is
// not copied as it came: the gateway's tracing handler
// (telemetry.HTTPHandler) continues the caller's trace, and every call
// carries the gateway's own span of it (telemetry.DialOptions appends it
// to the call's metadata, which must not hold another). Grpc-Metadata-*
// headers are not forwarded: clients must not set arbitrary metadata.
func IncomingHeaderMatcher(key string) (string, bool) {
	switch key = textproto.CanonicalMIMEHeaderKey(key); key {
	// The metadata keys written out: no lower-casing per request.
	case "X-Api-Key":
		return "x-api-key", true
	case "Idempotency-Key":
		return "idempotency-key", true
	case "X-Telegram-Bot-Api-Secret-Token":
		return "x-telegram-bot-api-secret-token", true
	case "Authorization", "Traceparent", "Tracestate", "Baggage":
		return "", false
	}
	if strings.HasPrefix(key, runtime.MetadataHeaderPrefix) {
		return "", false
	}
	if v, ok := permanentKeys.Load(key); ok {
		return v.(string), true
	}
	h, ok := runtime.DefaultHeaderMatcher(key)
	if ok {
		// Lower-cased as gRPC metadata keys are (grpc-gateway would do it
		// for every request), and kept: DefaultHeaderMatcher passes only
		// the fixed list of permanent HTTP headers here, so the cache is
		// bounded whatever names clients send.
		h = strings.ToLower(h)
		permanentKeys.Store(key, h)
	}
	return h, ok
}

// permanentKeys are the metadata keys of the permanent HTTP headers
// forwarded so far (User-Agent: grpcgateway-user-agent).
var permanentKeys sync.Map

// dropHeader forwards no gRPC response metadata to the HTTP response (no
// Grpc-Metadata-* headers, no Grpc-Trailer-* trailers).
func dropHeader(string) (string, bool) { return "", false }
