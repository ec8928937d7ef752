package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	gatewaytestv1 "switchboard.dev/proto/switchboard/gatewaytest/v1"
)

// routerWithRoutes is a Router with n GET routes
// /v2/companies/{company_id}/r<i>/{id} registered after the company's
// own /v2/companies/{company_id}, as the gateway's identity routes come
// first.
func routerWithRoutes(t testing.TB, n int) *Router {
	rt := NewRouter()
	handle := func(method, pattern string) {
		if err := rt.HandlePath(method, pattern, func(w http.ResponseWriter, _ *http.Request, params map[string]string) {
			_, _ = fmt.Fprintf(w, "%s %v", pattern, params)
		}); err != nil {
			t.Fatal(err)
		}
	}
	handle("GET", "/v2/companies/{company_id}")
	handle("GET", "/v2/users/me/{path=**}")
	for i := range n {
		handle("GET", fmt.Sprintf("/v2/companies/{company_id}/r%d/{id}", i))
	}
	handle("GET", "/v2/companies/{company_id}/r1/special")
	return rt
}

// TestRouterServesAsTheMux: the index picks what the mux picks, the last
// registered of two matching patterns included, and leaves what no route
// takes to the mux's 404.
func TestRouterServesAsTheMux(t *testing.T) {
	rt := routerWithRoutes(t, 20)
	if len(rt.Unindexed()) != 0 {
		t.Fatalf("unindexed: %v", rt.Unindexed())
	}
	for _, path := range []string{
		"/v2/companies/7", "/v2/companies/7/r3/9", "/v2/companies/7/r1/special", "/v2/companies/7/r1/other",
		"/v2/users/me", "/v2/users/me/a/b", "/v2/companies/7/r99/1", "/v2/companies", "/", "/v2/companies/7/r3",
	} {
		for _, method := range []string{"GET", "POST"} {
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			rt.Mux().ServeHTTP(want, httptest.NewRequest(method, path, nil))
			rt.ServeHTTP(got, httptest.NewRequest(method, path, nil))
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("%s %s: router %d %q, mux %d %q", method, path, got.Code, got.Body, want.Code, want.Body)
			}
		}
	}
}

// TestRouterIndexesTemplates: a template the table cannot read (a verb,
// a multi-segment variable) leaves its method to the whole mux.
func TestRouterIndexesTemplates(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"/v2/companies/{company_id}": true, "/v2/a/*": true, "/v2/a/{x=*}": true, "/v2/users/me/{path=**}": true,
		"/v2/a/**": true, "/v2/a:verb": false, "/v2/{name=a/*}": false, "/v2/**/b": false, "/": false, "/v2/{x}y": false,
	} {
		if _, got := parseTemplate(tmpl); got != ok {
			t.Errorf("parseTemplate(%q): %v, want %v", tmpl, got, ok)
		}
	}
	rt := NewRouter()
	if err := rt.HandlePath("POST", "/v2/things:run", func(http.ResponseWriter, *http.Request, map[string]string) {}); err != nil {
		t.Fatal(err)
	}
	if u := rt.Unindexed(); len(u) != 1 || u[0] != "POST" {
		t.Errorf("unindexed %v, want [POST]", u)
	}
}

// TestRouterAllocatesLess: the first registered of 150 routes costs the
// index a few allocations where the mux's walk makes hundreds.
func TestRouterAllocatesLess(t *testing.T) {
	rt := routerWithRoutes(t, 150)
	allocs := func(h http.Handler) float64 {
		r := httptest.NewRequest("GET", "/v2/companies/7", nil)
		w := discard{}
		return testing.AllocsPerRun(50, func() { h.ServeHTTP(w, r) })
	}
	viaMux, viaRouter := allocs(rt.Mux()), allocs(rt)
	t.Logf("allocations per request: mux %.0f, router %.0f", viaMux, viaRouter)
	if viaRouter > 20 || viaMux < 10*viaRouter {
		t.Errorf("allocations per request: router %.0f, mux %.0f", viaRouter, viaMux)
	}
}

