package httpapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Routes is where a package registers routes of its own (HandlePath): the
// gateway's Router, or a bare ServeMux in a package's tests.
type Routes interface {
	HandlePath(method, pattern string, h runtime.HandlerFunc) error
}

var _ Routes = (*Router)(nil)

// Router is the API's mux (NewServeMux) with an index in front of its
// route matching.
//
// grpc-gateway's ServeMux tries a request against every pattern of its
// method in turn, last registered first, and every pattern it tries costs
// three allocations and an errors.As on the miss: with about 150 GET
// patterns, a route registered early (the company card, identity's first)
// spent a fifth of the gateway's CPU per request walking them (issue 32's
// profile). The Router keeps one ServeMux per route (routeMuxes; a
// service it cannot split keeps one for its routes, which picks among them
// as the whole mux would), each with the same options, and a table of
// every route's path template in the whole ServeMux's order. A request is
// matched against the table (literal segments compared, nothing
// allocated) and handed to the ServeMux of the first matching route: the
// route that would have won is the one chosen. Every route is
// also registered on one ServeMux holding them all, as before; it serves
// whatever the table cannot place: no template matched (its routing error
// handler answers), a method with a template the table does not read (a
// verb, a variable over several segments other than a final "**"), or a
// path not starting with "/". A route on a ServeMux of its own knows the
// RPC it calls and tells the request's record (sentRecord.method)
// itself, so its handlers are registered without recordMethod, the
// metadata annotator that grpc-gateway would pay a copy of every call's
// metadata for. After DirectReads, a plain read's route (a GET whose path
// fills the request) calls its RPC itself rather than through its
// ServeMux and generated handler (directRead, direct.go).
//
// The table matches as grpc-gateway does with its default unescaping mode
// (UnescapingModeLegacy, which NewServeMux keeps): the decoded path split
// on "/", a literal equal to its segment, a variable or "*" any one
// segment, a final "**" (or {name=**}) any number of segments, none
// included. It also needs NewServeMux's WithDisablePathLengthFallback:
// without it grpc-gateway would take a form POST's method from
// X-HTTP-Method-Override, after the table had picked a registration by
// POST.
type Router struct {
	opts []runtime.ServeMuxOption
	all  *runtime.ServeMux
	// routes by HTTP method, the ServeMux's order: the latest registration
	// first.
	routes map[string][]route
	// unread are the methods with a template the table cannot match.
	unread map[string]bool
	// bindings are every registration's templates, for Bindings.
	bindings []Binding
	// shared are the services left on one ServeMux, for Shared.
	shared []string
	// middlewares are those of the options (runtime.WithMiddlewares), which
	// a direct read runs as its ServeMux would (DirectReads).
	middlewares []runtime.Middleware
	// direct are the routes served by a directRead, for DirectRoutes.
	direct []DirectRoute
	// plain is a ServeMux of the Router's options without recordMethod,
	// which the direct reads call grpc-gateway's runtime with, as the
	// generated handlers call it with the ServeMux they were registered
	// on (routeMuxes).
	plain *runtime.ServeMux
}

// Binding is one route: an HTTP method and its path template.
type Binding struct{ Method, Path string }

// route is one path template of one registration.
type route struct {
	mux *runtime.ServeMux
	// rpc is the gRPC method the route calls ("/package.Service/Method"),
	// which ServeHTTP tells the request's record as recordMethod would;
	// empty for a ServeMux whose recordMethod tells it.
	rpc string
	// segs are the template's segments: a literal, or any for a
	// one-segment variable or "*".
	segs []segment
	// tail: a final "**" takes any number of further segments.
	tail bool
	// direct serves the route's plain reads itself (nil: the ServeMux
	// serves every request).
	direct *directRead
}

type segment struct {
	literal string
	any     bool
}

// NewRouter is NewServeMux's mux with the index; extra options are given to
// every ServeMux it keeps.
func NewRouter(extra ...runtime.ServeMuxOption) *Router {
	return &Router{
		opts:   extra,
		all:    NewServeMux(extra...),
		routes: map[string][]route{},
		unread: map[string]bool{},
	}
}

// Mux is the ServeMux holding every route.
func (rt *Router) Mux() *runtime.ServeMux { return rt.all }

// DirectReads has the services registered from here on with
// RegisterClient serve their plain reads by calling the RPC directly
// (directRead). mws must be the middlewares the Router's options give
// every ServeMux (runtime.WithMiddlewares), in the same order: a direct
// read runs them as its ServeMux would.
func (rt *Router) DirectReads(mws ...runtime.Middleware) {
	rt.middlewares = mws
	if rt.middlewares == nil {
		rt.middlewares = []runtime.Middleware{}
	}
}

