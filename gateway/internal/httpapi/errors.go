package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"switchboard.dev/pkg/apierr"
	apiv1 "switchboard.dev/proto/switchboard/api/v1"
)

// errorBody is the documented error body, members in this order.
type errorBody struct {
	ErrorCode int32  `json:"error_code"`
	ErrorName string `json:"error_name"`
	Message   string `json:"message"`
	Detail    any    `json:"detail"`
}

// WriteError writes e as the documented error body
// {"error_code","error_name","message","detail"} with e's HTTP status (500
// when it is not an error status) and, when e.RetryAfter > 0, Retry-After.
// A nil Detail is written as {}.
func WriteError(w http.ResponseWriter, e *apierr.Error) {
	code := e.Status
	if code < 400 || code > 599 {
		code = http.StatusInternalServerError
	}
	body := errorBody{ErrorCode: e.Code, ErrorName: e.Name, Message: e.Message, Detail: e.Detail}
	if body.Detail == nil {
		body.Detail = struct{}{}
	}
	b, err := appendStdJSON(nil, body)
	if err != nil {
		body.Detail = struct{}{}
		b, _ = appendStdJSON(nil, body)
	}
	h := w.Header()
	h.Del("Trailer")
	h.Del("Transfer-Encoding")
	h.Del("Content-Length")
	h.Set("Content-Type", ContentType)
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// ErrorHandler is the mux's runtime.ErrorHandlerFunc: it writes every error
// as the catalogue's error body (see APIError for the mapping).
func ErrorHandler(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	e := APIError(ctx, err)
	if e.Status >= 500 && e.Status != http.StatusServiceUnavailable {
		method, _ := runtime.RPCMethod(ctx)
		slog.ErrorContext(ctx, "gateway: request failed", "http_method", r.Method, "path", r.URL.Path, "rpc", method, "status", e.Status, "error", err)
	}
	WriteError(w, e)
}

// RoutingErrorHandler is the mux's runtime.RoutingErrorHandlerFunc: an
// unknown path, or a known path with another method, is 404 NOT_FOUND
// "not found" with an empty detail.
func RoutingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, _ int) {
	WriteError(w, apierr.NotFound.E())
}

// APIError maps an error reaching the gateway to the API error to answer:
//
//   - a gRPC status carrying an apiv1.ErrorDetail: exactly that error (status,
//     code, name, message, detail as sent, Retry-After);
//   - the gateway's own request errors (InvalidArgument from the decoder, the
//     query parser or the generated path-parameter code): 422
//     REQUEST_VALIDATION_ERROR with detail.errors[], or 413
//     PAYLOAD_TOO_LARGE for a body over MaxBodyBytes;
//   - other statuses by code, with the catalogue's default message and never
//     the status text: Unauthenticated 401, PermissionDenied 403 (detail
//     "Forbidden"), NotFound and Unimplemented 404, AlreadyExists, Aborted
//     and FailedPrecondition 409, Unavailable, DeadlineExceeded and Canceled
//     503;
//   - anything else (other codes, non-status errors, InvalidArgument that the
//     gateway did not produce): 500 INTERNAL_SERVER_ERROR. That includes a
//     bare ResourceExhausted: the services' rate limits always carry the
//     catalogue's detail, so one without it is gRPC's own refusal of a
//     message past its size limit, and a 429 would tell the client to
//     retry what can only fail again.
func APIError(ctx context.Context, err error) *apierr.Error {
	var httpErr *runtime.HTTPStatusError
	if errors.As(err, &httpErr) {
		if st, ok := status.FromError(httpErr.Err); ok {
			if ed, ok := apierr.DetailOf(st); ok {
				return fromDetail(ed)
			}
		}
		return defForHTTPStatus(httpErr.HTTPStatus)
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de.APIError()
	}
	if errors.Is(err, errBodyTooLarge) {
		return tooLarge()
	}
	st := status.Convert(err)
	if ed, ok := apierr.DetailOf(st); ok {
		return fromDetail(ed)
	}
	switch st.Code() {
	case codes.InvalidArgument:
		if st.Message() == errBodyTooLarge.Error() {
			return tooLarge()
		}
		if fe, ok := gatewayRequestError(ctx, st.Message()); ok {
			return fe.APIError()
		}
		return apierr.Internal.E()
	case codes.Unauthenticated:
		return apierr.Unauthorized.E()
	case codes.PermissionDenied:
		return apierr.ForbiddenError()
	case codes.NotFound, codes.Unimplemented:
		return apierr.NotFound.E()
	case codes.AlreadyExists, codes.Aborted, codes.FailedPrecondition:
		return apierr.Conflict.E()
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return apierr.ServiceUnavailable.E()
	}
	return apierr.Internal.E()
}

