package httpapi

import (
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// directRead serves a plain read (a GET route whose request the path
// fills, no body, a unary RPC) by calling the RPC
// itself, where grpc-gateway's generated handler would go through the
// route's ServeMux: its pattern match (the path split and copied, the
// variables captured into a map), a copy of the request with the matched
// pattern in its context, a context.WithCancel registered in the
// request's and removed, the generated client with two call options that
// collect the answer's header and trailer metadata (which the API drops),
// and a context holding them. The rest is grpc-gateway's own code, called
// as the generated handler calls it, so the call and the answer are the
// same: runtime.AnnotateContext builds the call's context and metadata,
// the path variables are parsed by the runtime's converters (runtime.Int64
// and the others), errors go to runtime.HTTPError and answers to
// runtime.ForwardResponseMessage, both with the route's ServeMux and the
// Marshaler it holds, and the route's middlewares run around the call as
// the ServeMux runs them.
//
// A request the generated handler would treat in a way this does not
// repeat goes to the route's ServeMux instead (serve answers false):
//
//   - a query string (the generated code parses it into the request's
//     other fields, or ignores it; either way the ServeMux decides);
//   - a path variable its converter refuses (the generated handler's 422);
//   - a TE header (a client taking trailers gets a chunked answer built
//     from the call's metadata).
//
// TestDirectReadsAsTheGeneratedHandlers (gateway/internal/gateway) holds
// every route served so to its generated handler: status, headers, body,
// and the call the service receives.
type directRead struct {
	// mux is a ServeMux of the route's options without recordMethod (the
	// Router tells the record), for the runtime's calls; route is the
	// route's own, for the requests left to the generated handler.
	mux, route *runtime.ServeMux
	conn       grpc.ClientConnInterface
	rpc        string
	pattern    string
	in, out    protoreflect.MessageType
	params     []pathParam
	// body is the index in the answer's Go struct of its response_body
	// field, -1 when the whole answer is written.
	body int
	// handler is the call wrapped in the route's middlewares.
	handler runtime.HandlerFunc
}

// pathParam is a path variable: its segment and its field.
type pathParam struct {
	seg   int
	field protoreflect.FieldDescriptor
	parse func(string) (protoreflect.Value, error)
}

// marshaler is the Marshaler every ServeMux of NewServeMux holds (it has no
// state): runtime.MarshalerForRequest finds it for any Accept and
// Content-Type, since it is the only one registered.
var marshaler = &Marshaler{}

// staticMethod is the generated client's call option: the method is a
// fixed name, which a stats handler may use as a label.
var staticMethod = []grpc.CallOption{grpc.StaticMethod()}

// newDirectRead is the direct read of a binding, nil when the binding is
// not a plain read (its generated handler serves it).
func newDirectRead(mux, route *runtime.ServeMux, conn grpc.ClientConnInterface, md protoreflect.MethodDescriptor, rule *annotations.HttpRule, mws []runtime.Middleware) *directRead {
	method, tmpl, ok := ruleBinding(rule)
	if !ok || method != http.MethodGet || rule.GetBody() != "" || md.IsStreamingClient() || md.IsStreamingServer() {
		return nil
	}
	in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil
	}
	body := -1
	if name := rule.GetResponseBody(); name != "" {
		if body = responseField(out, name); body < 0 {
			return nil
		}
	}
	r, ok := parseTemplate(tmpl)
	if !ok || r.tail {
		return nil
	}
	d := &directRead{
		mux: mux, route: route, conn: conn, pattern: tmpl, in: in, out: out, body: body,
		rpc: "/" + string(md.Parent().FullName()) + "/" + string(md.Name()),
	}
	fields := md.Input().Fields()
	for i, seg := range strings.Split(tmpl[1:], "/") {
		if !strings.HasPrefix(seg, "{") {
			if seg == "*" {
				return nil // an unnamed variable: nothing to bind
			}
			continue
		}
		name, _, _ := strings.Cut(seg[1:len(seg)-1], "=")
		fd := fields.ByName(protoreflect.Name(name))
		if fd == nil || fd.IsList() || fd.IsMap() || fd.HasPresence() {
			return nil
		}
		parse := converter(fd.Kind())
		if parse == nil {
			return nil
		}
		d.params = append(d.params, pathParam{seg: i, field: fd, parse: parse})
	}
	d.handler = d.call
	for i := len(mws) - 1; i >= 0; i-- {
		d.handler = mws[i](d.handler)
	}
	return d
}