// DirectRoute is a route a directRead serves and the RPC it calls.
type DirectRoute struct {
	Binding
	RPC string
}

// DirectRoutes are the routes served by a directRead, in registration
// order.
func (rt *Router) DirectRoutes() []DirectRoute { return rt.direct }

// RegisterService registers a service's generated handlers (register, a
// Register...Handler bound to its connection) and indexes its routes, read
// from the service's google.api.http options in the linked protos.
func (rt *Router) RegisterService(service protoreflect.FullName, register func(*runtime.ServeMux) error) error {
	return rt.RegisterClient(service, register, nil)
}

// RegisterClient is RegisterService, given the connection register binds:
// after DirectReads, the service's plain reads whose route has a ServeMux
// of its own call conn directly.
func (rt *Router) RegisterClient(service protoreflect.FullName, register func(*runtime.ServeMux) error, conn grpc.ClientConnInterface) error {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(service)
	if err != nil {
		return fmt.Errorf("router: service %s: %w", service, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return fmt.Errorf("router: %s is not a service", service)
	}
	if err := register(rt.all); err != nil {
		return err
	}
	var bindings []Binding
	// rpcs are the bindings' gRPC methods, as the generated code names
	// them to grpc-gateway.
	var rpcs []string
	// The bindings' rules and methods, for their direct reads.
	var rules []*annotations.HttpRule
	var mds []protoreflect.MethodDescriptor
	methods := sd.Methods()
	for i := range methods.Len() {
		rule, _ := proto.GetExtension(methods.Get(i).Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule == nil {
			continue
		}
		for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
			if method, path, ok := ruleBinding(r); ok {
				bindings = append(bindings, Binding{method, path})
				rpcs = append(rpcs, "/"+string(service)+"/"+string(methods.Get(i).Name()))
				rules = append(rules, r)
				mds = append(mds, methods.Get(i))
			}
		}
	}
	if routes, ok := rt.routeMuxes(register, bindings, rpcs); ok {
		if conn != nil && rt.middlewares != nil {
			if rt.plain == nil {
				// The ServeMux the kept handlers were registered on has
				// no metadata annotator; its options are the Router's.
				rt.plain = newServeMux(false, rt.opts...)
			}
			for i := range routes {
				if d := newDirectRead(rt.plain, routes[i].mux, conn, mds[i], rules[i], rt.middlewares); d != nil {
					routes[i].direct = d
					rt.direct = append(rt.direct, DirectRoute{bindings[i], rpcs[i]})
				}
			}
		}
		rt.indexRoutes(routes, bindings)
		return nil
	}
	rt.shared = append(rt.shared, string(service))
	mux := NewServeMux(rt.opts...)
	if err := register(mux); err != nil {
		return err
	}
	rt.index(mux, bindings)
	return nil
}

// Shared are the services whose routes share one ServeMux (routeMuxes
// could not give each its own).
func (rt *Router) Shared() []string { return rt.shared }

// routeMuxes gives each of a service's bindings a ServeMux of its own
// holding that one route, so that a request the table placed is not tried
// against the service's other patterns (grpc-gateway copies the path and
// allocates for every pattern it tries: six patterns before a contact,
// 3 % of the gateway's CPU per read, issue 32). The generated code
// registers a service's handlers with no way to name one, so the service
// is registered twice more: on a ServeMux whose innermost middleware keeps
// each handler as registered (the one the route's ServeMux serves), and on
// one whose middleware answers which handler a request reached and by
// which pattern; the two registrations go in the same order, the protos'
// order of the bindings. Each binding is probed with a path of its
// template: the handler reached by the binding's own pattern must be the
// one at the binding's place. Any binding that cannot be placed so (a
// template the table does not read, handlers in another order) leaves the
// service on one ServeMux (ok false). The handlers kept are registered on
// a ServeMux without recordMethod (the generated handlers annotate their
// calls through the ServeMux they were registered on): ServeHTTP tells the
// record each route's method, rpcs[i] for bindings[i].
func (rt *Router) routeMuxes(register func(*runtime.ServeMux) error, bindings []Binding, rpcs []string) (routes []routeMux, ok bool) {
	var handlers []runtime.HandlerFunc
	keep := func(next runtime.HandlerFunc) runtime.HandlerFunc {
		handlers = append(handlers, next)
		return next
	}
	if err := register(newServeMux(false, append(append([]runtime.ServeMuxOption{}, rt.opts...), runtime.WithMiddlewares(keep))...)); err != nil {
		return nil, false
	}
	n := 0
	probe := func(_ runtime.HandlerFunc) runtime.HandlerFunc {
		i := n
		n++
		return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			p, _ := runtime.HTTPPattern(r.Context())
			w.(*probeWriter).reached(i, p.String())
		}
	}
	probes := NewServeMux(runtime.WithMiddlewares(probe))
	if err := register(probes); err != nil || n != len(handlers) || n != len(bindings) {
		return nil, false
	}
	for _, b := range bindings {
		path, ok := probePath(b.Path)
		if !ok {
			return nil, false
		}
		// The binding's own pattern, as grpc-gateway writes it.
		own := &probeWriter{index: -1}
		one := runtime.NewServeMux()
		if one.HandlePath(b.Method, b.Path, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
			p, _ := runtime.HTTPPattern(r.Context())
			w.(*probeWriter).reached(0, p.String())
		}) != nil {
			return nil, false
		}
		got := &probeWriter{index: -1}
		if !own.serve(one, b.Method, path) || !got.serve(probes, b.Method, path) {
			return nil, false
		}
		// The generated code registers the bindings in the protos' order;
		// a binding a later one shadows (POST /v2/users/me under
		// /v2/users/me/{path=**}) cannot be probed and keeps its place.
		i := len(routes)
		if got.pattern == own.pattern && got.index != i {
			return nil, false
		}
		mux := NewServeMux(rt.opts...)
		if mux.HandlePath(b.Method, b.Path, handlers[i]) != nil {
			return nil, false
		}
		routes = append(routes, routeMux{mux: mux, order: i, rpc: rpcs[len(routes)]})
	}
	return routes, true
}