func fromDetail(ed *apiv1.ErrorDetail) *apierr.Error {
	raw := bytes.TrimSpace([]byte(ed.GetDetailJson()))
	var detail any = struct{}{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && json.Valid(raw) {
		detail = json.RawMessage(unescapeHTML(raw))
	}
	code := int(ed.GetHttpStatus())
	if code < 400 || code > 599 {
		code = http.StatusInternalServerError
	}
	return &apierr.Error{
		Def:        apierr.Def{Code: ed.GetErrorCode(), Name: ed.GetErrorName(), Status: code, Message: ed.GetMessage()},
		Detail:     detail,
		RetryAfter: int(ed.GetRetryAfterSeconds()),
	}
}

func defForHTTPStatus(code int) *apierr.Error {
	switch code {
	case http.StatusBadRequest:
		return apierr.BadRequest.E()
	case http.StatusUnauthorized:
		return apierr.Unauthorized.E()
	case http.StatusForbidden:
		return apierr.ForbiddenError()
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return apierr.NotFound.E()
	case http.StatusConflict:
		return apierr.Conflict.E()
	case http.StatusTooManyRequests:
		return apierr.RateLimited(1)
	case http.StatusServiceUnavailable:
		return apierr.ServiceUnavailable.E()
	}
	return apierr.Internal.E()
}

// The messages grpc-gateway's generated code and runtime give to
// InvalidArgument statuses about the request.
var (
	pathTypeMismatch = regexp.MustCompile(`(?s)^type mismatch, parameter: ([^,]+), error: (.*)$`)
	pathMissing      = regexp.MustCompile(`^missing parameter (.+)$`)
	strconvParsing   = regexp.MustCompile(`(?s)^strconv\.(\w+): parsing ("(?:[^"\\]|\\.)*"): `)
)

// gatewayRequestError recognises an InvalidArgument message produced by the
// gateway itself while reading the request.
func gatewayRequestError(ctx context.Context, msg string) (*DecodeError, bool) {
	if de, ok := ParseDecodeError(msg); ok {
		return de, true
	}
	if m := pathTypeMismatch.FindStringSubmatch(msg); m != nil {
		return pathParamError(ctx, m[1], m[2]), true
	}
	if m := pathMissing.FindStringSubmatch(msg); m != nil {
		return newErr([]any{"path", m[1]}, typeMissing), true
	}
	// req.ParseForm: a malformed query string.
	if strings.HasPrefix(msg, "invalid URL escape ") || strings.HasPrefix(msg, "invalid semicolon separator") {
		return newErrMsg([]any{"query"}, typeValueError, "Value error, malformed query string: %s", msg), true
	}
	if strings.HasPrefix(msg, "invalid grpc-timeout: ") {
		return newErrMsg([]any{"header", "grpc-timeout"}, typeValueError, "Value error, invalid grpc-timeout"), true
	}
	return nil, false
}

// pathParamError describes a path parameter the generated code could not
// parse. The type comes from the request field (found through the RPC in
// ctx) and the value from the strconv error text; when either is unknown the
// parser named in the text decides.
func pathParamError(ctx context.Context, param, errText string) *DecodeError {
	loc := []any{"path", param}
	var raw string
	rawOK := false
	if m := strconvParsing.FindStringSubmatch(errText); m != nil {
		if s, err := strconv.Unquote(m[2]); err == nil {
			raw, rawOK = s, true
		}
	}
	if fd := pathField(ctx, param); fd != nil && rawOK && fd.Message() == nil && !fd.IsList() {
		if _, e := textScalar(fd.Kind(), fd.Enum(), raw, loc); e != nil {
			return e
		}
	}
	switch {
	case strings.HasPrefix(errText, "strconv.ParseInt"), strings.HasPrefix(errText, "strconv.ParseUint"):
		return newErr(loc, typeIntParsing)
	case strings.HasPrefix(errText, "strconv.ParseBool"):
		return newErr(loc, typeBoolParsing)
	case strings.HasPrefix(errText, "strconv.ParseFloat"):
		return newErr(loc, typeFloatParsing)
	case strings.HasSuffix(errText, " is not valid"):
		return newErrMsg(loc, typeEnum, "Input should be a valid enumeration member")
	}
	return newErrMsg(loc, typeValueError, "Value error, invalid path parameter")
}

// pathField finds the request field a path parameter binds, by the RPC
// that grpc-gateway records in the context.
func pathField(ctx context.Context, param string) protoreflect.FieldDescriptor {
	method, ok := runtime.RPCMethod(ctx)
	if !ok {
		return nil
	}
	name := protoreflect.FullName(strings.ReplaceAll(strings.TrimPrefix(method, "/"), "/", "."))
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		return nil
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil
	}
	msg := md.Input()
	var fd protoreflect.FieldDescriptor
	for _, seg := range strings.Split(param, ".") {
		if msg == nil {
			return nil
		}
		if fd = msg.Fields().ByName(protoreflect.Name(seg)); fd == nil {
			return nil
		}
		msg = fd.Message()
	}
	return fd
}

// unescapeHTML undoes encoding/json's HTML escaping (\u003c, \u003e,
// \u0026) in valid JSON, so a detail a service marshalled with json.Marshal
// reads like the rest of the body. Other escapes are kept as they are.
func unescapeHTML(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(`\u00`)) {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		if raw[i+1] == 'u' && i+5 < len(raw) {
			switch string(raw[i+2 : i+6]) {
			case "003c", "003C":
				out = append(out, '<')
				i += 5
				continue
			case "003e", "003E":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		// Any other escape: keep both bytes, so an escaped backslash is
		// never read as the start of another escape.
		out = append(out, c, raw[i+1])
		i++
	}
	return out
}