// converter is the runtime's converter the generated code uses for a
// path variable of kind k, nil for a kind served by the ServeMux.
func converter(k protoreflect.Kind) func(string) (protoreflect.Value, error) {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return func(s string) (protoreflect.Value, error) {
			v, err := runtime.Int64(s)
			return protoreflect.ValueOfInt64(v), err
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return func(s string) (protoreflect.Value, error) {
			v, err := runtime.Int32(s)
			return protoreflect.ValueOfInt32(v), err
		}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return func(s string) (protoreflect.Value, error) {
			v, err := runtime.Uint64(s)
			return protoreflect.ValueOfUint64(v), err
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return func(s string) (protoreflect.Value, error) {
			v, err := runtime.Uint32(s)
			return protoreflect.ValueOfUint32(v), err
		}
	case protoreflect.StringKind:
		return func(s string) (protoreflect.Value, error) { return protoreflect.ValueOfString(s), nil }
	}
	return nil
}

// serve answers r when it is a request the direct read repeats the
// generated handler for (see directRead); false leaves r untouched for
// the route's ServeMux. segs are r's path segments.
func (d *directRead) serve(w http.ResponseWriter, r *http.Request, segs []string) bool {
	rec := recordOf(r.Body)
	if rec == nil || r.URL.RawQuery != "" || r.Header.Get("TE") != "" {
		return false
	}
	req := d.in.New()
	for _, p := range d.params {
		v, err := p.parse(segs[p.seg])
		if err != nil {
			return false
		}
		req.Set(p.field, v)
	}
	// The middlewares pass the request on, not the message: the record
	// carries it to call.
	rec.direct = req.Interface()
	d.handler(w, r, nil)
	return true
}

// call is the generated handler's work, with the request already built.
func (d *directRead) call(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	rec := recordOf(r.Body)
	req := rec.direct
	rec.direct = nil
	if req == nil {
		// Not reached through serve: the generated handler's way.
		d.route.ServeHTTP(w, r)
		return
	}
	ctx, err := runtime.AnnotateContext(r.Context(), d.mux, r, d.rpc, runtime.WithHTTPPathPattern(d.pattern))
	if err != nil {
		runtime.HTTPError(r.Context(), d.mux, marshaler, w, r, err)
		return
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	resp := d.out.New().Interface()
	if err := d.conn.Invoke(ctx, d.rpc, req, resp, staticMethod...); err != nil {
		runtime.HTTPError(ctx, d.mux, marshaler, w, r, err)
		return
	}
	if d.body >= 0 {
		resp = responseBody{resp, d.body}
	}
	runtime.ForwardResponseMessage(ctx, d.mux, marshaler, w, r, resp, d.mux.GetForwardResponseOptions()...)
}

// responseBody is an answer whose route writes one of its fields
// (response_body), as the generated code's wrapper of the answer is:
// runtime.ForwardResponseMessage writes what XXX_ResponseBody returns,
// the field's Go value.
type responseBody struct {
	proto.Message
	field int
}

func (b responseBody) XXX_ResponseBody() any {
	return reflect.ValueOf(b.Message).Elem().Field(b.field).Interface()
}

// responseField is the index of the Go struct field holding the proto
// field name of a generated message type, -1 when there is none (or it
// is a oneof's member, which the struct does not hold as a field).
func responseField(mt protoreflect.MessageType, name string) int {
	fd := mt.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil || fd.ContainingOneof() != nil {
		return -1
	}
	t := reflect.TypeOf(mt.Zero().Interface())
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return -1
	}
	t = t.Elem()
	for i := range t.NumField() {
		for _, part := range strings.Split(t.Field(i).Tag.Get("protobuf"), ",") {
			if part == "name="+name {
				return i
			}
		}
	}
	return -1
}
