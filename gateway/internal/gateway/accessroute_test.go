package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"

	identityv1 "switchboard.dev/proto/switchboard/identity/v1"
)

// TestRequestsCountedByRoute: the request counter names the route each
// request took, as the access log learns it through the context
// httpapi.HandlerWithContext gives the request (routeHolder): the path
// pattern of a direct read and of the same read left to its generated
// handler (a query string), "other" for a route calling no service, and
// "unmatched" for a path no route has. Without the holder in the
// request's context every request would count as "unmatched".
func TestRequestsCountedByRoute(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	identityv1.RegisterIdentityServiceServer(gs, cardServer{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	g, err := New(context.Background(), Config{IdentityAddr: lis.Addr().String()}, slog.New(slog.NewJSONHandler(io.Discard, nil)), AccessLogTo(io.Discard, "gateway"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	for _, c := range []struct{ path, labels string }{
		{"/v2/companies/5", "code=200,method=GET,route=/v2/companies/{company_id}"},
		{"/v2/companies/5?x=1", "code=200,method=GET,route=/v2/companies/{company_id}"},
		{"/healthz", "code=200,method=GET,route=other"},
		{"/v2/nowhere/at/all", "code=404,method=GET,route=unmatched"},
	} {
		before := requestCounts(t)
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		r.Header.Set("X-Api-Key", "sk_test_0123456789abcdef")
		g.ServeHTTP(httptest.NewRecorder(), r)
		if got := countsAdded(before, requestCounts(t)); len(got) != 1 || got[c.labels] != 1 {
			t.Errorf("GET %s counted %v, want %s", c.path, got, c.labels)
		}
	}
}
