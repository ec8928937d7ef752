package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"switchboard.dev/pkg/protoapi"
	"switchboard.dev/pkg/validate"
)

// What the client sent.
//
// A service cannot tell a field the client left out from one it sent
// empty ("", 0, []): both arrive as the zero value. pkg/validate answers a
// zero that breaks the field's rules "Field required" unless the caller
// names the field in validate.SentEmptyHeader. The gateway is the one that
// knows what a JSON client sent: Handler keeps, per request, the body as
// the decoder parsed it and the query string (a sentRecord in the request
// context, reached by the decoder through the request body), and
// SentEmptyInterceptor, on the call to the service, names every field the
// client sent empty whose empty value breaks its rules
// (validate.Necessary): a body key with "", 0, false or [], a query key, a
// path parameter; and any list sent [] in a request with the
// (switchboard.api.v1.null_refused) option, whose PATCHes tell [] from a
// list left out. A JSON null is no value: the field was not sent.

// maxSentEmpty bounds the fields named in one call. Past it (only a body
// far past every list's maximum reaches it) a field sent empty reads as
// one left out: "Field required" instead of the rule's words.
const maxSentEmpty = 256

// sentRecord is what one request carried, for SentEmptyInterceptor.
type sentRecord struct {
	// body is the JSON the decoder read (nil: no body); the interceptor
	// drops it once read.
	body     any
	rawQuery string
	// method is the RPC the request was routed to (Router.ServeHTTP, or
	// recordMethod on a ServeMux the Router does not split), set before
	// the body is read.
	method string
	// bodyErr is the error in reading the body of a key_before_body
	// method, which the service answers after the key (see deferBodyError).
	bodyErr *DecodeError
	// direct is a direct read's request message, from the Router to the
	// call through the route's middlewares (directRead).
	direct proto.Message
}

// recordMethod is the mux's metadata annotator that tells the request's
// sentRecord which RPC it was routed to: grpc-gateway calls it (in
// AnnotateContext) before the generated handler reads the body. It adds no
// metadata. The routes the Router gives a ServeMux each do without it
// (newServeMux): it tells their record itself.
func recordMethod(ctx context.Context, r *http.Request) metadata.MD {
	if rec := recordOf(r.Body); rec != nil {
		rec.method, _ = runtime.RPCMethod(ctx)
	}
	return nil
}

// deferBodyError keeps err, an error in reading the body, for the service
// to answer after the key's checks, when the request's method is declared
// (switchboard.api.v1.key_before_body); false otherwise (the error is
// answered at once, before the service is called).
func (rec *sentRecord) deferBodyError(err error) bool {
	var de *DecodeError
	if rec == nil || !errors.As(err, &de) {
		return false
	}
	m, ok := protoapi.Lookup(rec.method)
	if !ok || !m.KeyBeforeBody {
		return false
	}
	rec.bodyErr = de
	return true
}

type sentKey struct{}

// recordingBody is a request body that leads the decoder to its request's
// sentRecord (grpc-gateway hands the decoder the body and nothing else).
type recordingBody struct {
	io.ReadCloser
	rec *sentRecord
}

// recordOf is the sentRecord a body reader leads to, or nil.
func recordOf(r io.Reader) *sentRecord {
	if rb, ok := r.(*recordingBody); ok {
		return rb.rec
	}
	return nil
}

