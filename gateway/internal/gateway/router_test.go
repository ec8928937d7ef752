package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
)

// TestRouterPicksTheMuxRoute: for every route of the gateway and paths
// around it (each variable given "1" and every literal other routes have
// at its place, each literal changed, a "**" given zero to two segments,
// every method), the router's index hands the request to the same route
// the whole ServeMux picks, with the same path parameters, and a request no
// route takes is the mux's own 404. The routes' middleware answers the
// pattern instead of calling the service.
func TestRouterPicksTheMuxRoute(t *testing.T) {
	record := func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
			p, _ := runtime.HTTPPattern(r.Context())
			keys := make([]string, 0, len(params))
			for k, v := range params {
				keys = append(keys, k+"="+v)
			}
			slices.Sort(keys)
			_, _ = fmt.Fprintf(w, "%s %s %v", r.Method, p.String(), keys)
		}
	}
	g, err := newGateway(context.Background(), Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), record)
	require.NoError(t, err)
	t.Cleanup(g.Close)
	bindings := g.router.Bindings()
	require.Greater(t, len(bindings), 150)
	require.Empty(t, g.router.Unindexed(), "every method's routes are in the index")
	require.Empty(t, g.router.Shared(), "every service's routes have a ServeMux each")

	// The literals each position holds in some route.
	literals := map[int]map[string]bool{}
	for _, b := range bindings {
		for i, seg := range strings.Split(b.Path[1:], "/") {
			if !strings.ContainsAny(seg, "{*") {
				if literals[i] == nil {
					literals[i] = map[string]bool{}
				}
				literals[i][seg] = true
			}
		}
	}
	paths := map[string]bool{"/": true, "/v2": true, "/v2/companies": true, "/nothing/here": true}
	for _, b := range bindings {
		segs := strings.Split(b.Path[1:], "/")
		base := make([]string, len(segs))
		tail := false
		for i, seg := range segs {
			switch {
			case strings.Contains(seg, "**"):
				tail = true
				base = base[:i]
			case strings.ContainsAny(seg, "{*"):
				base[i] = "1"
			default:
				base[i] = seg
			}
		}
		join := func(s []string) string { return "/" + strings.Join(s, "/") }
		paths[join(base)] = true
		if tail {
			paths[join(append(slices.Clone(base), "a"))] = true
			paths[join(append(slices.Clone(base), "a", "b"))] = true
		} else {
			paths[join(append(slices.Clone(base), "extra"))] = true
			if len(base) > 1 {
				paths[join(base[:len(base)-1])] = true
			}
		}
		for i, seg := range base {
			alt := slices.Clone(base)
			if strings.ContainsAny(segs[i], "{*") {
				for lit := range literals[i] {
					alt[i] = lit
					paths[join(alt)] = true
				}
			} else {
				alt[i] = seg + "x"
				paths[join(alt)] = true
			}
		}
	}
	serve := func(h http.Handler, method, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code, rec.Body.String()
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	matched := 0
	for path := range paths {
		for _, method := range methods {
			wantCode, want := serve(g.router.Mux(), method, path)
			gotCode, got := serve(g.router, method, path)
			if gotCode != wantCode || got != want {
				t.Errorf("%s %s: the router answered %d %q, the mux %d %q", method, path, gotCode, got, wantCode, want)
			}
			if wantCode == http.StatusOK {
				matched++
			}
		}
	}
	t.Logf("%d paths, %d requests matched a route", len(paths), matched)
	require.Greater(t, matched, len(bindings))
}
