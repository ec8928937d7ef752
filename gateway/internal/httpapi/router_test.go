package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
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