// routeMux is one binding's ServeMux and the place of its handler in the
// service's registration.
type routeMux struct {
	mux    *runtime.ServeMux
	order  int
	rpc    string
	direct *directRead
}

// probeWriter is the ResponseWriter of a probe: it learns which handler
// the request reached (index -1: none) and by which pattern.
type probeWriter struct {
	index   int
	pattern string
	header  http.Header
}

func (w *probeWriter) reached(i int, pattern string) { w.index, w.pattern = i, pattern }

// serve sends a request without a body to h and reports whether it
// reached a handler.
func (w *probeWriter) serve(h http.Handler, method, path string) bool {
	r, err := http.NewRequest(method, path, http.NoBody)
	if err != nil {
		return false
	}
	h.ServeHTTP(w, r)
	return w.index >= 0
}

func (w *probeWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *probeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *probeWriter) WriteHeader(int)             {}

// probePath is a path of a template the table reads: each variable (and a
// final "**") one segment "1".
func probePath(tmpl string) (string, bool) {
	r, ok := parseTemplate(tmpl)
	if !ok {
		return "", false
	}
	segs := make([]string, 0, len(r.segs)+1)
	for _, s := range r.segs {
		if s.any {
			segs = append(segs, "1")
		} else {
			segs = append(segs, s.literal)
		}
	}
	if r.tail {
		segs = append(segs, "1")
	}
	return "/" + strings.Join(segs, "/"), true
}

// indexRoutes puts one registration's routes, each on its own ServeMux,
// ahead of every earlier one's, in the order the service's ServeMux would
// try them: the handler registered last first.
func (rt *Router) indexRoutes(routes []routeMux, bindings []Binding) {
	rt.bindings = append(rt.bindings, bindings...)
	byOrder := make([]int, len(bindings))
	for i := range byOrder {
		byOrder[i] = i
	}
	sort.Slice(byOrder, func(a, b int) bool { return routes[byOrder[a]].order > routes[byOrder[b]].order })
	added := map[string][]route{}
	for _, i := range byOrder {
		b := bindings[i]
		r, _ := parseTemplate(b.Path) // probePath has read it
		r.mux, r.rpc, r.direct = routes[i].mux, routes[i].rpc, routes[i].direct
		added[b.Method] = append(added[b.Method], r)
	}
	for method, rs := range added {
		rt.routes[method] = append(rs, rt.routes[method]...)
	}
}

// ruleBinding is an HttpRule's method and path template.
func ruleBinding(r *annotations.HttpRule) (method, path string, ok bool) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get, true
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post, true
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put, true
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch, true
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete, true
	case *annotations.HttpRule_Custom:
		return p.Custom.GetKind(), p.Custom.GetPath(), true
	}
	return "", "", false
}