func BenchmarkRouter(b *testing.B) {
	rt := routerWithRoutes(b, 150)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"mux", rt.Mux()}, {"router", rt}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v2/companies/7", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(discard{}, r)
			}
		})
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// TestRouterGivesEachRouteItsHandler: a service's routes each get a
// ServeMux of their own (none left on the service's shared one), and each
// request reaches the RPC of the route the whole mux picks for it: the
// handler kept for a binding is the binding's, the literal route
// registered after a variable one still wins.
func TestRouterGivesEachRouteItsHandler(t *testing.T) {
	var called string
	record := func(_ context.Context, method string, _, _ any, _ *grpc.ClientConn, _ grpc.UnaryInvoker, _ ...grpc.CallOption) error {
		called = method
		return status.Error(codes.NotFound, "recorded")
	}
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(record))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	const service = "switchboard.gatewaytest.v1.GatewayTestService"
	rt := NewRouter()
	if err := rt.RegisterService(service, func(mux *runtime.ServeMux) error {
		return gatewaytestv1.RegisterGatewayTestServiceHandler(context.Background(), mux, conn)
	}); err != nil {
		t.Fatal(err)
	}
	muxes := map[*runtime.ServeMux]bool{}
	for _, routes := range rt.routes {
		for _, r := range routes {
			if muxes[r.mux] {
				t.Errorf("two routes share a ServeMux")
			}
			muxes[r.mux] = true
		}
	}
	if len(muxes) != len(rt.Bindings()) || len(muxes) < 10 {
		t.Fatalf("%d route ServeMuxes for %d bindings", len(muxes), len(rt.Bindings()))
	}
	serve := func(h http.Handler, method, path string) string {
		// A body the route decodes: an object, or a list (a route whose
		// body is a repeated field).
		for _, body := range []string{"{}", "[]"} {
			called = ""
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, strings.NewReader(body)))
			if called != "" {
				break
			}
		}
		return called
	}
	sd := gatewaytestv1.File_switchboard_gatewaytest_v1_gatewaytest_proto.Services().ByName("GatewayTestService")
	for _, b := range rt.Bindings() {
		path, ok := probePath(b.Path)
		if !ok {
			t.Fatalf("%s: not read", b.Path)
		}
		want := serve(Handler(rt.Mux()), b.Method, path)
		got := serve(Handler(rt), b.Method, path)
		if got == "" || got != want {
			t.Errorf("%s %s: the router called %q, the whole mux %q", b.Method, path, got, want)
			continue
		}
		// The binding's own method, unless a later route takes its path.
		if path != "/test/v1/companies/1/things/1" || b.Method != http.MethodGet {
			m := sd.Methods().ByName(protoreflect.Name(got[strings.LastIndexByte(got, '/')+1:]))
			rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
			if _, p, _ := ruleBinding(rule); p != b.Path {
				t.Errorf("%s %s reached %s, of %s", b.Method, b.Path, got, p)
			}
		}
	}
	if got := serve(Handler(rt), http.MethodGet, "/test/v1/companies/1/things/kinds"); got != "/"+service+"/ListThingKinds" {
		t.Errorf("the literal route lost: %s", got)
	}
}

// TestRouterTellsTheRecordItsMethod: a request the Router places reaches
// its RPC with the request's record naming that RPC (what a
// key_before_body method's body error needs, deferBodyError), though the
// route's handlers were registered without recordMethod; one the whole
// mux serves is told by recordMethod, as before.
func TestRouterTellsTheRecordItsMethod(t *testing.T) {
	var called, recorded string
	record := func(ctx context.Context, method string, _, _ any, _ *grpc.ClientConn, _ grpc.UnaryInvoker, _ ...grpc.CallOption) error {
		called, recorded = method, ""
		if rec, _ := ctx.Value(sentKey{}).(*sentRecord); rec != nil {
			recorded = rec.method
		}
		return status.Error(codes.NotFound, "recorded")
	}
	conn, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(record))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	rt := NewRouter()
	if err := rt.RegisterService("switchboard.gatewaytest.v1.GatewayTestService", func(mux *runtime.ServeMux) error {
		return gatewaytestv1.RegisterGatewayTestServiceHandler(context.Background(), mux, conn)
	}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"router", Handler(rt)}, {"whole mux", Handler(rt.Mux())}} {
		n := 0
		for _, b := range rt.Bindings() {
			path, _ := probePath(b.Path)
			for _, body := range []string{"{}", "[]"} {
				called = ""
				h.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(b.Method, path, strings.NewReader(body)))
				if called != "" {
					break
				}
			}
			if called == "" {
				continue
			}
			n++
			if recorded != called {
				t.Errorf("%s: %s %s called %s with the record's method %q", h.name, b.Method, path, called, recorded)
			}
		}
		if n < 10 {
			t.Fatalf("%s: %d calls", h.name, n)
		}
	}
}