// SentEmptyInterceptor is the gateway's unary client interceptor that
// passes validate.SentEmptyHeader to the services (see above). Requests
// that did not come through Handler go out unchanged.
func SentEmptyInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	rec, _ := ctx.Value(sentKey{}).(*sentRecord)
	msg, ok := req.(proto.Message)
	if rec != nil && rec.bodyErr != nil {
		// The message holds nothing of the body: the service answers this
		// 422 once the key passed.
		fe, err := appendStdJSON(nil, rec.bodyErr.FieldError())
		if err != nil {
			return rec.bodyErr
		}
		return invoker(metadata.AppendToOutgoingContext(ctx, validate.BodyErrorHeader, string(fe)), method, req, reply, cc, opts...)
	}
	if rec != nil && ok {
		if names := rec.sentEmpty(method, msg.ProtoReflect()); len(names) > 0 {
			kv := make([]string, 0, 2*len(names))
			for _, n := range names {
				kv = append(kv, validate.SentEmptyHeader, n)
			}
			ctx = metadata.AppendToOutgoingContext(ctx, kv...)
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// sentEmpty names the fields of req that the client sent empty and whose
// empty value breaks their rules.
func (rec *sentRecord) sentEmpty(method string, req protoreflect.Message) []string {
	body := rec.body
	rec.body = nil // the parsed body is garbage from here on
	m, ok := protoapi.Lookup(method)
	if !ok {
		return nil
	}
	var out []string
	add := func(p validate.Path) { out = append(out, p.String()) }
	fields := req.Descriptor().Fields()
	if body != nil {
		switch m.Body {
		case "":
		case "*":
			sentInMessage(req, body, validate.Path{}, add)
		default:
			if fd := fields.ByName(protoreflect.Name(m.Body)); fd != nil {
				sentInField(req, fd, body, validate.Path{}.Field(fd), add)
			}
		}
	}
	for name := range m.PathFields {
		// The path is built only for a field named: a read's path ids are
		// never empty, and building theirs was six allocations per call.
		if fd := fields.ByName(protoreflect.Name(name)); fd != nil && emptyBreaksRules(req, fd) {
			add(validate.Path{}.Field(fd))
		}
	}
	if rec.rawQuery != "" && m.Body != "*" {
		// The generated code has parsed the query already: it is valid.
		values, _ := url.ParseQuery(rec.rawQuery)
		for key := range values {
			sentInQuery(req, m, strings.TrimSuffix(key, "[]"), add)
		}
	}
	if len(out) > maxSentEmpty {
		out = out[:maxSentEmpty]
	}
	return out
}

// sentInQuery applies the rule to the field a query key set, as
// QueryParser resolves it.
func sentInQuery(req protoreflect.Message, m *protoapi.Method, key string, add func(validate.Path)) {
	fds, ok := resolveQueryPath(req.Descriptor(), strings.Split(key, "."))
	if !ok || m.PathFields[string(fds[0].Name())] || m.Body == string(fds[0].Name()) {
		return
	}
	var p validate.Path
	msg := req
	for _, fd := range fds[:len(fds)-1] {
		if !msg.Has(fd) {
			return
		}
		p, msg = p.Field(fd), msg.Get(fd).Message()
	}
	last := fds[len(fds)-1]
	sentScalar(msg, last, p.Field(last), add)
}

// sentInMessage walks a message and the JSON object it was decoded from.
func sentInMessage(m protoreflect.Message, v any, p validate.Path, add func(validate.Path)) {
	obj, ok := v.(map[string]any)
	if !ok || isWKT(m.Descriptor()) {
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		raw, present := obj[string(fd.Name())]
		if !present && explicitJSONName(fd) {
			raw, present = obj[fd.JSONName()]
		}
		if !present || raw == nil {
			continue
		}
		// A scalar or list of scalars sent with a value has nothing to
		// name and nothing inside: its path is not built (four
		// allocations per field, for each field of every body).
		if fd.Message() == nil && !emptyBreaksRules(m, fd) {
			continue
		}
		sentInField(m, fd, raw, p.Field(fd), add)
	}
}

// sentInField applies the rule to field fd of m, sent as raw, and walks
// the messages inside it.
func sentInField(m protoreflect.Message, fd protoreflect.FieldDescriptor, raw any, p validate.Path, add func(validate.Path)) {
	sentScalar(m, fd, p, add)
	switch {
	case fd.IsList() && fd.Message() != nil:
		arr, _ := raw.([]any)
		list := m.Get(fd).List()
		for i := 0; i < list.Len() && i < len(arr); i++ {
			sentInMessage(list.Get(i).Message(), arr[i], p.Index(i), add)
		}
	case fd.IsMap() && fd.MapValue().Message() != nil:
		obj, _ := raw.(map[string]any)
		mp := m.Get(fd).Map()
		for k, item := range obj {
			key, e := textScalar(fd.MapKey().Kind(), nil, k, nil)
			if e == nil && mp.Has(key.MapKey()) {
				sentInMessage(mp.Get(key.MapKey()).Message(), item, p.Key(key.MapKey()), add)
			}
		}
	case !fd.IsList() && !fd.IsMap() && fd.Message() != nil && m.Has(fd):
		sentInMessage(m.Get(fd).Message(), raw, p, add)
	}
}

// sentScalar names field fd of m, which the client sent, when it holds its
// empty value and that breaks its rules.
func sentScalar(m protoreflect.Message, fd protoreflect.FieldDescriptor, p validate.Path, add func(validate.Path)) {
	if emptyBreaksRules(m, fd) {
		add(p)
	}
}

// emptyBreaksRules reports whether field fd of m, which the client sent,
// holds its empty value and that breaks its rules (sentScalar names it).
func emptyBreaksRules(m protoreflect.Message, fd protoreflect.FieldDescriptor) bool {
	return (validate.Necessary(fd) || sentListCounts(fd)) && validate.IsZero(m, fd)
}

// sentListCounts is a list of a null_refused request: sent empty, it is
// named whatever its rules, so that a PATCH tells [] (clear the list, or
// a 422 where one is needed) from a list left out (unchanged).
func sentListCounts(fd protoreflect.FieldDescriptor) bool {
	return fd.IsList() && nullRefused(fd.ContainingMessage())
}

// isWKT reports the well-known messages the JSON writes as something other
// than an object of their fields: none has field rules inside.
func isWKT(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.FullName()), "google.protobuf.")
}
