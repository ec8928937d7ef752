package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
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
// profile). The Router keeps one ServeMux per registration (a service's
// routes, or one HandlePath route), each with the same options, and a
// table of every registration's path templates in the ServeMux's own
// order. A request is matched against the table (literal segments
// compared, nothing allocated) and handed to the ServeMux of the first
// registration with a matching template, which picks among its own few
// routes exactly as the whole mux would: the registration that would have
// won is the one chosen, and its patterns keep their order. Every route is
// also registered on one ServeMux holding them all, as before; it serves
// whatever the table cannot place: no template matched (its routing error
// handler answers), a method with a template the table does not read (a
// verb, a variable over several segments other than a final "**"), or a
// path not starting with "/".
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
}

// Binding is one route: an HTTP method and its path template.
type Binding struct{ Method, Path string }

// route is one path template of one registration.
type route struct {
	mux *runtime.ServeMux
	// segs are the template's segments: a literal, or any for a
	// one-segment variable or "*".
	segs []segment
	// tail: a final "**" takes any number of further segments.
	tail bool
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

// RegisterService registers a service's generated handlers (register, a
// Register...Handler bound to its connection) and indexes its routes, read
// from the service's google.api.http options in the linked protos.
func (rt *Router) RegisterService(service protoreflect.FullName, register func(*runtime.ServeMux) error) error {
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
	mux := NewServeMux(rt.opts...)
	if err := register(mux); err != nil {
		return err
	}
	var bindings []Binding
	methods := sd.Methods()
	for i := range methods.Len() {
		rule, _ := proto.GetExtension(methods.Get(i).Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule == nil {
			continue
		}
		for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
			if method, path, ok := ruleBinding(r); ok {
				bindings = append(bindings, Binding{method, path})
			}
		}
	}
	rt.index(mux, bindings)
	return nil
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
	if mux := rt.find(r); mux != nil {
		mux.ServeHTTP(w, r)
		return
	}
	rt.all.ServeHTTP(w, r)
}

// find is the ServeMux of the first registration with a template matching
// r, nil when the whole mux must decide.
func (rt *Router) find(r *http.Request) *runtime.ServeMux {
	path := r.URL.Path
	if !strings.HasPrefix(path, "/") || rt.unread[r.Method] {
		return nil
	}
	var buf [maxSegments]string
	segs := buf[:0]
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
			return routes[i].mux
		}
	}
	return nil
}