// HandlePath is runtime.ServeMux.HandlePath, indexed.
func (rt *Router) HandlePath(method, pattern string, h runtime.HandlerFunc) error {
	if err := rt.all.HandlePath(method, pattern, h); err != nil {
		return err
	}
	mux := NewServeMux(rt.opts...)
	if err := mux.HandlePath(method, pattern, h); err != nil {
		return err
	}
	rt.index(mux, []Binding{{method, pattern}})
	return nil
}

// index puts one registration's templates ahead of every earlier one's.
func (rt *Router) index(mux *runtime.ServeMux, bindings []Binding) {
	rt.bindings = append(rt.bindings, bindings...)
	added := map[string][]route{}
	for _, b := range bindings {
		method, path := b.Method, b.Path
		r, ok := parseTemplate(path)
		if !ok {
			rt.unread[method] = true
			continue
		}
		r.mux = mux
		added[method] = append(added[method], r)
	}
	for method, rs := range added {
		rt.routes[method] = append(rs, rt.routes[method]...)
	}
}

// parseTemplate reads a path template the table can match: "/" and
// segments of a literal, "*", "{name}" or "{name=*}", the last one
// possibly "**" or "{name=**}"; no verb.
func parseTemplate(tmpl string) (route, bool) {
	if !strings.HasPrefix(tmpl, "/") || tmpl == "/" || strings.Contains(tmpl, ":") {
		return route{}, false
	}
	parts := strings.Split(tmpl[1:], "/")
	var r route
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case p == "*" || (strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") && validVariable(p, "*")):
			r.segs = append(r.segs, segment{any: true})
		case last && (p == "**" || (strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") && validVariable(p, "**"))):
			r.tail = true
		case p == "" && len(parts) > 1:
			// An empty segment within the template: grpc-gateway refuses it.
			return route{}, false
		case strings.ContainsAny(p, "{}*="):
			return route{}, false
		default:
			r.segs = append(r.segs, segment{literal: p})
		}
	}
	return r, true
}

// validVariable reports whether p is "{name}" (when match is "*") or
// "{name=match}", name a field path.
func validVariable(p, match string) bool {
	inner := p[1 : len(p)-1]
	name, m, hasEq := strings.Cut(inner, "=")
	if hasEq {
		if m != match {
			return false
		}
	} else if match != "*" {
		return false
	}
	return name != "" && !strings.ContainsAny(name, "{}*=/")
}

// matches reports whether the path's segments fit r.
func (r *route) matches(segs []string) bool {
	if len(segs) < len(r.segs) || (!r.tail && len(segs) != len(r.segs)) {
		return false
	}
	// From the end: paths sharing a prefix (/v2/companies/{company_id}/)
	// differ there.
	for i := len(r.segs) - 1; i >= 0; i-- {
		if s := r.segs[i]; !s.any && s.literal != segs[i] {
			return false
		}
	}
	return true
}

// Bindings are the routes registered, in registration order.
func (rt *Router) Bindings() []Binding { return rt.bindings }

// Unindexed are the HTTP methods whose requests all go to the whole
// ServeMux (one of their templates is one the table does not read).
func (rt *Router) Unindexed() []string {
	var out []string
	for m := range rt.unread {
		out = append(out, m)
	}
	return out
}

// maxSegments bounds the segments split without allocating; a longer path
// is split into a slice.
const maxSegments = 16

// ServeHTTP implements http.Handler.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var buf [maxSegments]string
	if route, segs := rt.find(r, buf[:0]); route != nil {
		if rec := recordOf(r.Body); rec != nil && route.rpc != "" {
			rec.method = route.rpc
		}
		if route.direct != nil && route.direct.serve(w, r, segs) {
			return
		}
		route.mux.ServeHTTP(w, r)
		return
	}
	rt.all.ServeHTTP(w, r)
}

// find is the first registration's route with a template matching r, nil
// when the whole mux must decide, and the path's segments (appended to
// segs).
func (rt *Router) find(r *http.Request, segs []string) (*route, []string) {
	path := r.URL.Path
	if !strings.HasPrefix(path, "/") || rt.unread[r.Method] {
		return nil, nil
	}
	rest := path[1:]
	for {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			segs = append(segs, rest)
			break
		}
		segs = append(segs, rest[:i])
		rest = rest[i+1:]
	}
	routes := rt.routes[r.Method]
	for i := range routes {
		if routes[i].matches(segs) {
			return &routes[i], segs
		}
	}
	return nil, nil
}
